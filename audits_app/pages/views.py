"""Public pages: published releases, their leaderboards, scenarios and texts.

Every view reads the frozen snapshot through `audits_app.pages.viewer`, which has already removed
what an anonymous viewer may not see; each page costs a constant number of queries.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from statistics import fmean
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from audits_app import csv_files, query_params
from audits_app.calibration.studies.calibration import weighted_answer, weighted_csv_rows
from audits_app.leaderboard import labels, overview, tables
from audits_app.leaderboard.chart import chart_points, release_chart_svg, release_dot_plot_svg
from audits_app.leaderboard.measures import FIELD_LABELS, MAIN
from audits_app.pages import viewer as public
from audits_app.pages.method import checks_context
from audits_app.publication.held_cells import Holder, held_cells, withheld_holders
from audits_app.publication.snapshot_model import (
    ReferenceRow,
    ReleaseSnapshot,
    SnapshotPart,
    TextEntry,
)
from audits_app.templatetags.numbers import fixed
from baitbench_site.methods import require_safe
from runs_app.models import Release

TEXTS_PER_PAGE = 50
CALIBRATION_MISSING = "The panel is not calibrated against human readers."


@require_safe
@query_params.reads()
def release_list(request: HttpRequest) -> HttpResponse:
    """The front page: what BaitBench measures, the newest release's answer (its overview
    table and chart), then every published release."""
    releases = public.published_releases(request.user)  # newest first
    for newer, older in zip(releases, releases[1:], strict=False):
        newer["previous"] = older["code"]  # "compare with the release before"
    context: dict[str, Any] = {"releases": releases}
    if releases:
        context.update(_newest_answer(releases[0]))
    return render(request, "audits_app/release_list.html", context)


# The newest release's answer, kept per process under its code and snapshot hash: a
# publication never changes, and parsing a whole snapshot on every visit to the front page
# would cost what keeping the release list saves (`viewer._release_rows`).
_answers: dict[tuple[str, str], dict[str, Any]] = {}
_answers_lock = threading.Lock()


def _newest_answer(row: dict[str, Any]) -> dict[str, Any]:
    """The overview and chart of one published release, as an anonymous visitor sees them
    (everything shown is whole-release figures: no row of a held-out scenario is in it)."""
    key = (row["code"], row["snapshot_hash"])
    with _answers_lock:
        if key in _answers:
            return _answers[key]
    publication = public.publication_get(row["code"])
    snapshot = public.published_from(publication, AnonymousUser()).snapshot
    names = public.model_names(snapshot)
    answer = {
        "latest": row, "published": {"code": row["code"], "draft": None},
        "method": {"rule": snapshot.method.rule},
        "has_chart": {"honesty", "persuasion"} <= set(tables.measured_main(snapshot)),
        "chart_svg": release_chart_svg(snapshot),
        "dot_plot_svg": release_dot_plot_svg(snapshot),
        "overview_columns": overview.overview_columns(snapshot),
        "overview_rows": overview.overview_rows(snapshot, names),
    }
    with _answers_lock:
        _answers.clear()  # only the newest release is ever asked for again
        _answers[key] = answer
    return answer


@require_safe
@query_params.reads()
def release_detail(request: HttpRequest, code: str) -> HttpResponse:
    publication = public.publication_get(code)
    if publication is None:
        return _draft_or_404(request, code)
    return release_page(request, public.published_from(publication, request.user))


def release_page(request: HttpRequest, published: public.PublishedRelease) -> HttpResponse:
    """The leaderboard page of a published release, or of a draft for staff (with a banner)."""
    snapshot = published.snapshot
    names = public.model_names(snapshot)
    labels = tables.measure_labels(snapshot)
    method = snapshot.method
    measured = tables.measured_main(snapshot)

    def measured_rows(rows: list[ReferenceRow]) -> list[ReferenceRow]:
        return [row for row in rows if row.metric not in MAIN or row.metric in measured]

    context = {
        "published": published,
        "snapshot": snapshot,
        "staff_archive": public.may_download_staff_archive(request.user, published),
        # The chart's measures this release measured: a release without a simulated public
        # (no panel stage) has no chart, no thresholds against the control text, no anchors.
        "main": measured,
        "has_chart": {"honesty", "persuasion"} <= set(measured),
        "has_panel": "persuasion" in measured,
        "chart_svg": release_chart_svg(snapshot),
        "dot_plot_svg": release_dot_plot_svg(snapshot),
        "overview_columns": overview.overview_columns(snapshot),
        "overview_rows": overview.overview_rows(snapshot, names),
        "spin_findings": list(overview.spin_finding(snapshot, names).values()),
        "chart_rows": _chart_table(snapshot),
        "link_tables": tables.link_tables(snapshot, names),
        "sensitivity_tables": tables.sensitivity_tables(snapshot, names),
        "per_condition": tables.split_tables(snapshot, "per_condition", names,
                                             tables.condition_names(snapshot)),
        "per_task": tables.split_tables(snapshot, "per_task", names,
                                        tables.task_names(snapshot)),
        "c1_minus_c3": tables.labelled(
            _named(measured_rows(snapshot.c1_minus_c3), names), labels),
        "c2_vs_c0": tables.labelled(
            _named(measured_rows(snapshot.c2_vs_c0), names), labels),
        "versus_control": _versus_control(snapshot, names, published.figures_held),
        "versus_control_overall": _named(snapshot.versus_control_overall, names),
        "refusal_rates": _named(snapshot.refusal_rates, names),
        "anchors": tables.anchor_tables(snapshot),
        "method": method,
        "measures": tables.measures(snapshot),
        "weights": tables.weights(method),
        "rank_minimum_words": tables.rank_minimum_words(snapshot),
        "unfilled_cells": snapshot.counts.unfilled_cells,
        "calibration": _calibration(snapshot),
        "jury_check": _jury_check(snapshot),
        "counts": tables.counts(snapshot),
        **checks_context(published, request.user),
    }
    return render(request, "audits_app/release_detail.html", context)


def _jury_check(snapshot: ReleaseSnapshot) -> dict[str, Any] | None:
    """How well the jury held up against people's spot-checks, from the published snapshot."""
    agreement = snapshot.agreement
    if not agreement:
        return None
    people = agreement.get("jury_vs_people") or {}
    jurors = (agreement.get("jurors") or {}).get("claims") or {}
    return {
        "texts_scored": agreement.get("texts_scored"),
        "texts_checked": agreement.get("texts_checked"),
        "coverage": agreement.get("coverage"),
        "rows": [
            {"what": label, "n": (people.get(key) or {}).get("n"),
             "kappa": (people.get(key) or {}).get("kappa") or {},
             "percent": (people.get(key) or {}).get("percent") or {}}
            for key, label in (("all", "all spot-checks"), ("in_band", "in the web UI"),
                               ("out_of_band", "out-of-band audits"))
        ],
        "juror_alpha": jurors.get("alpha") or {},
        "juror_units": jurors.get("units"),
        "level": (agreement.get("bootstrap") or {}).get("level"),
        "gate": snapshot.gate,
    }


def _draft_or_404(request: HttpRequest, code: str) -> HttpResponse:
    """Staff who may (`public.may_see_draft`) see a release that is not published as it
    would be published now, marked DRAFT; anyone else gets a 404."""
    if not public.is_staff(request.user):
        raise Http404("No published release with this code.")
    release = Release.objects.filter(code=code).first()
    if release is None or not public.may_see_draft(request.user, release):
        raise Http404("No published release with this code.")
    return release_page(request, public.draft_view(release, request.user))


@require_safe
@query_params.reads()
def release_chart(request: HttpRequest, code: str) -> HttpResponse:
    published = public.release_view_get(code, request.user)
    published_at = published.publication.published_at
    svg = release_chart_svg(published.snapshot, standalone=True,
                            published=published_at.strftime("%Y-%m-%d") if published_at
                            else "not published (draft)")
    response = HttpResponse(svg, content_type="image/svg+xml")
    response["Content-Disposition"] = f'attachment; filename="{code}-chart.svg"'
    return response


@require_safe
@query_params.reads()
def release_leaderboard_csv(request: HttpRequest, code: str) -> HttpResponse:
    published = public.release_view_get(code, request.user)
    rows, columns = public.leaderboard_rows(published.snapshot), public.LEADERBOARD_COLUMNS
    # The population-weighted panel, only where a source is recorded (its column names it).
    weighted = weighted_csv_rows(weighted_answer(published.release,
                                                 public.model_names(published.snapshot)))
    if weighted:
        rows, columns = rows + weighted, [*columns, "weights_source"]
    rows, columns = public.provenance_column(rows, columns, published.provenance)
    text = csv_files.csv_text(rows, columns)
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{code}-leaderboard.csv"'
    return response


@require_safe
@query_params.reads()
def scenario_detail(request: HttpRequest, code: str, slug: str) -> HttpResponse:
    published = public.release_view_get(code, request.user)
    snapshot = published.snapshot
    scenario = next((s for s in snapshot.scenarios if s.slug == slug), None)
    if scenario is None:
        raise Http404("No such scenario in this release.")
    names = public.model_names(snapshot)
    texts = [t for t in snapshot.texts if t.scenario == slug]
    context = {
        "published": published,
        "scenario": scenario,
        "content": snapshot.scenario_content.get(slug),
        "anchors": [row for row in snapshot.anchors if row.scenario == slug],
        "baseline": _named([r for r in snapshot.baseline_without_text if r.scenario == slug],
                           names),
        "versus_control": _named([r for r in snapshot.versus_control if r.scenario == slug],
                                 names),
        "model_means": _model_means(texts, names),
        "text_count": len(texts),
        "no_texts_because": "" if texts else _why_no_texts(published, slug),
        # Left out of the viewer's snapshot with the scenario's held texts; the page says why.
        "figures_held_because": public.figures_held_because(published.figures_held[slug])
        if slug in published.figures_held else "",
    }
    return render(request, "audits_app/scenario_detail.html", context)


def _why_no_texts(published: public.PublishedRelease, slug: str) -> str:
    """Why this viewer sees no text of a scenario the page shows: its texts are held for the
    arena or reading studies (`publication.held_cells`), or held out of the public pages, or
    the release has none. Nothing about the texts themselves (not their writers)."""
    snapshot = published.snapshot
    revealed = public.revealed_holders(published.release.pk)
    holders = [holder for holder in withheld_holders(snapshot, revealed)
               if any(cell[0] == slug for cell in held_cells(snapshot, holder))]
    if holders:
        return ("Its texts are held for " + " and for ".join(public.HELD_FOR[h] for h in holders)
                + ": no page lists them before then.")
    if published.draft is None and any(
            text.scenario == slug for text in public.load_snapshot(published.publication).texts):
        return "Its texts are held out of the public pages."
    return NO_TEXTS


NO_TEXTS = "This release has no texts of this scenario."


@require_safe
@query_params.reads(*public.TEXT_FILTERS, "order", "page")
def text_list(request: HttpRequest, code: str) -> HttpResponse:
    """A release's texts, filtered, sorted and paged; a filter, order or page it does not have
    is a 400 naming it and what it accepts (`audits_app.query_params`)."""
    published = public.release_view_get(code, request.user)
    snapshot = published.snapshot
    order = query_params.choice(request.GET, "order", public.TEXT_ORDERS)
    texts = public.order_texts(public.checked_filter_texts(snapshot.texts, request.GET,
                                                            published.figures_held), order)
    paginator = Paginator(texts, TEXTS_PER_PAGE)
    page = paginator.page(query_params.whole_number(request.GET, "page", low=1,
                                                    high=paginator.num_pages, default=1))
    names = public.model_names(snapshot)
    query = request.GET.copy()
    query.pop("page", None)
    filters_only = query.copy()
    filters_only.pop("order", None)
    context = {
        "published": published,
        "page": page,
        "rows": _named(page.object_list, names),
        "query": query.urlencode(),
        "filter_query": filters_only.urlencode(),
        "columns": _text_columns(filters_only, order),
        "filters": _filter_choices(snapshot, names, request.GET),
        "held_scenarios": _held_scenario_count(published),
        "held_models": _held_model_count(published, names),
    }
    return render(request, "audits_app/text_list.html", context)


def _held_scenario_count(published: public.PublishedRelease) -> int:
    """How many of the release's scenarios have texts, none of which this viewer may see
    (`_why_no_texts`): the Scenario filter leaves them out (choosing one was a 400), and the
    page says that some are held back, by their number alone."""
    shown = {text.scenario for text in published.snapshot.texts}
    return sum(1 for scenario in published.snapshot.scenarios if scenario.slug not in shown
               and _why_no_texts(published, scenario.slug) != NO_TEXTS)


def _held_model_count(published: public.PublishedRelease, names: dict[str, str]) -> int:
    """How many of the release's models wrote texts, none of which this viewer may see (all
    held for the arena or reading studies, or held out of the public pages): the Model filter
    leaves them out, as the Scenario filter does such scenarios, and the page says how many,
    by their number alone. A draft is seen whole by whoever may see it."""
    if published.draft is not None:
        return 0
    shown = {text.model for text in published.snapshot.texts}
    hidden = set(names) - shown
    if not hidden:
        return 0
    written = {text.model for text in public.load_snapshot(published.publication).texts}
    return len(hidden & written)


TEXT_LIST_COLUMNS = [("id", "Text", False), ("model", "Model", False),
                     ("scenario", "Scenario", False), ("task", "Task", False),
                     ("condition", "Condition", False), ("variant", "Variant", True),
                     ("refusal", "Refusal", False), ("honesty_index", "Honesty", True),
                     ("persuasion", "Persuasion", True), ("misleading", "Misleading", True)]


def _text_columns(filters, order: str) -> list[dict[str, Any]]:
    """The text list's headings, each a link that sorts the whole list (every page) by it;
    following the link of the current order reverses it."""
    columns = []
    for key, label, numeric in TEXT_LIST_COLUMNS:
        sorted_as = {key: "ascending", f"-{key}": "descending"}.get(order)
        query = filters.copy()
        query["order"] = f"-{key}" if sorted_as == "ascending" else key
        columns.append({"key": key, "label": label, "numeric": numeric,
                        "url": f"?{query.urlencode()}", "sorted": sorted_as})
    return columns


@require_safe
@query_params.reads()
def text_detail(request: HttpRequest, code: str, text_id: int) -> HttpResponse:
    """A text with everything measured about it, and the same item by every other model."""
    published = public.release_view_get(code, request.user)
    # A text held for the release's arena is not in the viewer's snapshot until the arena
    # closes (`viewer.snapshot_for_viewer`): 404, and absent from the same item's texts.
    row, body = public.text_get(published, text_id)
    snapshot = published.snapshot
    names = public.model_names(snapshot)
    verdicts = public.text_verdicts(published, text_id)
    scores = [(FIELD_LABELS.get(key, key), _shown(getattr(row, key, None)))
              for key in public.TEXT_COLUMNS[7:]]
    return render(request, "audits_app/text_detail.html", {
        "published": published, "text": row, "model_name": names.get(row.model, row.model),
        "task_name": labels.task_label(row.task),
        "condition_name": labels.condition_label(row.condition),
        "scenario": _scenario_of(snapshot, row.scenario),
        "scenario_rows": _scenario_rows(snapshot, row.scenario),
        "body": body, "scores": scores, "verdicts": verdicts,
        "jurors": [entry for entry in verdicts if entry["verdict"].outcome == "scored"],
        "claims": public.claims_by_juror(verdicts),
        "readers": public.text_readers(published, row),
        "story": public.text_story(published, text_id),
        "same_item": _same_item(published, row, names),
        "interview": (public.text_interview(published, text_id, body)
                      if row.task == "T4" else []),
    })


def _scenario_of(snapshot: ReleaseSnapshot, slug: str) -> dict[str, Any]:
    entry = next((s for s in snapshot.scenarios if s.slug == slug), None)
    return {"slug": slug, "title": (entry.title if entry else "") or slug}


def _scenario_rows(snapshot: ReleaseSnapshot, slug: str) -> set[str]:
    """The ids a claim's basis may name that the scenario's page shows as a row `#fact-ID`:
    its facts and its open questions (a confidential fact is not on a public page)."""
    content = snapshot.scenario_content.get(slug) or {}
    return {item["id"] for key in ("facts", "uncertainties") for item in content.get(key) or []
            if isinstance(item, dict) and "id" in item}


def _same_item(published: public.PublishedRelease, row: TextEntry,
               names: dict[str, str]) -> list[dict[str, Any]]:
    """Every model's text for this scenario, task, condition and variant, side by side (the
    viewer's snapshot: a cell held for the arena is in it whole or not at all)."""
    texts = public.same_item(published.snapshot, row)
    bodies = public.text_bodies(published, [t.id for t in texts])
    return [{**text.as_data(), "model_name": names.get(text.model, text.model),
             "this": text.id == row.id, "body": bodies.get(text.id, ""),
             "honesty": fixed(text.honesty_index),
             "persuasion": fixed(text.persuasion, 2),
             "misleading": fixed(text.misleading)}
            for text in texts]


def _shown(value: Any) -> str:
    """A score as a reader wants it: three decimals, a dash where it was not measured."""
    if value is None:
        return "–"
    return fixed(value) if isinstance(value, float) else str(value)


def _named(rows: list[SnapshotPart], names: dict[str, str]) -> list[dict[str, Any]]:
    """Snapshot rows as the page prints them, each with its model's frozen name."""
    return [{**row.as_data(), "model_name": names.get(row.model, row.model)} for row in rows]


def _chart_table(snapshot: ReleaseSnapshot) -> list[dict[str, Any]]:
    return [point.__dict__ for point in chart_points(snapshot)]


def _versus_control(snapshot: ReleaseSnapshot, names: dict[str, str],
                    held: Mapping[str, tuple[Holder, ...]]) -> dict[str, Any]:
    """A model x scenario grid of 'text minus that scenario's control text'; a scenario
    whose per-model figures are held from this viewer (`viewer.scenarios_held`) has its
    column marked held, and the page says why."""
    scenarios = [s.slug for s in snapshot.scenarios]
    cells = {(r.model, r.scenario): r.diff for r in snapshot.versus_control}
    rows = [{"model_name": name,
             "cells": [{"held": s in held, "diff": cells.get((model, s))} for s in scenarios]}
            for model, name in names.items()]
    held_for = sorted({holder for slug in scenarios for holder in held.get(slug, ())})
    return {"scenarios": scenarios, "rows": rows,
            "held_because": "" if not held_for else (
                "Figures on a scenario marked held are held for "
                + " and for ".join(public.HELD_FOR[holder] for holder in held_for)
                + ": they would tell which model wrote the more favourable of its texts, "
                  "which are read blind until then. The overall figures include them.")}


def _model_means(texts: list[TextEntry], names: dict[str, str]) -> list[dict[str, Any]]:
    grouped: dict[str, list[TextEntry]] = defaultdict(list)
    for text in texts:
        grouped[text.model].append(text)
    rows = []
    for model, name in names.items():
        items = grouped.get(model, [])
        if items:
            rows.append({"model_name": name, "texts": len(items),
                         **{key: _mean(items, key) for key in
                            ("honesty_index", "persuasion", "misleading", "attitude_effect")}})
    return rows


def _mean(items: list[TextEntry], key: str) -> float | None:
    values = [getattr(item, key) for item in items if getattr(item, key) is not None]
    return fmean(values) if values else None


def _calibration(snapshot: ReleaseSnapshot) -> str:
    """One sentence on the panel against people (DESIGN section 2: shown prominently once it
    exists). The figures are `calibration_summary`'s, under agreement or at the top level."""
    summary = snapshot.calibration_summary()
    if summary is None:
        return CALIBRATION_MISSING
    text_level = summary.get("text_level") or {}
    order = ((summary.get("model_order") or {}).get("spearman") or {})
    parts = [f"Calibration: the simulated public was compared with {summary.get('readers', '?')}"
             f" human readers on {summary.get('texts', '?')} texts"]
    if text_level.get("pearson") is not None:
        parts.append(f"text-level Pearson r = {fixed(text_level['pearson'], 2)}")
    if isinstance(order, dict) and order.get("point") is not None:
        parts.append(f"model-order Spearman = {fixed(order['point'], 2)}")
    return "; ".join(parts) + "."


def _filter_choices(snapshot: ReleaseSnapshot, names: dict[str, str], params) -> list[dict]:
    texts = snapshot.texts
    shown = {t.scenario for t in texts}
    writers = {t.model for t in texts}
    options = {
        # Only models and scenarios with a text this viewer sees: any other is a 400 (no
        # text has it).
        "model": [(m, names[m]) for m in names if m in writers],
        "scenario": [(s.slug, s.title) for s in snapshot.scenarios if s.slug in shown],
        "task": [(t, f"{t} · {labels.task_label(t)}")
                 for t in sorted({t.task for t in texts})],
        "condition": [(c, f"{c} · {labels.condition_label(c)}")
                      for c in sorted({t.condition for t in texts})],
    }
    return [{"name": key, "options": values, "selected": params.get(key, "")}
            for key, values in options.items()]
