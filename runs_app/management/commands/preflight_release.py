from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from baitbench_site import command_args
from runs_app.preflight import preflight_models_list, release_preflight, report_lines
from runs_app.services import ReleaseConfigError, release_get_or_load


class Command(BaseCommand):
    help = ("Check a release before it runs: every model on OpenRouter's models list, its "
            "context and output limits, its prices, the reader-family rule, and a cost "
            "estimate per stage. Calls nothing but the models list (cached; --refresh fetches "
            "it again). Exits 1 when a check fails.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text)
        parser.add_argument("--refresh", action="store_true",
                            help="fetch the models list again, whatever the cache holds")
        parser.add_argument("--models-file", type=Path,
                            help="read the models list from this JSON file (OpenRouter's "
                                 "answer as saved) instead of fetching it")

    def handle(self, *args, code: str, refresh: bool, models_file: Path | None,
               **options) -> None:
        try:
            release = release_get_or_load(code=code)
        except ReleaseConfigError as error:
            # The release file breaks a rule of the configuration (the reader-family rule
            # among them): each is a failed check.
            for line in error.lines:
                self.stdout.write(f"  FAIL  {line}")
            raise SystemExit(1) from None
        models, error, warnings = preflight_models_list(release, refresh=refresh,
                                                        models_file=models_file)
        preflight = release_preflight(release, models, listing_error=error, warnings=warnings)
        for line in report_lines(preflight):
            self.stdout.write(line)
        if not preflight.ok:
            raise SystemExit(1)
