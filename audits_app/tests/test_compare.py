"""Two published releases compared, a model across releases, and the text list's order."""

from __future__ import annotations

import csv
import io

import pytest

from audits_app import compare
from audits_app.tests import factories
from audits_app.tests.factories import HELD_OUT_SLUG, published_release_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_releases(monkeypatch):
    """pub.0 with four models; pub.1 with six, and greenvale-listeria in a new version."""
    first = published_release_create(code="pub.0", model_count=4)
    original = factories.scenario_document

    def edited(slug: str, *, visibility: str = "public"):
        document = original(slug, visibility=visibility)
        if slug == "greenvale-listeria":
            document = document.model_copy(update={"title": document.title + " (revised)"})
        return document

    monkeypatch.setattr(factories, "scenario_document", edited)
    second = published_release_create(code="pub.1", model_count=6)
    return first, second


def board(rows: list[tuple[str, int, float]]) -> dict:
    return {"higher_is_better": True, "rule": "paired",
            "rows": [{"model": m, "rank": r, "point": p} for m, r, p in rows], "pairs": []}


def snapshot(code: str, models: list[str], boards: dict, scenarios: list[tuple[str, str]],
             **config) -> dict:
    return {"release": {"code": code, "config": {"ranking_rule": "paired", **config}},
            "models": [{"id": m, "name": m.upper()} for m in models],
            "scenarios": [{"slug": s, "title": s, "version_hash": h} for s, h in scenarios],
            "leaderboards": boards, "method": {"scoring_hash": "x"}}


def test_moves_additions_and_drops_per_measure():
    a = snapshot("a", ["m1", "m2", "m3"],
                 {"honesty": board([("m1", 1, 0.9), ("m2", 2, 0.8), ("m3", 3, 0.5)])},
                 [("s1", "h1"), ("s2", "h2")])
    b = snapshot("b", ["m2", "m1", "m4"],
                 {"honesty": board([("m2", 1, 0.85), ("m1", 2, 0.8), ("m4", 3, 0.7)]),
                  "uptake": board([("m2", 1, 0.3)])},
                 [("s1", "h1"), ("s2", "h2b"), ("s3", "h3")], ranking_rule="classes",
                 weights={"claims": 0.5})
    result = compare.compare_snapshots(a, b)
    honesty = {row["model"]: row for row in result["measures"][0]["rows"]}
    assert honesty["m2"]["rank_move"] == 1 and honesty["m1"]["rank_move"] == -1
    assert honesty["m2"]["point_change"] == pytest.approx(0.05)
    assert honesty["m4"]["change"] == "added" and honesty["m4"]["rank_a"] is None
    assert honesty["m3"]["change"] == "dropped" and honesty["m3"]["rank_move"] is None
    assert [row["model"] for row in result["measures"][0]["rows"]] == ["m2", "m1", "m4", "m3"]
    assert [m["metric"] for m in result["measures"]] == ["honesty", "uptake"]
    assert not result["measures"][1]["in_a"] and result["measures"][1]["in_b"]
    assert result["models_added"] == [{"id": "m4", "name": "M4"}]
    assert result["models_dropped"] == [{"id": "m3", "name": "M3"}]
    assert result["scenarios"]["changed"] == [
        {"slug": "s2", "title": "s2", "hash_a": "h2", "hash_b": "h2b"}]
    assert [s["slug"] for s in result["scenarios"]["added"]] == ["s3"]
    assert result["scenarios"]["unchanged"] == 1
    assert {d["field"] for d in result["config"]} == {"ranking_rule", "weights"}


def test_the_compare_page_shows_moves_new_models_and_changed_scenarios(client, two_releases):
    html = client.get("/releases/pub.0/compare/pub.1/").content.decode()
    assert "pub.0 → pub.1" in html
    assert ("In pub.1, not in pub.0: <a href=\"/models/fixture/extra-0/\">Extra model 0</a>"
            in html)
    assert "Greenvale" in html.split('id="scenarios-changed"')[1].split("</table>")[0]
    for metric in ("honesty", "persuasion", "misleading"):
        table = html.split(f'data-metric="{metric}"')[1].split("</table>")[0]
        assert table.count("<tr data-model=") == 6
    assert HELD_OUT_SLUG not in html and "Redmoor" not in html


def test_staff_see_held_out_scenarios_in_a_comparison(admin_client, two_releases):
    html = admin_client.get("/releases/pub.0/compare/pub.1/").content.decode()
    assert "scenarios with the same pinned version in both" in html
    assert "2 scenarios with the same pinned version" in html  # two public + one held out


def test_the_comparison_as_csv_and_as_an_api_answer(client, two_releases):
    answer = client.get("/api/v1/releases/pub.0/compare/pub.1/").json()
    assert answer["a"] == "pub.0" and answer["b"] == "pub.1"
    assert [m["id"] for m in answer["models_added"]] == ["fixture/extra-0", "fixture/extra-1"]
    assert [c["slug"] for c in answer["scenarios"]["changed"]] == ["greenvale-listeria"]
    response = client.get("/releases/pub.0/compare/pub.1.csv")
    assert response["Content-Disposition"] == 'attachment; filename="pub.0-vs-pub.1.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    # Every measure both snapshots rank (the three main ones first), a row per model of either.
    assert [m["metric"] for m in answer["measures"]][:3] == ["honesty", "persuasion", "misleading"]
    assert len(rows) == sum(len(m["rows"]) for m in answer["measures"]) == 6 * len(
        answer["measures"])
    candid = next(r for r in rows if r["metric"] == "honesty" and r["model"] == "fixture/candid")
    api_candid = next(r for r in answer["measures"][0]["rows"] if r["model"] == "fixture/candid")
    assert int(candid["rank_b"]) == api_candid["rank_b"]


def test_a_comparison_needs_two_published_releases(client, admin_client, two_releases):
    published_release_create(code="draft.0", publish=False)
    for url in ("/releases/pub.0/compare/draft.0/", "/releases/nope/compare/pub.1/",
                "/api/v1/releases/pub.0/compare/draft.0/", "/releases/draft.0/compare/pub.0.csv"):
        assert client.get(url).status_code == 404, url
        assert admin_client.get(url).status_code == 404, url


def test_the_release_list_links_each_release_to_the_one_before(client, two_releases):
    html = client.get("/").content.decode()
    assert 'href="/releases/pub.0/compare/pub.1/">with pub.0</a>' in html
    assert client.get("/compare/?a=pub.0&b=pub.1").url == "/releases/pub.0/compare/pub.1/"


def test_a_model_across_releases_and_measures(client, two_releases):
    html = client.get("/models/fixture/candid/").content.decode()
    assert "<h1>Candid &lt;b&gt;&amp; co&lt;/b&gt;</h1>" in html
    for metric in ("honesty", "persuasion", "misleading"):
        table = html.split(f'data-metric="{metric}"')[1].split("</table>")[0]
        assert 'href="/releases/pub.0/"' in table and 'href="/releases/pub.1/"' in table
    extra = client.get("/api/v1/models/fixture/extra-0/").json()
    assert extra["releases"] == ["pub.1"] and {e["metric"] for e in extra["entries"]} >= {
        "honesty", "persuasion", "misleading"}
    assert {e["models"] for e in extra["entries"]} == {6}
    rows = list(csv.DictReader(io.StringIO(client.get("/models/fixture/candid.csv")
                                           .content.decode())))
    # A row per release and measure that ranks the model (candid is in both releases).
    candid = client.get("/api/v1/models/fixture/candid/").json()
    assert len(rows) == len(candid["entries"]) and {r["release"] for r in rows} == {
        "pub.0", "pub.1"}
    assert client.get("/models/fixture/nobody/").status_code == 404
    assert client.get("/api/v1/models/fixture/nobody/").status_code == 404


def test_the_release_page_links_each_model_to_its_history(client, two_releases):
    html = client.get("/releases/pub.1/").content.decode()
    ranks = html.split('data-metric="honesty"')[1].split("</table>")[0]
    assert 'href="/models/fixture/extra-1/"' in ranks and 'class="ranks sortable"' in html


def test_the_text_list_sorts_every_page_and_links_its_csv(client, two_releases):
    html = client.get("/releases/pub.0/texts/?model=fixture/spinner&order=-persuasion"
                      ).content.decode()
    assert 'href="/api/v1/releases/pub.0/texts.csv?model=fixture%2Fspinner"' in html
    assert 'aria-sort="descending"><a href="?model=fixture%2Fspinner&amp;order=persuasion"' in (
        html)
    body = client.get("/api/v1/releases/pub.0/texts/?model=fixture/spinner&limit=100").json()
    expected = sorted((t["persuasion"] for t in body["results"] if t["persuasion"] is not None),
                      reverse=True)
    first_page = [float(cell) for cell in _column(html, 8)]
    assert first_page == [round(value, 2) for value in expected][:len(first_page)]


def _column(html: str, index: int) -> list[str]:
    import re

    body = html.split("<tbody>")[1].split("</tbody>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[index] for row in rows]
