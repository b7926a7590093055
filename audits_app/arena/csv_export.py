"""The arena's rankings as CSV, safe to open in a spreadsheet (`audits_app.csv_files`)."""

from __future__ import annotations

from audits_app.arena.models import ArenaResult
from audits_app.csv_files import csv_text

COLUMNS = ["table", "voters", "model", "model_name", "rank", "unranked_reason", "rating", "low",
           "high", "comparisons", "wins", "scenarios", "computed_at", "votes_counted",
           "votes_simulated"]
SIMULATED_PUBLIC = "simulated public"


def votes_from(table: str, counted: int, simulated: int) -> str:
    """Whose answers a ranking is made of. The simulated public's tables are its answers;
    the others are the counted votes, of which `simulated` (the API's `votes.simulated`)
    were cast by simulated voters (the demo's), never people."""
    if table.startswith("simulated"):
        return SIMULATED_PUBLIC
    if not simulated:
        return "people"
    if simulated >= counted:
        return "simulated voters (not people)"
    return "people and simulated voters"


def _whole(value):
    """A count as the spreadsheet should read it: 123, not 123.0 (a half from a tie stays)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def results_csv(result: ArenaResult | None, names: dict[str, str]) -> str:
    """One row per ranking and model: the human, simulated, unflagged and honesty rankings,
    each saying whose answers it ranks (`voters`) and how many counted votes came from
    simulated voters (`votes_simulated`)."""
    rows = []
    simulated = (result.data.get("votes") or {}).get("simulated", 0) if result else 0
    for table, ranking in ((result.data.get("rankings") or {}) if result else {}).items():
        rows += [
            {**row, "wins": _whole(row.get("wins")), "table": table,
             "model_name": names.get(row["model"], row["model"]),
             "voters": votes_from(table, result.votes_counted, simulated),
             "computed_at": result.computed_at.isoformat(),
             "votes_counted": result.votes_counted, "votes_simulated": simulated}
            for row in ranking.get("rows", [])
        ]
    return csv_text(rows, COLUMNS)
