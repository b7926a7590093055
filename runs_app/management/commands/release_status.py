from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from runs_app.models import Release
from runs_app.selectors import format_eta, release_progress


class Command(BaseCommand):
    help = "Print per-stage progress of a release: done, pending, failed, tokens, cost, time left."

    def add_arguments(self, parser) -> None:
        parser.add_argument("code")

    def handle(self, *args, code: str, **options) -> None:
        release = Release.objects.filter(code=code).first()
        if release is None:
            raise CommandError(f"no release {code!r} in the database")
        self.stdout.write(f"release {release.code} ({release.get_status_display()}), "
                          f"config {release.config_hash[:12]}")
        header = (f"{'stage':<10} {'done':>6} {'pending':>8} {'claimed':>8} {'failed':>7} "
                  f"{'tokens':>10} {'cost $':>9} {'time left':>10}")
        self.stdout.write(header)
        for row in release_progress(release):
            tokens = row.prompt_tokens + row.completion_tokens + row.reasoning_tokens
            self.stdout.write(
                f"{row.stage:<10} {row.done:>6} {row.pending:>8} {row.claimed:>8} "
                f"{row.failed:>7} {tokens:>10} {row.cost_usd:>9.4f} "
                f"{format_eta(row.eta_seconds):>10}"
            )
