"""The arena's results as pages and the API show them: tables from a stored `ArenaResult`,
the recognisability run, and the record of ethics reviews and openings."""

from __future__ import annotations

import math
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from audits_app.arena.csv_export import votes_from
from audits_app.arena.models import ArenaEvent, ArenaResult, EthicsReview, RecognisabilityRun
from audits_app.arena.results import RANKINGS, STAFF_RANKINGS
from audits_app.arena.selectors import ArenaState
from audits_app.models import Publication
from audits_app.pages import viewer as public
from audits_app.publication.snapshot_model import ReleaseSnapshot
from audits_app.templatetags.numbers import true_minus
from baitbench_site.roles import public_role, role_holding

# Side-by-side tables: (title, first ranking, second ranking, the release's own measure).
COMPARISONS = [
    ("Which text leaves the more favourable view", "human", "simulated", "persuasion"),
    ("The same, without pairs the classifier recognises", "human_unflagged",
     "simulated_unflagged", "persuasion"),
]


def ranking_label(key: str, counted: int, simulated: int) -> str:
    """A ranking's heading, saying whose votes it ranks as the CSV's `voters` does: a
    ranking of the counted votes is "People's votes" only when no simulated voter (the
    demo's) cast any of them."""
    whose = votes_from(key, counted, simulated)
    if not key.startswith("human") or whose == "people":
        return RANKINGS[key]
    return RANKINGS[key].replace("People's votes", f"Votes of {whose}", 1)


def review_data(review: EthicsReview) -> dict[str, Any]:
    """What is public about an ethics review (the letter itself is for staff; its hash is not)."""
    return {"id": review.pk, "reviewing_body": review.reviewing_body,
            "reference": review.reference, "decided_on": review.decided_on.isoformat(),
            "decision": review.decision, "decision_label": review.get_decision_display(),
            "note": review.note, "document_sha256": review.document_sha256,
            "recorded_at": review.recorded_at.isoformat()}


# Opening, pausing and closing an arena is this role's act, whatever else its doer holds.
MANAGER_ROLE = role_holding("audits_app.manage_arena")


def event_data(event: ArenaEvent) -> dict[str, Any]:
    who = public_role(event.by, acting_as=MANAGER_ROLE)
    return {"action": event.action, "action_label": event.get_action_display(),
            "at": event.at.isoformat(), "reason": event.reason, "by": who,
            "review": event.review.reference if event.review else None}


def recognisability_data(release_id: int, names: dict[str, str]) -> dict[str, Any] | None:
    run = (RecognisabilityRun.objects.filter(release_id=release_id)
           .defer("probabilities").first())
    if run is None:
        return None
    summary = dict(run.summary)
    summary["per_writer"] = [{**row, "model_name": names.get(row["writer"], row["writer"])}
                             for row in summary.get("per_writer", [])]
    return {"computed_at": run.computed_at.isoformat(), "method": run.method, **summary}


def arena_data(publication: Publication, state: ArenaState, result: ArenaResult | None, *,
               staff: bool) -> dict[str, Any]:
    """Everything public about a release's arena, as plain data (the API's answer)."""
    names = public.model_names(public.load_snapshot(publication))
    data = None
    if result is not None:
        data = {key: value for key, value in result.data.items()
                if staff or key != "staff_rankings"}
        data = {**data, "computed_at": result.computed_at.isoformat(),
                "votes_counted": result.votes_counted}
    return {
        "release": publication.release.code,
        "open": state.is_open,
        "ethics_reviews": [review_data(review) for review in state.reviews],
        "events": [event_data(event) for event in state.events],
        "recognisability": recognisability_data(publication.release_id, names),
        "results": data,
        "model_names": names,
    }


def results_context(publication: Publication, state: ArenaState, result: ArenaResult | None,
                    *, staff: bool) -> dict[str, Any]:
    """The results page's tables."""
    snapshot = public.load_snapshot(publication)
    names = public.model_names(snapshot)
    recognisability = recognisability_data(publication.release_id, names)
    context: dict[str, Any] = {
        "result": result, "names": names, "staff": staff,
        "recognisability": recognisability,
        "recognisability_flat": recognisability is not None and any(
            row.get("low") is not None and row.get("low") == row.get("high")
            for row in [recognisability, *recognisability.get("per_writer", [])]),
        "reviews": [review_data(review) for review in state.reviews],
        "events": [event_data(event) for event in state.events],
        "ranking_labels": RANKINGS,
    }
    if result is None:
        return context
    data = result.data
    rankings = data.get("rankings", {})
    published = _published_ranks(snapshot)
    simulated = data.get("votes", {}).get("simulated", 0)
    # Whose counted votes the plot and the head-to-head table show (the CSV's `voters`).
    voters = votes_from("human", result.votes_counted, simulated)
    context.update({
        "votes": data.get("votes", {}),
        "correlations": data.get("correlations", {}),
        "pairs": data.get("pairs", {}),
        "position": data.get("position", {}),
        "level": data.get("level"),
        "rule": data.get("rule"),
        "comparisons": [
            {"title": title, "first": first, "second": second,
             "first_label": ranking_label(first, result.votes_counted, simulated),
             "second_label": ranking_label(second, result.votes_counted, simulated),
             "first_comparisons": rankings.get(first, {}).get("comparisons", 0),
             "second_comparisons": rankings.get(second, {}).get("comparisons", 0),
             "rows": _side_by_side(names, rankings.get(first, {}), rankings.get(second, {}),
                                   published.get(measure, {}))}
            for title, first, second, measure in COMPARISONS
        ],
        "honesty": {"comparisons": rankings.get("human_honesty", {}).get("comparisons", 0),
                    "rows": _side_by_side(names, rankings.get("human_honesty", {}), {},
                                          published.get("honesty", {}))},
        "voters": voters,
        "interval_plot": interval_plot(
            _side_by_side(names, rankings.get("human", {}), {}, {}), level=data.get("level"),
            voters=voters),
        "win_matrix": win_matrix_table(data.get("win_matrix"), names,
                                       [row["model"] for row in rankings.get("human", {}).get(
                                           "rows", [])]),
        "staff_tables": [
            {"label": label, "comparisons": data.get("staff_rankings", {}).get(key, {}).get(
                "comparisons", 0),
             "rows": _side_by_side(names, data.get("staff_rankings", {}).get(key, {}), {}, {})}
            for key, label in STAFF_RANKINGS.items()
        ] if staff else [],
    })
    return context


def _published_ranks(snapshot: ReleaseSnapshot) -> dict[str, dict[str, int | None]]:
    boards = snapshot.leaderboards
    return {metric: {row.model: row.rank for row in
                     (boards[metric].rows if metric in boards else [])}
            for metric in ("persuasion", "honesty")}


def _side_by_side(names: dict[str, str], first: dict[str, Any], second: dict[str, Any],
                  published: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per model, in the first ranking's order, with the second ranking beside it."""
    others = {row["model"]: row for row in second.get("rows", [])}
    rows = first.get("rows") or [{"model": model} for model in names]
    return [{"model": row["model"], "model_name": names.get(row["model"], row["model"]),
             "first": _with_names(row, names),
             "second": _with_names(others.get(row["model"], {}), names),
             "published_rank": published.get(row["model"])}
            for row in rows]


def _with_names(row: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """The row with the names of the models it is demonstrably above (results computed
    before rows carried them show none)."""
    return {**row, "above_names": [names.get(model, model) for model in row.get("above", [])]}


# --- the interval plot and the win-rate matrix ------------------------------------------------

PLOT_WIDTH, PLOT_LABELS, PLOT_ROW, PLOT_TOP = 640, 200, 26, 34


def interval_plot(rows: list[dict[str, Any]], *, level: float | None,
                  voters: str = "people") -> SafeString | None:
    """The Bradley–Terry ratings from the counted votes (of `voters`, as the CSV says whose
    they are) as an SVG dot-and-whisker plot, one line per model in the ranking's order,
    drawn on the server (the page needs no script). It scales with its box through its
    viewBox, so a phone shows it whole. None without a rated model."""
    rated = [row for row in rows if row["first"].get("rating") is not None]
    if not rated:
        return None
    ends = [value for row in rated for value in (row["first"].get("low"),
                                                 row["first"].get("high"),
                                                 row["first"]["rating"]) if value is not None]
    low, high = math.floor(min(ends + [0.0]) * 2) / 2, math.ceil(max(ends + [0.0]) * 2) / 2
    span = (high - low) or 1.0

    def x(value: float) -> float:
        return round(PLOT_LABELS + (value - low) / span * (PLOT_WIDTH - PLOT_LABELS - 16), 1)

    height = PLOT_TOP + PLOT_ROW * len(rated) + 30
    ticks = [low + step * 0.5 for step in range(int(span / 0.5) + 1)]
    if len(ticks) > 9:
        ticks = ticks[::math.ceil(len(ticks) / 9)]
    grid = format_html_join("", '<line x1="{0}" x2="{0}" y1="{1}" y2="{2}" class="grid"/>'
                            '<text x="{0}" y="{3}" class="tick">{4}</text>',
                            ((x(t), PLOT_TOP - 8, height - 26, height - 10, true_minus(f"{t:g}"))
                             for t in ticks))
    lines = format_html_join("", (
        '<g class="model" data-model="{0}"><title>{1}: rating {2}, interval {3} to {4}</title>'
        '<text x="{5}" y="{6}" class="label">{1}</text>'
        '<line x1="{7}" x2="{8}" y1="{9}" y2="{9}" class="interval"/>'
        '<circle cx="{10}" cy="{9}" r="5"{11}/></g>'), (
        (row["model"], row["model_name"], _shown(row["first"]["rating"]),
         _shown(row["first"].get("low")), _shown(row["first"].get("high")),
         PLOT_LABELS - 8, PLOT_TOP + PLOT_ROW * index + 4,
         x(_given(row["first"].get("low"), row["first"]["rating"])),
         x(_given(row["first"].get("high"), row["first"]["rating"])),
         PLOT_TOP + PLOT_ROW * index, x(row["first"]["rating"]),
         mark_safe(' class="unranked"') if not row["first"].get("rank") else "")
        for index, row in enumerate(rated)))
    shown = f"{level:.0%}" if level else "the release's"
    return format_html(
        '<svg class="arena-intervals" viewBox="0 0 {0} {1}" role="img" '
        'aria-labelledby="interval-plot-title" xmlns="http://www.w3.org/2000/svg">'
        '<title id="interval-plot-title">{10} with {2} intervals</title>'
        '<line x1="{3}" x2="{3}" y1="{4}" y2="{5}" class="zero"/>{6}{7}'
        '<text x="{8}" y="{9}" class="axis">Rating (0 = the average model)</text></svg>',
        PLOT_WIDTH, height + 14, shown, x(0.0), PLOT_TOP - 8, height - 26, grid, lines,
        PLOT_LABELS, height + 10,
        "People's ratings" if voters == "people" else f"Ratings from the votes of {voters}")


def _given(value: float | None, default: float) -> float:
    return default if value is None else value


def _shown(value: float | None) -> str:
    """A rating in the plot's visible text, with a true minus sign as on the pages."""
    return "–" if value is None else true_minus(f"{value:.2f}")


def win_matrix_table(matrix: dict[str, Any] | None, names: dict[str, str],
                     order: list[str]) -> dict[str, Any] | None:
    """The head-to-head shares as table rows, models in the ranking's order (then the rest);
    None for a result computed before the matrix was kept, or without a comparison."""
    if not matrix or not any(any(line) for line in matrix.get("games", [])):
        return None
    writers = matrix["writers"]
    index = {model: i for i, model in enumerate(writers)}
    models = [m for m in order if m in index] + [m for m in writers if m not in order]
    models = [m for m in models if any(matrix["games"][index[m]])]
    return {
        "models": [{"number": n, "name": names.get(m, m)} for n, m in enumerate(models, 1)],
        "rows": [{"number": n, "name": names.get(m, m), "cells": [
            {"self": m == other, "share": matrix["share"][index[m]][index[other]],
             "games": matrix["games"][index[m]][index[other]],
             "against": names.get(other, other)} for other in models]}
            for n, m in enumerate(models, 1)],
    }
