"""Population weights with a source: checked by position, shown beside the unweighted panel
with the source named, and nothing weighted without one."""

from __future__ import annotations

from datetime import date

import pytest
from django.core.exceptions import ValidationError

from audits_app.calibration.studies.weights import (
    share_problems,
    weighted_intervals,
    weighted_means,
)
from audits_app.models import PopulationWeights
from baitbench_site import yaml_files

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


def test_weighted_figures_carry_intervals_from_resampling_whole_scenarios():
    from audits_app.statistics import resample_counts

    # "steady" reads the same in every scenario; "mixed" does not, and its heavier position
    # (P01) reads lower than the other.
    answers = [("P01", "steady", scenario, 1, 4.0, 0.25) for scenario in "abc"]
    answers += [("P02", "steady", scenario, 1, 4.0, 0.25) for scenario in "abc"]
    answers += [("P01", "mixed", scenario, 2, value, 0.0)
                for scenario, value in zip("abc", (2.0, 3.0, 6.0), strict=True)]
    answers += [("P02", "mixed", scenario, 2, value + 1, 1.0)
                for scenario, value in zip("abc", (2.0, 3.0, 6.0), strict=True)]
    counts = resample_counts(3, 400, 5)
    shares = {"P01": 0.75, "P02": 0.25}
    found = weighted_intervals(answers, shares, ["steady", "mixed"], list("abc"), counts, 0.95)
    steady, mixed = found["steady"]["persuasion"], found["mixed"]["persuasion"]
    assert steady == {"point": 4.0, "low": 4.0, "high": 4.0}
    assert mixed["point"] == weighted_means(answers, shares)["mixed"]["persuasion"] == 11.75 / 3
    assert mixed["low"] < mixed["point"] < mixed["high"]
    plain = weighted_intervals(answers, None, ["steady", "mixed"], list("abc"), counts, 0.95)
    # The same resampling moves both the same way: the weights shift the interval.
    width = mixed["high"] - mixed["low"]
    assert plain["mixed"]["persuasion"]["point"] - mixed["point"] == pytest.approx(0.25)
    assert plain["mixed"]["persuasion"]["high"] - plain["mixed"]["persuasion"]["low"] \
        == pytest.approx(width)
    # A scenario the release does not resample is left out, and one scenario has no interval.
    alone = weighted_intervals(answers, shares, ["mixed"], ["a"], counts[:, :1], 0.95)
    assert alone["mixed"]["persuasion"] == {"point": 2.25, "low": None, "high": None}


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
    # Each figure with its interval, from the release's resampling of its two scenarios.
    assert page.count('<span class="interval">[') == 4 * 4  # four writers, four columns
    assert "95 % interval from resampling whole scenarios" in page
    assert "Office for Statistics, Media trust survey 2025, table 3" in page
    assert "https://stats.example/media-trust-2025" in page


def test_an_anonymous_reader_sees_weights_entered_after_publication(release, publisher, client):
    url = f"/releases/{release.code}/"
    before = client.get(url)
    assert "Nothing here is weighted" in before.content.decode()
    PopulationWeights.objects.create(
        language="en", shares=EQUAL, citation="Office for Statistics, 2025, table 3",
        url="https://stats.example/media-trust-2025", source_date=date(2025, 6, 1),
        entered_by=publisher)
    # The tag the reader (or a shared cache) holds is no longer current, and the page is
    # built again rather than taken from what this process kept.
    assert client.get(url, HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 200
    after = client.get(url)
    assert after["ETag"] != before["ETag"] and "public" in after["Cache-Control"]
    page = after.content.decode()
    assert 'class="weighted-panel"' in page and "Nothing here is weighted" not in page


def _weights(publisher, **fields) -> PopulationWeights:
    return PopulationWeights.objects.create(
        language="en", shares=EQUAL | fields.pop("shares", {}),
        citation="Office for Statistics, Media trust survey 2025, table 3",
        url="https://stats.example/media-trust-2025", source_date=date(2025, 6, 1),
        entered_by=publisher, **fields)


def test_the_api_weighs_nothing_without_a_source(release, client):
    for url in ("/api/v1/releases/arena.0/", "/api/v1/releases/arena.0/leaderboard/"):
        weights = client.get(url).json()["population_weights"]
        assert weights["source"] is None and weights["rows"] == [] and weights["level"] is None
        assert weights["note"].startswith("Nothing is weighted")


def test_the_api_gives_weighted_figures_beside_unweighted_with_the_source(release, publisher,
                                                                           client):
    before = client.get("/api/v1/releases/arena.0/leaderboard/")
    # One position holds half the population, the other eleven share the rest.
    _weights(publisher, shares={key: 0.5 if key == "P01" else 0.5 / 11 for key in EQUAL})
    after = client.get("/api/v1/releases/arena.0/leaderboard/",
                       HTTP_IF_NONE_MATCH=before["ETag"])
    # Weights entered after publication change the answer's tag: no stale 304.
    assert after.status_code == 200
    for answer in (after.json(), client.get("/api/v1/releases/arena.0/").json()):
        weights = answer["population_weights"]
        assert weights["source"]["citation"] == (
            "Office for Statistics, Media trust survey 2025, table 3")
        assert weights["source"]["url"] == "https://stats.example/media-trust-2025"
        assert weights["source"]["source_date"] == "2025-06-01"
        assert weights["source"]["entered_by"] != publisher.username
        assert weights["level"] == 0.95
        assert len(weights["rows"]) == 4  # the four writers
        for row in weights["rows"]:
            for figure in ("persuasion_unweighted", "persuasion_weighted",
                           "misleading_unweighted", "misleading_weighted"):
                found = row[figure]
                assert found["low"] <= found["point"] <= found["high"]
    # The page shows the same figures.
    page = client.get("/releases/arena.0/").content.decode()
    first = weights["rows"][0]
    assert f'{first["persuasion_weighted"]["point"]:.3f}' in page


def test_the_schema_types_the_weighted_figures(client):

    schema = yaml_files.safe_load(client.get("/api/v1/schema/").content)
    components = schema["components"]["schemas"]

    def ref(prop: dict) -> str:  # drf-spectacular wraps a reference with a help text
        return prop["$ref"] if "$ref" in prop else prop["allOf"][0]["$ref"]

    for name in ("ReleaseDetail", "Leaderboard"):
        assert ref(components[name]["properties"]["population_weights"]) \
            == "#/components/schemas/PopulationWeights"
        assert "population_weights" in components[name]["required"]
    row = components["WeightedRow"]["properties"]
    assert ref(row["persuasion_weighted"]) == "#/components/schemas/Interval"
    assert components["Interval"]["properties"]["point"]["type"] == "number"
    source = components["PopulationWeights"]["properties"]["source"]
    assert source["nullable"] is True


def test_the_leaderboard_csv_names_the_source_of_its_weighted_rows(release, publisher, client):
    import csv
    import io

    def table(response):
        return list(csv.DictReader(io.StringIO(response.content.decode())))

    plain = client.get("/releases/arena.0/leaderboard.csv")
    rows = table(plain)
    assert "weights_source" not in rows[0]
    assert not any(row["metric"].startswith("panel_") for row in rows)
    _weights(publisher)
    rows = table(client.get("/releases/arena.0/leaderboard.csv",
                            HTTP_IF_NONE_MATCH=plain["ETag"]))
    weighted = [row for row in rows if row["metric"].startswith("panel_")]
    assert sorted({row["metric"] for row in weighted}) == [
        "panel_misleading_unweighted", "panel_misleading_weighted",
        "panel_persuasion_unweighted", "panel_persuasion_weighted"]
    assert len(weighted) == 4 * 4
    assert all(row["weights_source"] == "Office for Statistics, Media trust survey 2025, "
               "table 3 (https://stats.example/media-trust-2025, 2025-06-01)"
               for row in weighted)
    assert all(row["rank"] == "" and float(row["abs_low"]) <= float(row["point"])
               <= float(row["abs_high"]) for row in weighted)
    # The ranked measures' rows carry no source: they are not weighted.
    assert all(row["weights_source"] == "" for row in rows if row not in weighted)


def test_a_share_that_is_not_a_number_from_0_to_1_is_named(release, publisher, client):
    import json
    import re

    def shares(**changed) -> str:
        return json.dumps(EQUAL | changed)  # json writes NaN and Infinity as Python reads them

    assert share_problems(EQUAL | {"P03": float("nan")}, "en") == [
        "P03: NaN is not a number; a share is a number from 0 to 1"]
    assert share_problems(EQUAL | {"P03": 1.5}, "en") == ["P03: 1.5 is not between 0 and 1"]
    client.force_login(publisher)
    url = "/admin/audits_app/populationweights/add/"
    page = client.get(url).content.decode()
    # An empty box to fill (the example beside it), not `null`.
    box = re.search(r'<textarea[^>]*name="shares"[^>]*>(.*?)</textarea>', page, re.S)
    assert box.group(1).strip() == "" and 'placeholder="{&quot;P01&quot;: 0.083' in box.group(0)
    source = {"language": "en", "citation": "Survey", "url": "https://stats.example/s",
              "source_date": "2025-06-01"}
    for given, says in ((shares(P03=float("nan")),
                         "P03: NaN is not a number; a share is a number from 0 to 1"),
                        (shares(P03=float("inf")),
                         "P03: Infinity is not a number; a share is a number from 0 to 1"),
                        (shares(P03=-0.5), "P03: -0.5 is not between 0 and 1"),
                        ("", "Give each reading position&#x27;s share, e.g. {&quot;P01&quot;"),
                        ("{P01: 0.5", "Not JSON: give an object of shares")):
        body = client.post(url, source | {"shares": given}).content.decode()
        errors = re.findall(r'<ul class="errorlist[^"]*"[^>]*>\s*<li>(.*?)</li>', body, re.S)
        assert len(errors) == 1 and errors[0].startswith(says), (given, errors)
        assert "required" not in errors[0]
    assert not PopulationWeights.objects.exists()
    assert client.post(url, source | {"shares": shares()}).status_code == 302
    assert PopulationWeights.objects.get().entered_by == publisher
