from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from baitbench_site import command_args
from runs_app.models import Release
from runs_app.selectors import (
    format_eta,
    release_progress,
    release_row_counts,
    release_row_problems,
    served_model_warnings,
)


class Command(BaseCommand):
    help = ("Print per-stage progress of a release: rows scored, refused, unscored, failed, "
            "pending and claimed, tokens, cost and time left; then, per writer, juror and "
            "reader, the rows that ended unscored or failed; then why it is not publishable.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text)

    def handle(self, *args, code: str, **options) -> None:
        release = Release.objects.filter(code=code).first()
        if release is None:
            raise CommandError(f"no release {code!r} in the database")
        self.stdout.write(f"release {release.code} ({release.get_status_display()}), "
                          f"config {release.config_hash[:12]}")
        self.stdout.write(f"{'stage':<10} {'scored':>7} {'refused':>8} {'unscored':>9} "
                          f"{'failed':>7} {'pending':>8} {'claimed':>8} {'tokens':>10} "
                          f"{'cost $':>9} {'time left':>10}")
        for row in release_progress(release):
            self.stdout.write(
                f"{row.stage:<10} {row.scored:>7} {row.refused:>8} {row.unscored:>9} "
                f"{row.failed:>7} {row.pending:>8} {row.claimed:>8} {row.tokens:>10} "
                f"{row.cost_usd:>9.4f} {format_eta(row.eta_seconds):>10}")
        gaps = [counts for counts in release_row_counts(release)
                if counts.unscored or counts.failed]
        if gaps:
            self.stdout.write("unscored or failed, per model:")
            for counts in gaps:
                self.stdout.write(f"  {counts.stage}, {counts.role} {counts.model}: "
                                  f"{counts.describe()}")
        for warning in served_model_warnings(release):
            self.stdout.write(f"warning: {warning}")
        problems = release_row_problems(release)
        if problems:
            self.stdout.write("not publishable:")
            for problem in problems:
                self.stdout.write(f"  {problem}")
        else:
            self.stdout.write("every row says what it is: nothing pending, failed or above "
                              "the unscored limit (the publish page adds the spot-check gate)")
