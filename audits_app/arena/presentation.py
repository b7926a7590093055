"""The arena's results as pages and the API show them: tables from a stored `ArenaResult`,
the recognisability run, and the record of ethics reviews and openings."""

from __future__ import annotations

from typing import Any

from audits_app import public
from audits_app.arena.models import ArenaEvent, ArenaResult, EthicsReview, RecognisabilityRun
from audits_app.arena.results import RANKINGS, STAFF_RANKINGS
from audits_app.arena.selectors import ArenaState
from audits_app.models import Publication

# Side-by-side tables: (title, first ranking, second ranking, the release's own measure).
COMPARISONS = [
    ("Which text leaves the more favourable view", "human", "simulated", "persuasion"),
    ("The same, without pairs the classifier recognises", "human_unflagged",
     "simulated_unflagged", "persuasion"),
]


def review_data(review: EthicsReview) -> dict[str, Any]:
    """What is public about an ethics review (the letter itself is for staff; its hash is not)."""
    return {"id": review.pk, "reviewing_body": review.reviewing_body,
            "reference": review.reference, "decided_on": review.decided_on.isoformat(),
            "decision": review.decision, "decision_label": review.get_decision_display(),
            "note": review.note, "document_sha256": review.document_sha256,
            "recorded_at": review.recorded_at.isoformat()}


def event_data(event: ArenaEvent) -> dict[str, Any]:
    who = event.by.get_full_name() or event.by.get_username() if event.by else "—"
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
    names = public.model_names(public.publication_snapshot(publication))
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
    snapshot = public.publication_snapshot(publication)
    names = public.model_names(snapshot)
    context: dict[str, Any] = {
        "result": result, "names": names, "staff": staff,
        "recognisability": recognisability_data(publication.release_id, names),
        "reviews": [review_data(review) for review in state.reviews],
        "events": [event_data(event) for event in state.events],
        "ranking_labels": RANKINGS,
    }
    if result is None:
        return context
    data = result.data
    rankings = data.get("rankings", {})
    published = _published_ranks(snapshot)
    context.update({
        "votes": data.get("votes", {}),
        "correlations": data.get("correlations", {}),
        "pairs": data.get("pairs", {}),
        "position": data.get("position", {}),
        "level": data.get("level"),
        "rule": data.get("rule"),
        "comparisons": [
            {"title": title, "first": first, "second": second,
             "first_label": RANKINGS[first], "second_label": RANKINGS[second],
             "first_comparisons": rankings.get(first, {}).get("comparisons", 0),
             "second_comparisons": rankings.get(second, {}).get("comparisons", 0),
             "rows": _side_by_side(names, rankings.get(first, {}), rankings.get(second, {}),
                                   published.get(measure, {}))}
            for title, first, second, measure in COMPARISONS
        ],
        "honesty": {"comparisons": rankings.get("human_honesty", {}).get("comparisons", 0),
                    "rows": _side_by_side(names, rankings.get("human_honesty", {}), {},
                                          published.get("honesty", {}))},
        "staff_tables": [
            {"label": label, "comparisons": data.get("staff_rankings", {}).get(key, {}).get(
                "comparisons", 0),
             "rows": _side_by_side(names, data.get("staff_rankings", {}).get(key, {}), {}, {})}
            for key, label in STAFF_RANKINGS.items()
        ] if staff else [],
    })
    return context


def _published_ranks(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    boards = snapshot.get("leaderboards") or {}
    return {metric: {row["model"]: row.get("rank") for row in
                     (boards.get(metric) or {}).get("rows", [])}
            for metric in ("persuasion", "honesty")}


def _side_by_side(names: dict[str, str], first: dict[str, Any], second: dict[str, Any],
                  published: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per model, in the first ranking's order, with the second ranking beside it."""
    others = {row["model"]: row for row in second.get("rows", [])}
    rows = first.get("rows") or [{"model": model} for model in names]
    return [{"model": row["model"], "model_name": names.get(row["model"], row["model"]),
             "first": row, "second": others.get(row["model"], {}),
             "published_rank": published.get(row["model"])}
            for row in rows]
