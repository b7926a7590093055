from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from baitbench_site.command_args import shown
from scenarios_app.files import summarise
from scenarios_app.services import scenarios_import


class Command(BaseCommand):
    help = "Import scenario files or folders, all or nothing (one line per problem on failure)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+",
                            help="scenario files, zips of them, or folders of *.yaml files")
        parser.add_argument(
            "--confirm-canary-change", action="store_true",
            help="allow a file to replace the canary of a scenario already in the database",
        )
        parser.add_argument(
            "--dry-run", action="store_true",
            help="check the files and their slugs and canaries against the database; write "
                 "nothing",
        )

    def handle(self, *args, paths: list[str], confirm_canary_change: bool, dry_run: bool,
               **options) -> None:
        try:
            result = scenarios_import(paths=paths, dry_run=dry_run,
                                      confirm_canary_change=confirm_canary_change)
        except DatabaseError as error:
            # The import is one transaction: nothing was written. No traceback, and no
            # DATABASE_URL in the line (it may hold a password).
            self.stderr.write(f"nothing imported: database error: {error}".rstrip())
            self.stderr.write("is DATABASE_URL right, and has `manage.py migrate` run? "
                              "(validate_scenarios checks files without a database)")
            raise SystemExit(1) from None
        if not result.ok:
            for line in map(shown, summarise(result.problems)):
                self.stderr.write(line)
            self.stderr.write(f"nothing imported: {len(result.problems)} problem(s)")
            raise SystemExit(1)
        if dry_run:
            self.stdout.write("no problems: the files would import (nothing was written)")
            return
        self.stdout.write(
            f"imported: {len(result.created)} created, {len(result.updated)} updated, "
            f"{len(result.unchanged)} unchanged"
        )
