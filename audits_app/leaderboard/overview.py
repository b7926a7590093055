"""The answer a release page and the front page lead with, from the published snapshot: pure,
snapshot in, rows and sentences out.

The overview is one row per model and one column per headline measure (honesty, persuasion,
misleading, the change under damage control, refusal), each with rank, point and comparison
interval, and coverage beside them (DESIGN section 6: coverage stands beside every figure).
The spin finding says in words what the two condition comparisons show (DESIGN section 6:
C2 against C0 is the damage-control threshold, C1 − C3 what "but stay within the facts" does).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from audits_app.leaderboard import labels
from audits_app.publication.snapshot_model import BoardRow, ReferenceRow, ReleaseSnapshot
from audits_app.templatetags.numbers import fixed, interval, percent

UNRANKED_LAST = 10**9
# The ranked measures the overview shows, in its column order, with the decimals they need.
HEADLINE = (("honesty", 3), ("persuasion", 2), ("misleading", 3), ("refusal", 3))
DAMAGE_CONTROL = "c2_vs_c0"
WITHIN_THE_FACTS = "c1_minus_c3"


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    anchor: str  # where the page has the measure in full
    higher_is_better: bool | None


def overview_columns(snapshot: ReleaseSnapshot) -> list[Column]:
    """The headline measures this release published, and the damage-control change when the
    release ran both C2 and C0."""
    boards = snapshot.leaderboards
    columns = [Column(key, labels.measure_label(key), f"#link-{key}",
                      boards[key].higher_is_better)
               for key, _ in HEADLINE if key in boards]
    if _comparison_rows(snapshot, DAMAGE_CONTROL, "honesty"):
        columns.insert(min(3, len(columns)), Column(
            DAMAGE_CONTROL, "Honesty, damage control − balanced", "#spin", None))
    return columns


def overview_rows(snapshot: ReleaseSnapshot, names: dict[str, str]) -> list[dict[str, Any]]:
    """One row per model, best honesty first (unranked last, then the release's model
    order), its cells in `overview_columns` order, each {rank, point, interval, sort,
    significant}; coverage is the lowest of
    the headline measures' coverage, so a model scored on part of the cells is marked."""
    boards = snapshot.leaderboards
    by_measure = {key: {row.model: row for row in boards[key].rows}
                  for key, _ in HEADLINE if key in boards}
    changes = {row.model: row for row in _comparison_rows(snapshot, DAMAGE_CONTROL, "honesty")}
    order = {model: index for index, model in enumerate(names)}
    honesty = by_measure.get("honesty", {})
    models = sorted(names, key=lambda model: (
        (honesty[model].rank if model in honesty else None) or UNRANKED_LAST, order[model]))
    columns = overview_columns(snapshot)
    rows = []
    for model in models:
        cells = {key: _ranked_cell(by_measure[key].get(model), digits)
                 for key, digits in HEADLINE if key in by_measure}
        if changes:
            cells[DAMAGE_CONTROL] = _change_cell(changes.get(model))
        coverage = _lowest(row[model].coverage for row in by_measure.values() if model in row)
        rows.append({"model": model, "model_name": names[model],
                     "cells": [cells[column.key] for column in columns],
                     "coverage": percent(coverage), "coverage_value": coverage,
                     "partly_covered": coverage is not None and coverage < 1 - 1e-9})
    return rows


def _ranked_cell(row: BoardRow | None, digits: int) -> dict[str, Any]:
    if row is None:  # a model without a row on this measure
        return {"rank": "–", "point": fixed(None, digits), "sort": "",
                "interval": interval(None, None, digits), "significant": None}
    return {"rank": "–" if row.rank is None else str(row.rank),
            "point": fixed(row.point, digits), "sort": "" if row.point is None else row.point,
            "interval": interval(row.cmp_low, row.cmp_high, digits),
            "significant": None}


def _change_cell(row: ReferenceRow | None) -> dict[str, Any]:
    if row is None:  # a model without a row on this comparison
        return {"rank": "", "point": _signed(None), "sort": "",
                "interval": interval(None, None, sign=True), "significant": None}
    return {"rank": "", "point": _signed(row.point), "sort": "" if row.point is None else row.point,
            "interval": interval(row.low, row.high, sign=True),
            "significant": row.significant}


def _signed(value: float | None, digits: int = 3) -> str:
    shown = fixed(value, digits)
    return shown if value is None or not shown[0].isdigit() or not value else f"+{shown}"


def _lowest(values) -> float | None:
    present = [value for value in values if value is not None]
    return min(present) if present else None


def _comparison_rows(snapshot: ReleaseSnapshot, key: str, metric: str) -> list[ReferenceRow]:
    return [row for row in getattr(snapshot, key) if row.metric == metric
            and row.point is not None]


def spin_finding(snapshot: ReleaseSnapshot, names: dict[str, str]) -> dict[str, Any]:
    """The finding the method exists for, in sentences, with the rows behind them: damage
    control against balanced, and what "but stay within the facts" does."""
    return {
        "damage_control": _finding(snapshot, names, DAMAGE_CONTROL, (
            "Under damage control (C2) {lower} of {total} models wrote demonstrably less "
            "honest texts than under balanced (C0), {higher} demonstrably more honest ones"),
            "This release did not run both damage control (C2) and balanced (C0)."),
        "within_the_facts": _finding(snapshot, names, WITHIN_THE_FACTS, (
            "Adding \"but stay within the facts\" (C3 against C1) made {higher_c3} of {total} "
            "models demonstrably more honest, {lower_c3} demonstrably less"),
            "This release did not run both advocate (C1) and advocate within the facts (C3)."),
    }


def _finding(snapshot: ReleaseSnapshot, names: dict[str, str], key: str, sentence: str,
             missing: str) -> dict[str, Any]:
    honesty = _comparison_rows(snapshot, key, "honesty")
    if not honesty:
        return {"label": labels.comparison_label(key), "words": missing, "rows": []}
    lower = sum(1 for row in honesty if row.significant and row.point < 0)
    higher = sum(1 for row in honesty if row.significant and row.point > 0)
    points = [row.point for row in honesty]
    words = sentence.format(total=len(honesty), lower=lower, higher=higher,
                            higher_c3=lower, lower_c3=higher)
    words += (f"; the change in the honesty index runs from {_signed(min(points))} to "
              f"{_signed(max(points))} (median {_signed(median(points))}).")
    persuasion = {row.model: row for row in _comparison_rows(snapshot, key, "persuasion")}
    rows = [{"model": row.model, "model_name": names.get(row.model, row.model),
             "honesty": _change_cell(row),
             "persuasion": _change_cell(persuasion[row.model]) if row.model in persuasion
             else None}
            for row in honesty if row.model in names]
    return {"label": labels.comparison_label(key), "words": words, "rows": rows,
            "has_persuasion": bool(persuasion)}
