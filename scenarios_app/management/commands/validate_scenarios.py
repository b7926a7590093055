from __future__ import annotations

from django.core.management.base import BaseCommand

from scenarios_app.services import scenarios_import


class Command(BaseCommand):
    help = "Check scenario files without writing anything (one line per problem)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", help="scenario files or folders of *.yaml files")

    def handle(self, *args, paths: list[str], **options) -> None:
        result = scenarios_import(paths=paths, dry_run=True)
        if not result.ok:
            for line in result.problems:
                self.stderr.write(line)
            raise SystemExit(1)
        self.stdout.write("all files are valid")
