"""Population weights with a source: checked by position, shown beside the unweighted panel
with the source named, and nothing weighted without one."""

from __future__ import annotations

from datetime import date

import pytest
from django.core.exceptions import ValidationError

from audits_app.calibration.studies.weights import share_problems, weighted_means
from audits_app.models import PopulationWeights

EQUAL = {f"P{n:02d}": 1 / 12 for n in range(1, 13)}


def test_shares_are_checked_position_by_position():
    assert share_problems(EQUAL, "en") == []
    assert share_problems(EQUAL | {"P13": 0.1}, "en")[0] == (
        "P13: not a reading position of panel v1")
    broken = dict(EQUAL)
    del broken["P04"]
    assert "P04: missing" in share_problems(broken, "en")
    assert share_problems(EQUAL | {"P01": True}, "en") == [
        "P01: True is not a share (a number from 0 to 1)"]
    assert share_problems(EQUAL | {"P01": 0.5}, "en")[0].startswith("the shares sum to 1.417")


def test_weights_move_the_panel_towards_the_heavier_position():
    answers = [("P01", "m", "s", 1, 2.0, 0.0), ("P02", "m", "s", 1, 6.0, 1.0)]
    assert weighted_means(answers, None)["m"] == {"persuasion": 4.0, "misleading": 0.5}
    heavy = weighted_means(answers, {"P01": 0.75, "P02": 0.25})["m"]
    assert heavy == {"persuasion": 3.0, "misleading": 0.25}


def test_the_page_says_nothing_is_weighted_without_a_source(release, client):
    page = client.get("/releases/arena.0/").content.decode()
    assert "Nothing here is weighted" in page and 'class="weighted-panel"' not in page


def test_the_page_names_the_source_beside_the_weighted_figures(release, publisher, client):
    weights = PopulationWeights(
        language="en", shares=EQUAL | {"P01": 0.5},
        citation="Office for Statistics, Media trust survey 2025, table 3",
        url="https://stats.example/media-trust-2025", source_date=date(2025, 6, 1),
        entered_by=publisher)
    with pytest.raises(ValidationError, match="sum to"):
        weights.full_clean()
    weights.shares = EQUAL
    weights.full_clean()
    weights.save()
    page = client.get("/releases/arena.0/").content.decode()
    assert 'class="weighted-panel"' in page
    assert "Office for Statistics, Media trust survey 2025, table 3" in page
    assert "https://stats.example/media-trust-2025" in page
