"""The shared number formats: an interval reads as a range, with true minus signs, and an
empty one as a single dash."""

from __future__ import annotations

from audits_app.leaderboard.overview import overview_rows
from audits_app.templatetags.numbers import interval
from audits_app.tests.factories import typed_snapshot


def test_it_writes_a_negative_interval_with_minus_signs_and_to():
    assert interval(-0.0843, -0.0171) == "\u22120.084 to \u22120.017"
    assert interval(-0.6, 0.25, 2) == "\u22120.60 to 0.25"


def test_it_marks_a_change_with_its_sign():
    assert interval(-0.1, 0.2, sign=True) == "\u22120.100 to +0.200"
    assert interval(0.0, 0.2, sign=True) == "0.000 to +0.200"


def test_an_empty_interval_is_one_dash():
    assert interval(None, None) == "–"
    assert interval(0.1, None) == "–"


def test_the_overview_uses_it():
    snapshot = typed_snapshot({"leaderboards": {"honesty": {
        "higher_is_better": True, "rule": "paired", "rows": [
            {"model": "a", "rank": 1, "point": -0.05, "cmp_low": -0.0843, "cmp_high": -0.0171},
            {"model": "b", "rank": None, "point": None}]}}})
    rows = overview_rows(snapshot, {"a": "A", "b": "B"})
    assert [row["cells"][0]["interval"] for row in rows] == ["\u22120.084 to \u22120.017", "–"]
    # The point beside it has the same minus sign ("-0.050" sat beside "−0.084 to …").
    assert [row["cells"][0]["point"] for row in rows] == ["\u22120.050", "–"]
