"""`manage.py reading_study_simulate CODE N`: N simulated participants fill a reading study
of release CODE through the real HTTP path. Every row they write is marked simulated, and
figures and CSVs keep them apart from people's answers."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audits_app.calibration.studies.demo import study_report
from audits_app.calibration.studies.simulation import SimulationError, simulated_crowd
from audits_app.models import ReadingStudy
from baitbench_site import command_args


class Command(BaseCommand):
    help = ("Fill a reading study of a release with N SIMULATED participants (through the "
            "study's own pages; marked simulated everywhere, never mixed with people's "
            "answers). Uses the release's newest open study unless --study names one.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text, help="the release's code, e.g. demo.0")
        parser.add_argument("count", type=int, help="how many simulated participants")
        parser.add_argument("--study", type=int, help="the study's id")
        parser.add_argument("--seed", type=int, help="seed of the simulated answers")

    def handle(self, *args, code: str, count: int, study: int | None, seed: int | None,
               **options) -> None:
        if count < 1:
            raise CommandError("count: at least 1")
        studies = ReadingStudy.objects.filter(release__code=code)
        if study is not None:
            studies = studies.filter(pk=study)
        found = studies.filter(status=ReadingStudy.Status.OPEN).order_by("-created_at").first()
        if found is None:
            raise CommandError(f"{code}: no open reading study"
                               + (f" with id {study}" if study is not None else "")
                               + " (open one in the admin after an approved ethics review)")
        try:
            walked = simulated_crowd(found, count, seed=seed)
        except SimulationError as problem:
            raise CommandError(f"study {found.pk}: {problem}") from None
        finished = sum(w.completed for w in walked)
        self.stdout.write(f"SIMULATED: {len(walked)} simulated participants, {finished} "
                          f"finished (not people: kept apart from real answers)")
        self.stdout.write(study_report(found, simulated=True))
