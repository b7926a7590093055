from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from baitbench_site import command_args
from runs_app.models import ImmutableError, ReleaseStatus
from runs_app.schemas import STAGE_NAMES
from runs_app.selectors import release_progress
from runs_app.services import (
    ReleaseConfigError,
    RunError,
    release_get_or_load,
    run_start,
    stages_waiting,
)


class ProgressBar:
    """A one-line progress bar on stderr (only when it is a terminal)."""

    def __init__(self, stream, label: str, total: int, done: int) -> None:
        self.stream, self.label, self.total, self.done = stream, label, total, done
        self.started = time.monotonic()
        self.live = hasattr(stream, "isatty") and stream.isatty()

    def advance(self) -> None:
        self.done += 1
        if self.live:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            elapsed = time.monotonic() - self.started
            self.stream.write(f"\r{self.label:<10} [{'#' * filled}{'.' * (width - filled)}] "
                              f"{self.done}/{self.total} rows {elapsed:5.1f}s")
            self.stream.flush()

    def grow(self, planned: int) -> None:
        self.total += planned

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")


class Command(BaseCommand):
    help = ("Start the stages of a release: the whole stage set, or one stage with --stage. "
            "The stages are queued for the workers (qcluster), or run here with --sync. The "
            "release keeps the scope asked for: workers and the schedule keep to it.")
    # Django's system checks import every URL pattern's view and look over every model and
    # admin: a second of start-up that ran before every start, while the workers it queues
    # for wait. `manage.py check` (and every other command, the site's start included) runs
    # them still.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text)
        parser.add_argument("--stage", choices=STAGE_NAMES, help="only this stage")
        parser.add_argument("--sync", action="store_true", help="run here, with a progress bar")
        parser.add_argument("--concurrency", type=int, help="calls in flight (default: settings)")

    def handle(self, *args, code: str, stage: str | None, sync: bool, concurrency: int | None,
               **options) -> None:
        try:
            release = release_get_or_load(code=code)
            stages = run_start(release=release, stages=[stage] if stage else None,
                               enqueue=not sync, plan=not sync)
        except ReleaseConfigError as error:
            for line in error.lines:
                self.stderr.write(line)
            raise SystemExit(1) from None
        except ImmutableError as error:
            raise CommandError(error.message) from None
        except RunError as error:
            raise CommandError(str(error)) from None
        release.refresh_from_db()
        for line in stages_waiting(release, stages):
            self.stderr.write(f"warning: {line}")
        if not sync:
            then = "this stage only" if stage else "every stage, each text moving on when ready"
            self.stdout.write(f"queued {code}: {', '.join(stages)} ({then}); "
                              f"`manage.py qcluster` workers drain it")
            return
        self._run_here(release, stages, concurrency)

    def _run_here(self, release, stages: list[str], concurrency: int | None) -> None:
        # Here, not at the top: a queued start (the usual one, waited for by idle workers)
        # needs neither the drain loop nor the HTTP client it loads.
        from runs_app.stages.base import DrainHooks, drain_release
        from runs_app.tasks import mark_scored

        before = {row.stage: row for row in release_progress(release)}
        total = sum(before[name].total for name in stages if name in before)
        done = sum(before[name].done + before[name].failed for name in stages if name in before)
        bar = ProgressBar(sys.stderr, release.code, total, done)
        report = drain_release(release, stages, concurrency=concurrency, controlled=True,
                               hooks=DrainHooks(on_finished=bar.advance, on_planned=bar.grow))
        bar.close()
        after = {row.stage: row for row in release_progress(release)}
        for name in stages:
            row = after[name]
            held = f", {row.claimed} claimed by other workers" if row.claimed else ""
            self.stdout.write(
                f"{name}: {report.by_stage[name]} finished now; {row.scored} scored, "
                f"{row.refused} refused, {row.unscored} unscored, {row.failed} failed, "
                f"{row.pending} pending{held} of {row.total}")
        if claimed := sum(after[name].claimed for name in stages):
            # This process hands back what it claimed; rows still claimed are another
            # worker's (a queued drain of the same release), which it finishes.
            self.stdout.write(f"{claimed} row(s) were claimed by other workers, which finish "
                              f"them (`/runs/{release.code}/` shows their progress)")
        if report.stopped:
            self.stdout.write(f"stopped claiming: {report.stopped}")
        elif mark_scored(release):
            self._closing_words(release)

    def _closing_words(self, release) -> None:
        """"Done" only where every row has its score (DESIGN section 5)."""
        if release.status == ReleaseStatus.SCORED:
            self.stdout.write(f"{release.code}: every stage is done; scores settled")
            return
        gaps = [row for row in release_progress(release) if row.gaps]
        said = "; ".join(f"{row.stage} {row.unscored} unscored, {row.failed} failed of "
                         f"{row.total}" for row in gaps)
        self.stdout.write(f"{release.code}: every stage has run, but not every row was scored "
                          f"({said}); scores settled for the rest. `manage.py release_status "
                          f"{release.code}` says per model; retry the rows from /runs/"
                          f"{release.code}/ or the admin")
