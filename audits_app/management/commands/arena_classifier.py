"""`manage.py arena_classifier CODE`: measure how recognisable a release's writers are."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audits_app.arena.models import RecognisabilityRun
from audits_app.arena.selectors import no_pairs_reason
from audits_app.arena.services import ArenaError, arena_prepare
from baitbench_site import command_args
from runs_app.models import Release


class Command(BaseCommand):
    help = ("Train the arena's writer classifier on a published release's texts (cross-validated "
            "by scenario), store its accuracy overall and per model, and build the arena's "
            "pairs, flagging those it recognises. A stored result is kept, never recomputed.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text, help="a published release, e.g. demo.0")

    def handle(self, *args, code: str, **options) -> None:
        release = Release.objects.filter(code=code).first()
        if release is None:
            raise CommandError(f"{code}: no such release")
        existed = RecognisabilityRun.objects.filter(release=release).exists()
        try:
            run = arena_prepare(release=release)
        except ArenaError as error:
            raise CommandError(str(error)) from error
        summary = run.summary
        if existed:
            self.stdout.write(f"{code}: kept the result computed {run.computed_at:%Y-%m-%d %H:%M}"
                              f" UTC (a stored result is never recomputed)")
        self.stdout.write(
            f"{code}: writer recognised for {summary['accuracy']:.2f} of {summary['texts']} texts "
            f"[{summary['low']:.2f}, {summary['high']:.2f}]; chance {summary['chance']:.2f}, "
            f"majority {summary['majority']:.2f} ({run.method['validation']})")
        for row in summary["per_writer"]:
            self.stdout.write(f"  {row['writer']:<32} {row['accuracy']:.2f} "
                              f"[{row['low']:.2f}, {row['high']:.2f}]  texts {row['texts']:>4}  "
                              f"mean probability {row['mean_probability']:.2f}")
        pairs = release.arena_pairs.count()
        reason = no_pairs_reason(release) if not pairs else ""
        self.stdout.write(f"{code}: {pairs} pairs" + (f": none, because {reason}" if reason
                                                       else ""))
