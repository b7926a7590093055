"""The arena's rankings and recognisability as CSV, safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io
from typing import Any

from audits_app.arena.models import ArenaResult

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
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, extrasaction="ignore")
    writer.writeheader()
    if result is None:
        return buffer.getvalue()
    for table, ranking in (result.data.get("rankings") or {}).items():
        for row in ranking.get("rows", []):
            writer.writerow({key: neutralise(value) for key, value in {
                **row, "table": table, "model_name": names.get(row["model"], row["model"]),
                "computed_at": result.computed_at.isoformat(),
                "votes_counted": result.votes_counted,
            }.items()})
    return buffer.getvalue()
