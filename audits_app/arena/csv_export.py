"""The arena's rankings as CSV, safe to open in a spreadsheet."""

from __future__ import annotations

from typing import Any

from audits_app.arena.models import ArenaResult
from audits_app.public import csv_text

COLUMNS = ["table", "model", "model_name", "rank", "rating", "low", "high", "comparisons",
           "wins", "computed_at", "votes_counted"]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula gets a leading quote; numbers stay."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


def results_csv(result: ArenaResult | None, names: dict[str, str]) -> str:
    """One row per ranking and model: the human, simulated, unflagged and honesty rankings."""
    rows = []
    for table, ranking in ((result.data.get("rankings") or {}) if result else {}).items():
        rows += [
            {key: neutralise(value) for key, value in {
                **row, "table": table, "model_name": names.get(row["model"], row["model"]),
                "computed_at": result.computed_at.isoformat(),
                "votes_counted": result.votes_counted,
            }.items()}
            for row in ranking.get("rows", [])
        ]
    return csv_text(rows, COLUMNS)
