from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audits_app.calibration.reader_trial import CRITERIA
from audits_app.calibration.trial_report import reader_trial_report, trial_progress, trial_table
from runs_app.providers.models_list import ModelsListError, models_list
from runs_app.providers.pool import FIXTURE_PREFIX
from runs_app.trial_services import TrialError, reader_trial_prepare, reader_trial_read

SHORT = {"knowledge": "knowledge", "retest": "retest", "trust": "trust", "dont_know": "dont-know"}


class Command(BaseCommand):
    help = ("Try candidate reader models: each reads the control texts of the language's public "
            "scenarios, and nothing, with every reading position, twice. Prints per candidate "
            "the four criteria with intervals, valid replies, latency and cost, and what it "
            "fails. Runs in-process; finished readings are never asked again, so running it "
            "again resumes (and a new candidate reads alone).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("models", nargs="+", metavar="MODEL", help="candidate model ids")
        parser.add_argument("--language", required=True, help="en or nl")
        parser.add_argument("--panel", default="v1")
        parser.add_argument("--scoring-version", default="v1")
        parser.add_argument("--scenario", action="append", dest="scenarios", metavar="SLUG",
                            help="only these scenarios (repeatable; default: all public ones)")
        parser.add_argument("--concurrency", type=int, help="calls in flight (default: settings)")

    def handle(self, *args, models: list[str], language: str, panel: str,
               scoring_version: str, scenarios: list[str] | None, concurrency: int | None,
               **options) -> None:
        try:
            trial = reader_trial_prepare(language=language, candidates=models, panel=panel,
                                         scoring_version=scoring_version, scenarios=scenarios)
        except TrialError as error:
            for line in error.lines:
                self.stderr.write(f"error: {line}")
            raise CommandError("the trial was not started") from None
        self._fresh_models_list(models)
        drained = reader_trial_read(trial=trial, concurrency=concurrency)
        progress = trial_progress(trial)
        self.stdout.write(f"reader trial {trial.pk} ({language}, panel {panel}, "
                          f"{trial.scoring_version.split('@')[0]}): {drained.finished} readings "
                          f"made now; {progress['done']} done, {progress['failed']} failed, "
                          f"{progress['pending']} not finished of {progress['total']}")
        report = reader_trial_report(trial=trial)
        self._table(trial_table(report, list(dict.fromkeys(models))))
        preferred = [m for m in report["preferred"] if m in models]
        self.stdout.write(f"\npassing, in order of preference: {', '.join(preferred) or 'none'}")
        if progress["pending"]:
            self.stdout.write(self.style.WARNING(
                "some readings are held by another worker or were cut short: run again "
                "(claims expire after BAITBENCH_LEASE_SECONDS)"))

    def _fresh_models_list(self, models: list[str]) -> None:
        """The list the readings' requests are built by (a candidate that can reason gets
        reasoning room: `runs_app.stages.trial`) and their costs estimated from; fixture
        candidates are never on it."""
        if all(model.startswith(FIXTURE_PREFIX) for model in models):
            return
        try:
            models_list()
        except ModelsListError as error:
            self.stderr.write(self.style.WARNING(
                f"models list: {error}; the cached list is used, and a candidate on none is "
                f"asked as one that does not reason"))

    def _table(self, rows: list[dict]) -> None:
        head = f"{'candidate':<28}" + "".join(f"{SHORT[c]:>22}" for c in CRITERIA)
        self.stdout.write(head + f"{'valid':>7}{'ms/read':>9}{'$/read':>10}  verdict")
        for row in rows:
            cells = "".join(f"{_figure(row[c]):>22}" for c in CRITERIA)
            verdict = "passes" if row["passed"] else "fails " + ", ".join(
                f["criterion"] for f in row["failed"])
            self.stdout.write(
                f"{row['candidate']:<28}{cells}{_num(row['valid_share'], 2):>7}"
                f"{_num(row['latency_ms_median'], 0):>9}"
                f"{_num(row['cost_usd_per_reading'], 6):>10}  {verdict}")
            for failure in row["failed"]:
                self.stdout.write(f"    - {failure['reason']}")


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _figure(figure: dict) -> str:
    if figure.get("point") is None:
        return "-"
    return f"{figure['point']:.2f} [{_num(figure.get('low'), 2)}, {_num(figure.get('high'), 2)}]"
