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
from audits_app.publication.snapshot_model import AnchorRow, BoardRow, Method, ReleaseSnapshot
from audits_app.templatetags.numbers import fixed, interval, percent
from runs_app.schemas import RankMinimum

UNRANKED_LAST = 10**9


def measures(snapshot: ReleaseSnapshot) -> list[dict[str, Any]]:
    """The release's measures in page order, with their words."""
    listed = snapshot.method.measures
    if listed:
        return [measure.as_data() for measure in listed]
    return [BY_KEY[key].as_dict() for key in BY_KEY if key in snapshot.leaderboards]


def link_tables(snapshot: ReleaseSnapshot, names: dict[str, str]) -> list[dict[str, Any]]:
    """One table per measure, best rank first; `new_link` marks the first table of a link."""
    boards = snapshot.leaderboards
    tables, previous = [], None
    for measure in measures(snapshot):
        board = boards.get(measure["key"])
        if board is None:
            continue
        # By rank; within a tie in the snapshot's own order, as the CSV and the API list them.
        rows = sorted(board.rows, key=lambda row: row.rank or UNRANKED_LAST)
        shown = [_shown_row(row, names) for row in rows]
        tables.append({**measure, "rule": board.rule,
                       "higher_is_better": board.higher_is_better,
                       "new_link": measure["link"] != previous, "rows": shown,
                       "unranked": [row for row in shown if row["unranked_reason"]],
                       "any_clipped": any(row["point_clipped"] for row in shown)})
        previous = measure["link"]
    return tables


def _shown_row(row: BoardRow, names: dict[str, str]) -> dict[str, str]:
    """A measure's row as the page prints it. Formatted here, not with template filters: a
    release of fifty models has hundreds of these rows, and filters were most of its render
    time (bench/pages.py)."""
    return {
        "model": row.model, "model_name": names.get(row.model, row.model),
        "rank": "–" if row.rank is None else str(row.rank),
        # Why a model with a point has no place (below the release's minimum of data).
        "unranked_reason": row.unranked_reason,
        "point": fixed(row.point),
        "point_clipped": row.point_clipped,
        "comparison": interval(row.cmp_low, row.cmp_high),
        "absolute": interval(row.abs_low, row.abs_high),
        "coverage": percent(row.coverage),
        "refused": percent(row.refusal_rate),
    }


def measured_main(snapshot: ReleaseSnapshot) -> list[str]:
    """The chart's measures this release's stage set measures (a snapshot without its stage
    set, from before it was frozen with one: those with any point)."""
    stages = snapshot.method.stages
    if stages is not None:
        return [metric for metric in MAIN if BY_KEY[metric].stage in stages]
    boards = snapshot.leaderboards
    return [metric for metric in MAIN if metric in boards
            and any(row.point is not None for row in boards[metric].rows)]


def split_tables(snapshot: ReleaseSnapshot, key: str, names: dict[str, str],
                 labels: dict[str, str]) -> list[dict[str, Any]]:
    """Per condition or per text type: a row per model with the main measures the release
    measured.

    Rows are ordered by honesty rank (under "classes", the class), then model order.
    """
    order = {model: i for i, model in enumerate(names)}
    measured = measured_main(snapshot)
    tables = []
    for part, boards in sorted(getattr(snapshot, key).items()):
        by_model: dict[str, dict[str, BoardRow]] = defaultdict(dict)
        for metric in measured:
            for row in boards.get(metric) or []:
                by_model[row.model][metric] = row
        models = sorted(by_model, key=lambda model: (
            _rank(by_model[model].get("honesty")) or UNRANKED_LAST,
            order.get(model, UNRANKED_LAST)))
        rows = [_split_row(model, names.get(model, model), by_model[model])
                for model in models if model in order]
        tables.append({"code": part, "name": labels.get(part, ""), "rows": rows})
    return tables


def _rank(row: BoardRow | None) -> int | None:
    return None if row is None else row.rank


def _split_row(model: str, name: str, boards: dict[str, BoardRow]) -> dict[str, str]:
    """One model's three measures on one condition or text type, as printed: "point (rank)",
    the lowest of the three coverages, and the refusal rate of those cells."""
    def cell(metric: str, digits: int) -> str:
        row = boards.get(metric)
        rank = "–" if _rank(row) is None else row.rank
        return f"{fixed(row.point if row else None, digits)} ({rank})"

    honesty = boards.get("honesty")
    return {"model": model, "model_name": name, "honesty": cell("honesty", 3),
            "persuasion": cell("persuasion", 2), "misleading": cell("misleading", 3),
            "coverage": percent(_lowest(row.coverage for row in boards.values())),
            "refused": percent(honesty.refusal_rate if honesty else None)}


def _lowest(values) -> float | None:
    present = [value for value in values if value is not None]
    return min(present) if present else None


def _language(snapshot: ReleaseSnapshot) -> str:
    language = snapshot.release.language
    return language if language in ("en", "nl") else "en"


def task_names(snapshot: ReleaseSnapshot) -> dict[str, str]:
    """The release's text types by name (`labels`: the same words on every page), in the
    release's language: the names of the briefs its writers were given."""
    language = _language(snapshot)
    return {task.code: labels.task_label(task.code, language)
            for task in snapshot.method.tasks}


def condition_names(snapshot: ReleaseSnapshot) -> dict[str, str]:
    language = _language(snapshot)
    return {item.code: labels.condition_label(item.code, language)
            for item in snapshot.method.conditions}


def anchor_tables(snapshot: ReleaseSnapshot) -> dict[str, Any]:
    """The panel's anchors overall, and per scenario the viewer may see (in snapshot order)."""
    titles = {s.slug: s.title or s.slug for s in snapshot.scenarios}
    per_scenario: dict[str, list[AnchorRow]] = defaultdict(list)
    for row in snapshot.anchors:
        if row.scenario in titles:
            per_scenario[row.scenario].append(row)
    return {"overall": snapshot.anchors_overall,
            "scenarios": [{"slug": slug, "title": titles[slug], "rows": per_scenario[slug]}
                          for slug in titles if per_scenario.get(slug)]}


def measure_labels(snapshot: ReleaseSnapshot) -> dict[str, str]:
    return {measure["key"]: measure["label"] for measure in measures(snapshot)}


def labelled(rows: list[dict[str, Any]], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Rows with a `metric` key get its label (a reader never sees the snake_case key)."""
    return [{**row, "metric_label": labels.get(row.get("metric"), row.get("metric"))}
            for row in rows]


def counts(snapshot: ReleaseSnapshot) -> list[tuple[str, Any]]:
    """The release's counts as frozen (in the order the publication counted them)."""
    return [(COUNT_LABELS.get(key, key.replace("_", " ")), value)
            for key, value in snapshot.counts.as_data().items()
            if isinstance(value, int | float | str)]


def weights(method: Method) -> list[tuple[str, Any]]:
    return [(WEIGHT_LABELS.get(key, key.replace("_", " ")), value)
            for key, value in method.weights.items()]


def sensitivity_tables(snapshot: ReleaseSnapshot, names: dict[str, str]) -> list[dict[str, Any]]:
    """Per chart measure, the models with missing cells: the mean over their own cells
    beside the fit's point, and where the two readings of a lead disagree (DESIGN section 6).
    Empty for snapshots published before the figure existed."""
    boards = snapshot.leaderboards
    points = {key: {row.model: row.point for row in board.rows} for key, board in boards.items()}
    found = []
    for key in measured_main(snapshot):
        rows = boards[key].sensitivity if key in boards else []
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


def rank_minimum_words(snapshot: ReleaseSnapshot) -> str:
    """The release's minimum of data for a rank, in words, from its frozen configuration
    (the schema's defaults for a configuration that does not name it)."""
    minimum = RankMinimum.model_validate(snapshot.release.config.get("rank_minimum") or {})
    share = "half" if minimum.scenario_share == 0.5 else percent(minimum.scenario_share)
    words = f"at least {share} of the release's scenarios (and at least two)"
    if minimum.every_condition:
        words += " and under every condition it is compared on"
    return words
