"""The method's own checks on the pages: the calibration figure near the top of a release's
page, its reader's trial and its contamination check in the methods section, their downloads,
and the staff page of reader trials.

`release_detail` takes `checks_context` whole, so the release page needs one line to show
them all (templates `_calibration.html` and `_method_checks.html`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from audits_app import csv_files, query_params
from audits_app.calibration.figures import (
    CALIBRATION_PENDING,
    CSV_COLUMNS,
    calibration_csv_rows,
    calibration_svg,
    calibration_table,
    snapshot_calibration,
    unused_readers_note,
)
from audits_app.calibration.reader_trial import CRITERIA
from audits_app.calibration.selectors import human_readers_unused
from audits_app.calibration.studies.calibration import release_study_figures, release_weighted
from audits_app.calibration.trial_report import (
    CRITERION_NAMES,
    reader_trials,
    release_contamination,
    trial_for_reader,
    trial_table,
)
from audits_app.pages import viewer as public
from audits_app.publication.held_cells import Holder
from audits_app.publication.snapshot_model import ReleaseSnapshot
from baitbench_site.methods import require_safe


def checks_context(published: public.PublishedRelease, user) -> dict[str, Any]:
    snapshot = published.snapshot
    names = public.model_names(snapshot)
    summary = snapshot_calibration(snapshot)
    return {
        "calibration_figure": None if summary is None else {
            "svg": calibration_svg(summary, names, published.code),
            "table": calibration_table(summary, names),
            "readers": summary.get("readers"), "level": summary.get("level"),
        },
        "calibration_pending": calibration_note(published),
        "reading_studies": release_study_figures(
            published.release, names, held=any(Holder.READING_STUDIES in holders
                                               for holders in published.figures_held.values())),
        "population_weights": release_weighted(published.release, names),
        "reader_trial": release_reader_trial(snapshot),
        "contamination": release_contamination(published.release,
                                               staff=public.is_staff(user)),
        "criterion_names": [(name, CRITERION_NAMES[name]) for name in CRITERIA],
    }


def unused_human_readers(published: public.PublishedRelease) -> dict[str, Any] | None:
    """The snapshot's `human_readers`: the human reader results the calibration figure uses
    none of. A snapshot frozen before snapshots kept them has no such key: then the rows say,
    unchanged since publication (the database refuses changes under a published release)."""
    snapshot = published.snapshot
    if snapshot.calibration_summary() is not None:
        return None
    if "human_readers" in snapshot.model_fields_set:
        return snapshot.human_readers
    return human_readers_unused(published.release)


def calibration_note(published: public.PublishedRelease) -> str:
    """What stands where the figure would, on the page and in the API: results published
    before per-model figures were kept (their summary), human reader results the figure
    cannot use (how many, and why: never that none exist), or that none exist yet."""
    snapshot = published.snapshot
    if snapshot.calibration_summary() is not None:
        return ("Human reader results exist for this release, but it was published before "
                "the per-model calibration figure was kept; its summary is in the methods.")
    unused = unused_human_readers(published)
    if unused:
        return unused_readers_note(unused, public.model_names(snapshot))
    return CALIBRATION_PENDING


def release_reader_trial(snapshot: ReleaseSnapshot) -> dict[str, Any] | None:
    """The trial of the release's reader: as frozen at publication, else the newest trial
    run since (marked as later than the release)."""
    if snapshot.reader_trial:
        return snapshot.reader_trial
    config, language = snapshot.release.config, snapshot.release.language
    if not config.get("reader") or not language:
        return None
    found = trial_for_reader(config["reader"], language)
    return None if found is None else {**found, "after_publication": True}


def _calibration_or_404(request: HttpRequest, code: str):
    published = public.published_release_get(code, request.user)
    summary = snapshot_calibration(published.snapshot)
    if summary is None:
        raise Http404("This release has no calibration against human readers.")
    return published, summary


@require_safe
@query_params.reads()
def release_calibration_svg(request: HttpRequest, code: str) -> HttpResponse:
    published, summary = _calibration_or_404(request, code)
    svg = calibration_svg(summary, public.model_names(published.snapshot), code)
    response = HttpResponse(svg, content_type="image/svg+xml")
    response["Content-Disposition"] = f'attachment; filename="{code}-calibration.svg"'
    return response


@require_safe
@query_params.reads()
def release_calibration_csv(request: HttpRequest, code: str) -> HttpResponse:
    published, summary = _calibration_or_404(request, code)
    rows = calibration_csv_rows(summary, public.model_names(published.snapshot))
    response = HttpResponse(csv_files.csv_text(rows, CSV_COLUMNS),
                            content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{code}-calibration.csv"'
    return response


@require_safe
@staff_member_required
def reader_trials_page(request: HttpRequest) -> HttpResponse:
    trials = [{"trial": trial, "rows": trial_table(trial.report),
               "preferred": trial.report.get("preferred") or [],
               "thresholds": trial.report.get("thresholds") or {},
               "scenarios": trial.report.get("scenarios") or []}
              for trial in reader_trials()]
    return render(request, "review/reader_trials.html", {
        "trials": trials, "criterion_names": [(n, CRITERION_NAMES[n]) for n in CRITERIA]})
