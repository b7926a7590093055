"""Reading and writing CSV: what a spreadsheet user sends is read as they meant it or refused
naming row and column; what BaitBench writes never runs as a formula (no database here)."""

from __future__ import annotations

import csv
import io

import pytest

from audits_app.csv_files import (
    MAX_BYTES,
    csv_text,
    digits_note,
    read_table,
    spreadsheet_cell,
    whole_number,
)

COLUMNS = dict(required=("generation", "claim"), optional=("label", "agree", "note"))


# --- writing -------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "written"), [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
    ("+1+1", "'+1+1"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
    ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"),
    ("-", "'-"),
    ("- a bullet", "'- a bullet"),
    ("-0.25", "-0.25"),
    ("+3", "+3"),
    ("-1e-05", "-1e-05"),
    ("fixture/candid", "fixture/candid"),
    ("a=b", "a=b"),
    (-0.25, -0.25),
    (None, None),
])
def test_a_cell_that_a_spreadsheet_would_run_is_neutralised_and_a_number_is_not(value, written):
    assert spreadsheet_cell(value) == written


def test_csv_text_neutralises_every_cell_and_keeps_numbers():
    rows = [{"model": "=cmd|' /C calc'!A0", "point": -0.25, "note": "-1.5", "rank": 1,
             "ignored": "=x"}]

    text = csv_text(rows, ["model", "point", "note", "rank"])

    assert list(csv.reader(io.StringIO(text))) == [
        ["model", "point", "note", "rank"], ["'=cmd|' /C calc'!A0", "-0.25", "-1.5", "1"]]


# --- numbers -------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "number"), [
    ("12", 12), ("0", 0), ("²", None), ("٣", None), ("３", None), ("1²", None), ("-1", None),
    ("1.0", None), (" 1", None), ("1\n", None), ("", None), ("9" * 19, None),
])
def test_whole_numbers_are_ascii_digits_only(value, number):
    # Python itself reads int('٣') == 3 and fails on int('²') although '²'.isdigit().
    assert whole_number(value) == number


def test_a_value_with_other_digits_gets_a_hint():
    assert digits_note("²") == " (only the digits 0-9 are read)"
    assert digits_note("x") == ""


# --- reading: the file and its header ------------------------------------------------------

def test_a_file_over_the_limit_is_refused_before_it_is_read():
    text = "generation,claim\n" + "1,1\n" * (MAX_BYTES // 4 + 1)

    table, problems = read_table(text, source="big.csv", **COLUMNS)

    assert table is None
    assert problems == [f"big.csv: too large ({len(text)} bytes; the limit is {MAX_BYTES})"]


def test_a_misspelt_header_is_named_with_the_closest_expected_column():
    table, problems = read_table("generation,clam,lable\n1,1,supported\n", **COLUMNS)

    assert table is None
    assert problems == [
        "row 1 (header): unknown column 'clam'; did you mean 'claim'? "
        "(expected: generation, claim, label, agree, note)",
        "row 1 (header): unknown column 'lable'; did you mean 'label'? "
        "(expected: generation, claim, label, agree, note)",
    ]


def test_a_missing_and_a_repeated_column_are_named():
    _, problems = read_table("generation,label,label\n1,a,b\n", **COLUMNS)

    assert problems == ["row 1 (header): column 'label' appears twice",
                        "row 1 (header): missing column(s) claim"]


@pytest.mark.parametrize(("text", "delimiter"), [
    ("generation;claim;label\n12;1;supported\n13;overall;\n", ";"),
    ("generation\tclaim\tlabel\n12\t1\tsupported\n", "\t"),
    ("Generation , Claim,LABEL\n12,1,supported\n", ","),
    ("\ufeffgeneration;claim;note\r\n12;1;\"a; b, c\"\r\n", ";"),
])
def test_commas_semicolons_and_tabs_are_read(text, delimiter):
    table, problems = read_table(text, **COLUMNS)

    assert problems == []
    assert table.delimiter == delimiter
    assert table.rows[0].cells["generation"] == "12"
    assert table.rows[0].number == 2


def test_a_comma_file_whose_notes_hold_semicolons_stays_a_comma_file():
    text = "generation,claim,note\n12,1,see a; b; c\n13,2,x; y\n"

    table, _ = read_table(text, **COLUMNS)

    assert table.delimiter == ","
    assert [row.cells["note"] for row in table.rows] == ["see a; b; c", "x; y"]


def test_another_separator_is_named():
    _, problems = read_table("generation|claim|label\n12|1|supported\n", **COLUMNS)

    assert problems == ["row 1 (header): 'generation|claim|label' is one column; separate the "
                        "columns with commas (semicolons and tabs are read too)"]


# --- reading: rows -------------------------------------------------------------------------

def test_rows_are_numbered_as_a_spreadsheet_numbers_them():
    text = ('generation,claim,note\n'
            '12,1,"two\r\nlines"\n'
            '\n'
            '# a comment, skipped\n'
            ',,\n'
            '13,2,\n')

    table, problems = read_table(text, **COLUMNS)

    assert problems == []
    assert [(row.number, row.cells["generation"]) for row in table.rows] == [(2, "12"), (6, "13")]
    assert table.rows[0].cells["note"] == "two\nlines"
    assert table.skipped == 3


@pytest.mark.parametrize(("cell", "description"), [
    ("a\x00b", "a NUL byte (U+0000) at character 2"),
    ("\x1b[31m", "a control character (U+001B) at character 1"),
    ("x\ry", "a control character (U+000D) at character 2"),
])
def test_a_control_character_in_a_cell_is_refused_with_row_and_column(cell, description):
    text = f"generation,claim,note\n12,1,ok\n13,2,\"{cell}\"\n"

    table, problems = read_table(text, **COLUMNS)

    assert table is None
    assert problems == [f"row 3, column note: contains {description}; control characters "
                        "other than tab and newline are not allowed"]


def test_tabs_and_newlines_in_a_cell_are_kept():
    table, problems = read_table('generation,claim,note\n12,1,"a\tb\nc"\n', **COLUMNS)

    assert problems == [] and table.rows[0].cells["note"] == "a\tb\nc"


def test_a_row_with_more_cells_than_the_header_is_refused():
    _, problems = read_table("generation,claim\n12,1,surprise\n13,1\n", **COLUMNS)

    assert problems == ["row 2: 3 cells, but the header names 2 columns"]


def test_a_header_without_rows_is_refused():
    assert read_table("generation,claim\n", **COLUMNS)[1] == [
        "the file has a header but no rows: nothing to import"]
    assert read_table("generation,claim\n\n# only a comment\n", **COLUMNS)[1] == [
        "the file has a header but no rows (2 blank or comment row(s)): nothing to import"]


def test_informational_columns_are_allowed_and_not_read():
    table, problems = read_table("generation,quote,claim\n12,\"=x\x1b\",1\n", **COLUMNS,
                                 informational=("quote",))

    assert problems == []
    assert table.rows[0].cells == {"generation": "12", "claim": "1"}


def test_the_same_rows_hash_alike_whatever_the_layout():
    def digest(text: str) -> str:
        table, problems = read_table(text, **COLUMNS, informational=("quote",))
        assert problems == []
        return table.content_hash()

    first = digest("generation,claim,note\n12,1,x\n13,2,\n")

    assert digest('claim;generation;note;quote\r\n1;12;"x";a\r\n\r\n# again\r\n2;13;;b\r\n'
                  ) == first
    assert digest("generation,claim,note\n12,1,y\n13,2,\n") != first
    assert digest("generation,claim\n12,1\n13,2\n") == digest(
        "generation,claim,note\n12,1,\n13,2,\n")
