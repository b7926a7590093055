"""A study's responses in the human-reader import's CSV format (`readers_import`), so studies
run elsewhere and here meet in one table; safe to open in a spreadsheet."""

from __future__ import annotations

from audits_app.calibration.readers_import import READER_COLUMNS
from audits_app.calibration.studies.selectors import study_responses
from audits_app.csv_files import csv_text
from audits_app.models import ReadingStudy


def responses_csv(study: ReadingStudy, *, simulated: bool) -> str:
    """Included responses only (excluded ones are counted on the progress page); readers of
    the simulated crowd are named `SIM-…`."""
    rows = []
    for row in study_responses(study, simulated=simulated):
        rows.append({"scenario": row["scenario"], "stimulus": row["stimulus"],
                     "reader": row["reader"],
                     **{f"a{i}": value for i, value in enumerate(row["attitude"], 1)},
                     **{f"k{i}": "dk" if value is None else value
                        for i, value in enumerate(row["knowledge"], 1)}})
    return csv_text(rows, list(READER_COLUMNS))
