from __future__ import annotations

from django.core.management.base import BaseCommand

from baitbench_site.command_args import shown
from scenarios_app.files import expand_paths, summarise
from scenarios_app.services import scenarios_validate


class Command(BaseCommand):
    help = ("Check scenario files against the format's rules, without a database (one line per "
            "problem). `import_scenarios --dry-run` also checks them against the database.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+",
                            help="scenario files, zips of them, or folders of *.yaml files")

    def handle(self, *args, paths: list[str], **options) -> None:
        problems = scenarios_validate(paths=paths)
        if problems:
            for line in map(shown, summarise(problems)):
                self.stderr.write(line)
            raise SystemExit(1)
        count = len(expand_paths(paths)[0])
        self.stdout.write(f"all {count} file(s) are valid")
        self.stdout.write("not checked: slugs and canaries already in the database "
                          "(import_scenarios --dry-run checks those)")
