"""Reads and the one write behind the reader trial's pages and API (DESIGN section 6).

`reader_trial_report` turns a trial's finished readings into the per-candidate report
(`calibration.reader_trial`) and keeps it on the trial; pages and the API read that stored
report, and a release's methods section shows the trial of its own reader.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from audits_app.calibration.reader_trial import CRITERIA, Reading, trial_report
from runs_app.models import (
    ContaminationCheck,
    ReaderTrial,
    Release,
    ReplyOutcome,
    TrialReading,
    WorkStatus,
)
from runs_app.readers import load_panel
from scenarios_app.models import Visibility

CRITERION_NAMES = {
    "knowledge": "Knowledge questions right after the control text",
    "retest": "Same answers on a second reading",
    "trust": "Moves with trust in news media (high minus low)",
    "dont_know": "\"Don't know\" with no text",
}


def _readings(trial: ReaderTrial) -> list[Reading]:
    rows = TrialReading.objects.filter(
        trial=trial, status__in=[WorkStatus.DONE, WorkStatus.FAILED],
    ).values_list("candidate", "scenario_version__scenario__slug", "stimulus", "position",
                  "reading", "status", "outcome", "attitude", "knowledge", "latency_ms",
                  "cost_usd")
    return [
        Reading(candidate=candidate, scenario=slug, stimulus=stimulus, position=position,
                reading=reading, scored=outcome == ReplyOutcome.SCORED,
                attitude=tuple(attitude or ()), knowledge=tuple(knowledge or ()),
                latency_ms=latency_ms, cost_usd=cost, failed=status == WorkStatus.FAILED)
        for (candidate, slug, stimulus, position, reading, status, outcome, attitude,
             knowledge, latency_ms, cost) in rows
    ]


def reader_trial_report(*, trial: ReaderTrial) -> dict[str, Any]:
    """Compute the report from the readings written so far and store it on the trial."""
    versions = list(trial.scenario_versions.select_related("scenario").order_by(
        "scenario__slug"))
    scenarios = [v.scenario.slug for v in versions]
    correct = {v.scenario.slug: [q["correct"] for q in v.content["knowledge_questions"]]
               for v in versions}
    panel = load_panel(trial.panel, trial.language)
    positions = [(p.id, p.traits.trust_in_media) for p in panel.positions]
    unfinished = dict(TrialReading.objects.filter(trial=trial).exclude(
        status__in=[WorkStatus.DONE, WorkStatus.FAILED]).values("candidate")
        .annotate(n=Count("pk")).values_list("candidate", "n"))
    report = trial_report(_readings(trial), list(trial.candidates), scenarios, correct,
                          positions, unfinished)
    report |= {"trial": trial.pk, "language": trial.language, "panel": trial.panel,
               "scoring_version": trial.scoring_version}
    trial.report, trial.reported_at = report, timezone.now()
    trial.save(update_fields=["report", "reported_at"])
    return report


def trial_table(report: dict[str, Any], candidates: list[str] | None = None
                ) -> list[dict[str, Any]]:
    """One row per candidate (those given, in that order; else all): the figures a table
    shows, the criteria failed with their reasons."""
    reports = report.get("candidates") or {}
    rows = []
    for candidate in candidates or list(reports):
        figures = reports.get(candidate)
        if figures is None:
            continue
        rows.append({"candidate": candidate, **{name: figures.get(name) or {}
                                                for name in CRITERIA},
                     "valid_share": figures.get("valid_share"),
                     "latency_ms_median": figures.get("latency_ms_median"),
                     "cost_usd_per_reading": figures.get("cost_usd_per_reading"),
                     "readings": figures.get("readings"), "passed": figures.get("passed"),
                     "failed": figures.get("failed") or [],
                     "criteria": [{"name": name, "label": CRITERION_NAMES[name],
                                   **(figures.get(name) or {})} for name in CRITERIA],
                     "per_position": figures.get("per_position") or []})
    return rows


def reader_trials() -> list[ReaderTrial]:
    """Trials with a report, newest first."""
    return list(ReaderTrial.objects.filter(reported_at__isnull=False).order_by("-reported_at"))


def trial_for_reader(model: str, language: str) -> dict[str, Any] | None:
    """The newest reported trial in which `model` was a candidate in `language`: its row and
    when and how it was run; None if the model was never trialled."""
    for trial in ReaderTrial.objects.filter(language=language, reported_at__isnull=False) \
            .order_by("-reported_at"):
        if model in (trial.report.get("candidates") or {}):
            return {"trial": trial.pk, "reported_at": trial.reported_at.isoformat(),
                    "language": language, "panel": trial.panel,
                    "scoring_version": trial.scoring_version,
                    "scenarios": trial.report.get("scenarios") or [],
                    "thresholds": trial.report.get("thresholds") or {},
                    "preferred": trial.report.get("preferred") or [],
                    "candidate_count": len(trial.report.get("candidates") or {}),
                    "row": trial_table(trial.report, [model])[0]}
    return None


def trial_progress(trial: ReaderTrial) -> dict[str, int]:
    return TrialReading.objects.filter(trial=trial).aggregate(
        total=Count("pk"), done=Count("pk", filter=Q(status=WorkStatus.DONE)),
        failed=Count("pk", filter=Q(status=WorkStatus.FAILED)),
        pending=Count("pk", filter=Q(status__in=[WorkStatus.PENDING, WorkStatus.CLAIMED])))


# ---------------------------------------------------------------------------------------
# The contamination check, as a release's page shows it
# ---------------------------------------------------------------------------------------

HELD_OUT_NOTE = "a held-out scenario (its content is not published)"


def release_contamination(release: Release, *, staff: bool) -> dict[str, Any] | None:
    """The release's contamination check: when it ran, what it covered, each finding, and the
    (model, scenario) pairs a canary marks as contaminated. A held-out scenario's findings
    are listed for everyone, without their scenario or evidence unless the viewer is staff.
    None when the release was never checked."""
    check = ContaminationCheck.objects.filter(release=release).first()
    if check is None or check.scanned_at is None:
        return None
    # Held out if the release pinned it held out or it is held out now: a curator making a
    # scenario public later does not publish what a release found on it while held out.
    pinned_public = {version.scenario_id: version.content.get("visibility") == Visibility.PUBLIC
                     for version in release.scenario_versions.all()}
    findings = []
    for finding in check.findings.select_related("scenario").order_by(
            "scenario__slug", "model", "kind", "source"):
        held_out = (finding.scenario.visibility != Visibility.PUBLIC
                    or not pinned_public.get(finding.scenario_id, False))
        hidden = held_out and not staff
        findings.append({
            "model": finding.model, "kind": finding.kind, "kind_label": finding.get_kind_display(),
            "scenario": None if hidden else finding.scenario.slug,
            "scenario_title": HELD_OUT_NOTE if hidden else finding.scenario.title,
            "held_out": held_out,
            "evidence": None if hidden else finding.evidence,
            "source": None if hidden else finding.source,
            "source_release": finding.source_release,
            "contaminated": finding.marks_contaminated,
        })
    contaminated = sorted({(f["model"], f["scenario"] or HELD_OUT_NOTE) for f in findings
                           if f["contaminated"]})
    return {"checked_at": check.scanned_at.isoformat(), "probes": check.probes.count(),
            "outputs_scanned": check.outputs_scanned, "findings": findings,
            "contaminated": [{"model": m, "scenario": s} for m, s in contaminated]}
