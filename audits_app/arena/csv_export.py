"""The arena's rankings as CSV, safe to open in a spreadsheet (`audits_app.csv_files`)."""

from __future__ import annotations

from audits_app.arena.models import ArenaResult
from audits_app.csv_files import csv_text

COLUMNS = ["table", "model", "model_name", "rank", "unranked_reason", "rating", "low", "high",
           "comparisons", "wins", "scenarios", "computed_at", "votes_counted"]


def results_csv(result: ArenaResult | None, names: dict[str, str]) -> str:
    """One row per ranking and model: the human, simulated, unflagged and honesty rankings."""
    rows = []
    for table, ranking in ((result.data.get("rankings") or {}) if result else {}).items():
        rows += [
            {**row, "table": table, "model_name": names.get(row["model"], row["model"]),
             "computed_at": result.computed_at.isoformat(),
             "votes_counted": result.votes_counted}
            for row in ranking.get("rows", [])
        ]
    return csv_text(rows, COLUMNS)
