from __future__ import annotations

from django.core.management.base import BaseCommand

from scenarios_app.services import scenarios_import


class Command(BaseCommand):
    help = "Import scenario files or folders, all or nothing (one line per problem on failure)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", help="scenario files or folders of *.yaml files")

    def handle(self, *args, paths: list[str], **options) -> None:
        result = scenarios_import(paths=paths)
        if not result.ok:
            for line in result.problems:
                self.stderr.write(line)
            self.stderr.write(f"nothing imported: {len(result.problems)} problem(s)")
            raise SystemExit(1)
        self.stdout.write(
            f"imported: {len(result.created)} created, {len(result.updated)} updated, "
            f"{len(result.unchanged)} unchanged"
        )
