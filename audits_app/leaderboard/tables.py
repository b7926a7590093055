"""The tables of a release page, built from its published snapshot: pure, snapshot in, rows out.

Every link of the chain gets a table per measure, with coverage and the refusal rate beside
each figure (DESIGN sections 2 and 6); the text types get their own tables (class tables
under the "classes" rule); the control text, the human baselines and no text are the panel's
anchors. Words come from the snapshot (frozen with the release) or `audits_app.leaderboard.measures`
for snapshots published before they were frozen there.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from audits_app.leaderboard import labels
from audits_app.leaderboard.measures import BY_KEY, COUNT_LABELS, MAIN, WEIGHT_LABELS
from audits_app.templatetags.numbers import fixed, interval, percent
from runs_app.schemas import RankMinimum

UNRANKED_LAST = 10**9


def measures(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """The release's measures in page order, with their words."""
    listed = (snapshot.get("method") or {}).get("measures")
    if listed:
        return listed
    boards = snapshot.get("leaderboards") or {}
    return [BY_KEY[key].as_dict() for key in BY_KEY if key in boards]


def link_tables(snapshot: dict[str, Any], names: dict[str, str]) -> list[dict[str, Any]]:
    """One table per measure, best rank first; `new_link` marks the first table of a link."""
    boards = snapshot.get("leaderboards") or {}
    tables, previous = [], None
    for measure in measures(snapshot):
        board = boards.get(measure["key"])
        if board is None:
            continue
        # By rank; within a tie in the snapshot's own order, as the CSV and the API list them.
        rows = sorted(board.get("rows", []), key=lambda row: row.get("rank") or UNRANKED_LAST)
        shown = [_shown_row(row, names) for row in rows]
        tables.append({**measure, "rule": board.get("rule", ""),
                       "higher_is_better": board.get("higher_is_better", True),
                       "new_link": measure["link"] != previous, "rows": shown,
                       "unranked": [row for row in shown if row["unranked_reason"]],
                       "any_clipped": any(row["point_clipped"] for row in shown)})
        previous = measure["link"]
    return tables


def _shown_row(row: dict[str, Any], names: dict[str, str]) -> dict[str, str]:
    """A measure's row as the page prints it. Formatted here, not with template filters: a
    release of fifty models has hundreds of these rows, and filters were most of its render
    time (bench/pages.py)."""
    return {
        "model": row["model"], "model_name": names.get(row["model"], row["model"]),
        "rank": "–" if row.get("rank") is None else str(row["rank"]),
        # Why a model with a point has no place (below the release's minimum of data).
        "unranked_reason": row.get("unranked_reason") or "",
        "point": fixed(row.get("point")),
        "point_clipped": bool(row.get("point_clipped")),
        "comparison": interval(row.get("cmp_low"), row.get("cmp_high")),
        "absolute": interval(row.get("abs_low"), row.get("abs_high")),
        "coverage": percent(row.get("coverage")),
        "refused": percent(row.get("refusal_rate")),
    }


def measured_main(snapshot: dict[str, Any]) -> list[str]:
    """The chart's measures this release's stage set measures (a snapshot without its stage
    set, from before it was frozen with one: those with any point)."""
    stages = (snapshot.get("method") or {}).get("stages")
    if stages is not None:
        return [metric for metric in MAIN if BY_KEY[metric].stage in stages]
    boards = snapshot.get("leaderboards") or {}
    return [metric for metric in MAIN
            if any(row.get("point") is not None for row in (boards.get(metric) or {}).get(
                "rows", []))]


def split_tables(snapshot: dict[str, Any], key: str, names: dict[str, str],
                 labels: dict[str, str]) -> list[dict[str, Any]]:
    """Per condition or per text type: a row per model with the main measures the release
    measured.

    Rows are ordered by honesty rank (under "classes", the class), then model order.
    """
    order = {model: i for i, model in enumerate(names)}
    measured = measured_main(snapshot)
    tables = []
    for part, boards in sorted((snapshot.get(key) or {}).items()):
        by_model: dict[str, dict[str, Any]] = defaultdict(dict)
        for metric in measured:
            for row in boards.get(metric) or []:
                by_model[row["model"]][metric] = row
        models = sorted(by_model, key=lambda model: (
            (by_model[model].get("honesty") or {}).get("rank") or UNRANKED_LAST,
            order.get(model, UNRANKED_LAST)))
        rows = [_split_row(model, names.get(model, model), by_model[model])
                for model in models if model in order]
        tables.append({"code": part, "name": labels.get(part, ""), "rows": rows})
    return tables


def _split_row(model: str, name: str, boards: dict[str, dict[str, Any]]) -> dict[str, str]:
    """One model's three measures on one condition or text type, as printed: "point (rank)",
    the lowest of the three coverages, and the refusal rate of those cells."""
    def cell(metric: str, digits: int) -> str:
        row = boards.get(metric) or {}
        rank = "–" if row.get("rank") is None else row["rank"]
        return f"{fixed(row.get('point'), digits)} ({rank})"

    return {"model": model, "model_name": name, "honesty": cell("honesty", 3),
            "persuasion": cell("persuasion", 2), "misleading": cell("misleading", 3),
            "coverage": percent(_lowest(row.get("coverage") for row in boards.values())),
            "refused": percent((boards.get("honesty") or {}).get("refusal_rate"))}


def _lowest(values) -> float | None:
    present = [value for value in values if value is not None]
    return min(present) if present else None


def _language(snapshot: dict[str, Any]) -> str:
    language = (snapshot.get("release") or {}).get("language")
    return language if language in ("en", "nl") else "en"


def task_names(snapshot: dict[str, Any]) -> dict[str, str]:
    """The release's text types by name (`labels`: the same words on every page), in the
    release's language: the names of the briefs its writers were given."""
    language = _language(snapshot)
    return {task["code"]: labels.task_label(task["code"], language)
            for task in (snapshot.get("method") or {}).get("tasks") or []}


def condition_names(snapshot: dict[str, Any]) -> dict[str, str]:
    language = _language(snapshot)
    return {item["code"]: labels.condition_label(item["code"], language)
            for item in (snapshot.get("method") or {}).get("conditions") or []}


def anchor_tables(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The panel's anchors overall, and per scenario the viewer may see (in snapshot order)."""
    titles = {s["slug"]: s.get("title") or s["slug"] for s in snapshot.get("scenarios", [])}
    per_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in snapshot.get("anchors") or []:
        if row.get("scenario") in titles:
            per_scenario[row["scenario"]].append(row)
    return {"overall": snapshot.get("anchors_overall") or [],
            "scenarios": [{"slug": slug, "title": titles[slug], "rows": per_scenario[slug]}
                          for slug in titles if per_scenario.get(slug)]}


def measure_labels(snapshot: dict[str, Any]) -> dict[str, str]:
    return {measure["key"]: measure["label"] for measure in measures(snapshot)}


def labelled(rows: list[dict[str, Any]], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Rows with a `metric` key get its label (a reader never sees the snake_case key)."""
    return [{**row, "metric_label": labels.get(row.get("metric"), row.get("metric"))}
            for row in rows]


def counts(snapshot: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(COUNT_LABELS.get(key, key.replace("_", " ")), value)
            for key, value in (snapshot.get("counts") or {}).items()
            if isinstance(value, int | float | str)]


def weights(method: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(WEIGHT_LABELS.get(key, key.replace("_", " ")), value)
            for key, value in (method.get("weights") or {}).items()]


def sensitivity_tables(snapshot: dict[str, Any], names: dict[str, str]) -> list[dict[str, Any]]:
    """Per chart measure, the models with missing cells: the mean over their own cells
    beside the fit's point, and where the two readings of a lead disagree (DESIGN section 6).
    Empty for snapshots published before the figure existed."""
    boards = snapshot.get("leaderboards") or {}
    points = {key: {row["model"]: row.get("point") for row in (boards.get(key) or {}).get(
        "rows", [])} for key in boards}
    found = []
    for key in measured_main(snapshot):
        rows = (boards.get(key) or {}).get("sensitivity") or []
        if rows:
            found.append({"key": key, "label": BY_KEY[key].label, "rows": [
                {"model_name": names.get(row["model"], row["model"]),
                 "coverage": percent(row.get("coverage")),
                 "own_mean": fixed(row.get("own_mean")),
                 "point": fixed(points[key].get(row["model"])),
                 "against": names.get(row.get("against"), row.get("against") or "–"),
                 "gap": fixed(row.get("largest_gap")), "half_width": fixed(row.get("half_width")),
                 "flagged": bool(row.get("flagged"))} for row in rows]})
    return found


def rank_minimum_words(snapshot: dict[str, Any]) -> str:
    """The release's minimum of data for a rank, in words, from its frozen configuration
    (the schema's defaults for a configuration that does not name it)."""
    config = (snapshot.get("release") or {}).get("config") or {}
    minimum = RankMinimum.model_validate(config.get("rank_minimum") or {})
    share = "half" if minimum.scenario_share == 0.5 else percent(minimum.scenario_share)
    words = f"at least {share} of the release's scenarios (and at least two)"
    if minimum.every_condition:
        words += " and under every condition it is compared on"
    return words
