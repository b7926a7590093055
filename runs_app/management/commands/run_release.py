from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from runs_app.models import ImmutableError
from runs_app.selectors import stage_progress
from runs_app.services import ReleaseConfigError, release_freeze, release_get_or_load
from runs_app.stages import STAGE_ORDER, available_stages, get_stage
from runs_app.stages.base import drain
from runs_app.tasks import enqueue_stage, ensure_schedule, mark_scored


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
                              f"{self.done}/{self.total} {elapsed:5.1f}s")
            self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")


class Command(BaseCommand):
    help = "Enqueue (or with --sync run in-process) the stages of a release, in order."

    def add_arguments(self, parser) -> None:
        parser.add_argument("code")
        parser.add_argument("--stage", choices=STAGE_ORDER, help="only this stage")
        parser.add_argument("--sync", action="store_true", help="run here, with a progress bar")
        parser.add_argument("--concurrency", type=int, help="calls in flight (default: settings)")

    def handle(self, *args, code: str, stage: str | None, sync: bool, concurrency: int | None,
               **options) -> None:
        try:
            release = release_freeze(release=release_get_or_load(code=code))
        except ReleaseConfigError as error:
            for line in error.lines:
                self.stderr.write(line)
            raise SystemExit(1) from None
        except ImmutableError as error:
            raise CommandError(error.message) from None
        if stage and stage not in available_stages():
            raise CommandError(f"stage {stage!r} is not built yet; stages: "
                               f"{', '.join(available_stages())}")
        stages = [stage] if stage else available_stages()
        if not sync:
            ensure_schedule()
            # One stage asked for is that stage alone: the chain would go on to pay for the rest.
            enqueue_stage(code, stages[0], chain=not stage)
            then = "only this stage" if stage else "the chain continues in the queue"
            self.stdout.write(f"enqueued {code}: {stages[0]} ({then})")
            return
        for name in stages:
            self._run_stage(release, name, concurrency)
        if not stage:
            mark_scored(release)

    def _run_stage(self, release, name: str, concurrency: int | None) -> None:
        stage = get_stage(name)
        stage.plan(release)
        before = stage_progress(release, name)
        bar = ProgressBar(sys.stderr, name, before.total, before.done + before.failed)
        report = drain(stage, release, concurrency=concurrency, on_finished=bar.advance)
        bar.close()
        after = stage_progress(release, name)
        self.stdout.write(f"{name}: {report.finished} finished now; {after.done} done, "
                          f"{after.failed} failed, {after.pending} pending of {after.total}")
