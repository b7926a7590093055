"""Every CSV that enters or leaves BaitBench goes through here.

Reading (`read_table`): what people upload comes from spreadsheets, so the rules are a
spreadsheet user's: a row is a spreadsheet row (the header is row 1, blank rows count), a
problem names its row and column, and nothing a spreadsheet does by habit is an error:
a byte-order mark, a semicolon as separator (Excel in Dutch and other locales), blank rows,
trailing empty cells. What cannot be read with certainty is refused before any row is
interpreted: a file over MAX_BYTES, a header naming a column that is not expected (with the
closest expected name), a control character in a cell. Rows whose first cell starts with `#`
are comments (the downloadable templates use them).

Writing (`csv_text`): a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is
a formula to a spreadsheet (OWASP, "CSV injection"); such a string is prefixed with `'`,
unless it is a plain number, so that a score of -0.25 stays a number.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scenarios_app.schemas import ALLOWED_HERE, forbidden_character

MAX_BYTES = 5 * 1024 * 1024
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab"}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A number as a spreadsheet reads one, written with ASCII digits only.
PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
WHOLE_NUMBER = re.compile(r"[0-9]{1,18}")


# --- writing -------------------------------------------------------------------------------

def spreadsheet_cell(value: Any) -> Any:
    """The value, made safe to open in a spreadsheet (see the module docstring)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not (
        PLAIN_NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


def csv_text(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> str:
    """A CSV of `rows` (dicts; keys outside `columns` are left out), every cell made safe."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    writer.writerows({key: spreadsheet_cell(value) for key, value in row.items()}
                     for row in rows)
    return buffer.getvalue()


# --- reading -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    number: int  # the spreadsheet row: the header is row 1
    cells: dict[str, str]  # column name -> the cell, stripped


@dataclass
class Table:
    columns: list[str]
    rows: list[Row] = field(default_factory=list)
    delimiter: str = ","
    skipped: int = 0  # blank and comment rows

    @property
    def delimiter_name(self) -> str:
        return DELIMITERS[self.delimiter]

    def content_hash(self) -> str:
        """A hash of what the rows say: the same cells under the same columns give the same
        hash whatever the separator, quoting, column order, line endings, comments, empty
        columns or informational columns."""
        content = [{name: value for name, value in sorted(row.cells.items()) if value}
                   for row in self.rows]
        encoded = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def too_large(size: int, name: str = "file") -> str | None:
    if size > MAX_BYTES:
        return f"{name}: too large ({size} bytes; the limit is {MAX_BYTES})"
    return None


def read_table(text: str, *, required: Sequence[str], optional: Sequence[str] = (),
               informational: Sequence[str] = (),
               source: str = "file") -> tuple[Table | None, list[str]]:
    """The rows of a CSV, or the problems that keep it from being read at all.

    Column names are matched case-insensitively; every column must be one of `required`,
    `optional` or `informational` (allowed, for the person filling the file in, and dropped
    unread). Cell values are checked for control characters only: what a value means is the
    caller's to check."""
    if problem := too_large(len(text.encode("utf-8")), source):
        return None, [problem]
    text = text.removeprefix("\ufeff")
    if not text.strip():
        return None, [f"{source}: empty: nothing to import"]
    problems: list[str] = []
    # The sniffer's guess first; another separator only if the header then reads correctly.
    guess = sniff_delimiter(text)
    for delimiter in dict.fromkeys([guess, *DELIMITERS]):
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
        try:
            columns = [name.strip().lower() for name in next(reader)]
        except csv.Error as error:
            return None, [f"row 1 (header): malformed CSV: {error}"]
        found = header_problems(columns, required, [*optional, *informational])
        if not found:
            break
        problems = problems or found  # the guess's problems are the ones to report
    else:
        return None, problems
    table = Table(columns=columns, delimiter=delimiter)
    problems = _read_rows(reader, table, dropped=set(informational))
    if not problems and not table.rows:
        besides = f" ({table.skipped} blank or comment row(s))" if table.skipped else ""
        problems.append(f"the file has a header but no rows{besides}: nothing to import")
    return (None, problems) if problems else (table, [])


def sniff_delimiter(text: str) -> str:
    """Comma, semicolon or tab, whichever the first lines use (csv.Sniffer); a comma when
    the sample does not tell (a file with a single column)."""
    sample = "\n".join(text[:64 * 1024].splitlines()[:20])
    try:
        return csv.Sniffer().sniff(sample, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        return ","


def header_problems(columns: list[str], required: Sequence[str],
                    optional: Sequence[str]) -> list[str]:
    """A header names each expected column at most once and nothing else; a misspelt name
    is reported as such, with the expected name it is closest to."""
    expected = [*required, *optional]
    problems: list[str] = []
    suggested: set[str] = set()
    for position, name in enumerate(columns, start=1):
        if name in expected:
            if columns.index(name) < position - 1:
                problems.append(f"row 1 (header): column {name!r} appears twice")
            continue
        if not name:
            problems.append(f"row 1 (header): column {position} has no name")
            continue
        if len(columns) == 1 and re.search(r"[|:,;\t]", name):
            problems.append(
                f"row 1 (header): {name!r} is one column; separate the columns with commas "
                f"(semicolons and tabs are read too)")
            return problems
        closest = difflib.get_close_matches(name, expected, n=1, cutoff=0.6)
        hint = f"; did you mean {closest[0]!r}?" if closest else ""
        suggested.update(closest)
        problems.append(f"row 1 (header): unknown column {name!r}{hint} "
                        f"(expected: {', '.join(expected)})")
    missing = [name for name in required if name not in columns and name not in suggested]
    if missing:
        problems.append(f"row 1 (header): missing column(s) {', '.join(missing)}")
    return problems


def _read_rows(reader: Any, table: Table, dropped: set[str]) -> list[str]:
    problems: list[str] = []
    number = 1
    width = len(table.columns)
    kept = [name for name in table.columns if name not in dropped]
    try:
        for record in reader:
            number += 1
            cells = [cell.replace("\r\n", "\n").strip() for cell in record]
            if not any(cells) or cells[0].startswith("#"):
                table.skipped += 1
                continue
            if any(cells[width:]):
                problems.append(f"row {number}: {len(cells)} cells, but the header names "
                                f"{width} columns")
                continue
            named = dict(zip(table.columns, cells + [""] * (width - len(cells)), strict=False))
            named = {name: named[name] for name in kept}
            problems += cell_problems(number, named)
            table.rows.append(Row(number, named))
    except csv.Error as error:
        problems.append(f"row {number + 1}: malformed CSV: {error}")
    return problems


def cell_problems(number: int, cells: dict[str, str]) -> list[str]:
    problems = []
    for column, value in cells.items():
        found = forbidden_character(value)
        if found is not None:
            index, description = found
            problems.append(f"row {number}, column {column}: contains {description} at "
                            f"character {index + 1}; {ALLOWED_HERE}")
    return problems


def whole_number(value: str) -> int | None:
    """The value as a whole number written with the digits 0-9, else None.

    Never `int(value)` on what a person typed: Python reads `int('٣')` as 3 and raises on
    `int('²')` although `'²'.isdigit()` is True."""
    return int(value) if WHOLE_NUMBER.fullmatch(value) else None


def digits_note(value: str) -> str:
    """A hint for a value that holds digits other than 0-9 (superscripts, Arabic-Indic, …)."""
    if any(character.isdigit() and not character.isascii() for character in value):
        return " (only the digits 0-9 are read)"
    return ""
