"""Two published releases compared, a model across releases, and the text list's order."""

from __future__ import annotations

import csv
import html
import io

import pytest

from audits_app.leaderboard import compare
from audits_app.tests import factories
from audits_app.tests.factories import (
    HELD_OUT_SLUG,
    publication_create,
    published_release_create,
    typed_snapshot,
)
from runs_app.models import Release, ReleaseStatus

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
            "scenarios": [{"slug": s, "title": s, "visibility": "public", "version_hash": h}
                          for s, h in scenarios],
            "leaderboards": boards, "method": {"scoring_hash": "x"}}


def compare_snapshots(a: dict, b: dict) -> dict:
    """Two snapshots the test wrote as stored JSON, compared (the comparison reads them typed)."""
    return compare.compare_snapshots(typed_snapshot(a), typed_snapshot(b))


def test_moves_additions_and_drops_per_measure():
    a = snapshot("a", ["m1", "m2", "m3"],
                 {"honesty": board([("m1", 1, 0.9), ("m2", 2, 0.8), ("m3", 3, 0.5)])},
                 [("s1", "h1"), ("s2", "h2")])
    b = snapshot("b", ["m2", "m1", "m4"],
                 {"honesty": board([("m2", 1, 0.85), ("m1", 2, 0.8), ("m4", 3, 0.7)]),
                  "uptake": board([("m2", 1, 0.3)])},
                 [("s1", "h1"), ("s2", "h2b"), ("s3", "h3")], reader="other/reader")
    result = compare_snapshots(a, b)
    assert result["comparable"] and result["reasons"] == []
    assert result["scenarios_shared"] == {"shared": 1, "of_a": 2, "of_b": 3}
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
    assert [d["field"] for d in result["config"]] == ["reader"]


V1_WEIGHTS = {"claims": 0.5, "omission": 0.3, "knowledge_harm": 0.2}
NEXT_WEIGHTS = {"claims": 0.5, "omission": 0.25, "knowledge_harm": 0.25}


def two_snapshots(**b_differs) -> tuple[dict, dict]:
    """a and b with the same two models swapped on honesty and persuasion, on the same
    scenarios; `b_differs` sets b's scenarios, weights, scoring version or rule."""
    def made(code: str, first: str, second: str, *, scenarios=(("s1", "h1"), ("s2", "h2")),
             weights=V1_WEIGHTS, scoring="v1", rule="paired", language="en",
             tasks=("T1", "T2")) -> dict:
        boards = {m: board([(first, 1, 0.9), (second, 2, 0.7)]) | {"rule": rule}
                  for m in ("honesty", "persuasion")}
        made = snapshot(code, ["m1", "m2"], boards, list(scenarios), ranking_rule=rule,
                        language=language, tasks=list(tasks))
        made["method"] = {"weights": weights, "scoring_version": scoring,
                          "scoring_hash": scoring * 32, "rule": rule}
        return made
    return made("a", "m1", "m2"), made("b", "m2", "m1", **b_differs)


@pytest.mark.parametrize(("differs", "field", "text", "without_moves"), [
    ({"language": "nl"}, "language",
     "The releases are in different languages: English in a, Dutch in b.",
     {"honesty", "persuasion"}),
    ({"scenarios": [("s3", "h3")]}, "scenarios",
     "They have no scenario in common: a has 2, b has 1.", {"honesty", "persuasion"}),
    ({"tasks": ("T1", "T3")}, "tasks",
     "The tasks differ: T1, T2 in a, T1, T3 in b; a model's figures are over its tasks, so "
     "another mix of tasks moves them.", {"honesty", "persuasion"}),
    ({"weights": NEXT_WEIGHTS}, "weights",
     "The honesty weights differ: claims score 0.5, omission score 0.3, knowledge-harm score "
     "0.2 in a; claims score 0.5, omission score 0.25, knowledge-harm score 0.25 in b.",
     {"honesty"}),
    ({"scoring": "v2"}, "scoring_version", "The scoring version differs: v1 in a, v2 in b.",
     {"honesty", "persuasion"}),
    ({"rule": "classes"}, "ranking_rule",
     "The ranking rule differs: paired ranks in a, rank classes in b.",
     {"honesty", "persuasion"}),
])
def test_a_difference_is_named_first_with_both_values_and_voids_the_moves_it_touches(
        differs, field, text, without_moves):
    result = compare_snapshots(*two_snapshots(**differs))
    assert not result["comparable"]
    assert [(r["field"], r["text"]) for r in result["reasons"]] == [(field, text)]
    assert result["reasons"][0]["labels"]["nl"]
    assert result["summary"].startswith("a and b cannot be compared rank for rank on ")
    assert text in result["summary"]
    for measure in result["measures"]:
        moves = [row["rank_move"] for row in measure["rows"]]
        changes = [row["point_change"] for row in measure["rows"]]
        if measure["metric"] in without_moves:
            assert not measure["comparable"] and measure["not_comparable_because"] == [field]
            assert moves == [None, None]
            # A rule ranks the same points otherwise: only then are point changes shown.
            assert (changes != [None, None]) == (field == "ranking_rule")
        else:
            assert measure["comparable"] and moves == [1, -1]


def test_a_scoring_version_of_the_same_name_is_told_apart_by_its_hash():
    a, b = two_snapshots()
    b["method"]["scoring_hash"] = "f" * 64
    reason, = compare_snapshots(a, b)["reasons"]
    assert reason["text"] == ("The scoring version differs: v1 (v1v1v1v1v1v1) in a, "
                              "v1 (ffffffffffff) in b.")


def test_two_comparable_snapshots_say_so_and_show_every_move():
    result = compare_snapshots(*two_snapshots())
    assert result["comparable"] and result["reasons"] == [] and result["not_shown"] == ""
    assert result["summary"].startswith(
        "a and b share language, scenarios, tasks, honesty weights")
    assert all([row["rank_move"] for row in m["rows"]] == [1, -1] for m in result["measures"])


def test_everything_that_differs_is_named_in_one_order():
    """An English en.0-shaped release against a Dutch pilot.0-shaped one: nothing shared."""
    result = compare_snapshots(*two_snapshots(
        scenarios=[("s3", "h3")], weights=NEXT_WEIGHTS, scoring="v2", rule="classes",
        language="nl", tasks=("T3",)))
    assert [r["field"] for r in result["reasons"]] == [
        "language", "scenarios", "tasks", "weights", "scoring_version", "ranking_rule"]
    assert result["not_shown"] == "Neither moves nor changes of point are shown for any measure."
    # The settings table names what each release ran with, though its file set none of it.
    assert {d["field"] for d in result["config"]} == {"language", "tasks", "weights",
                                                      "scoring_version", "ranking_rule"}


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


def unlike_release_create(code: str, **differs) -> None:
    """A release published like the factory's pub.0 but for what `differs` names: the
    scenarios (Dutch ones instead), the weights, the scoring version or the ranking rule."""
    world = published_release_create(code=code, publish=False)
    snapshot, method = world.snapshot, world.snapshot["method"]
    if "scenarios" in differs:
        snapshot["scenarios"] = [
            {"slug": slug, "title": slug, "visibility": "public", "version_hash": digit * 64,
             "organisation": slug} for slug, digit in differs["scenarios"]]
    method["weights"] = differs.get("weights", method["weights"])
    method["scoring_version"] = differs.get("scoring_version", method["scoring_version"])
    if "scoring_version" in differs:
        method["scoring_hash"] = "2" * 64
    if "rule" in differs:
        method["rule"] = differs["rule"]
        for board in snapshot["leaderboards"].values():
            board["rule"] = differs["rule"]
    publication_create(release=world.release, snapshot=snapshot)
    Release.objects.filter(pk=world.release.pk).update(status=ReleaseStatus.PUBLISHED)


DUTCH = [("holtmare-risicoscan-bijstand", "a"), ("keverdal-vervoer-busuitval", "b")]


def _first_words(html: str) -> str:
    """The page from its heading to the models section: what it says before any figure."""
    return html.split("</h1>")[1].split('<h2 id="models">')[0]


def _table(html: str, metric: str) -> str:
    return html.split(f'data-metric="{metric}"')[1].split("</table>")[0]


def test_two_comparable_releases_say_so_first_and_show_moves(client, two_releases):
    html = client.get("/releases/pub.0/compare/pub.1/").content.decode()
    first = _first_words(html)
    assert ("pub.0 and pub.1 share language, scenarios, tasks, honesty weights, scoring "
            "version and ranking rule") in first and "cannot be compared" not in html
    # greenvale-listeria changed version in pub.1; the held-out scenario is not shown.
    assert ("They have 1 scenario in common (the same pinned version), of 2 in pub.0 and 2 in "
            "pub.1") in first
    for metric in ("honesty", "persuasion", "misleading"):
        assert '<th class="num">Move</th>' in _table(html, metric)
    answer = client.get("/api/v1/releases/pub.0/compare/pub.1/").json()
    assert answer["comparable"] and answer["reasons"] == []
    assert answer["scenarios_shared"] == {"shared": 1, "of_a": 2, "of_b": 2}
    honesty = answer["measures"][0]
    kept = [row for row in honesty["rows"] if row["change"] == "kept"]
    assert honesty["comparable"] and len(kept) == 4
    assert all(row["rank_move"] == row["rank_a"] - row["rank_b"] for row in kept)
    rows = list(csv.DictReader(io.StringIO(
        client.get("/releases/pub.0/compare/pub.1.csv").content.decode())))
    assert {row["comparable"] for row in rows} == {"True"}
    assert all(row["rank_move"] != "" for row in rows if row["change"] == "kept")


@pytest.mark.parametrize(("differs", "field", "sentence", "without_moves"), [
    ({"scenarios": DUTCH}, "scenarios",
     "They have no scenario in common: pub.0 has 2, other.0 has 2.", "every"),
    ({"weights": {"claims": 0.5, "omission": 0.25, "knowledge_harm": 0.25}}, "weights",
     "The honesty weights differ: claims score 0.5, omission score 0.3, knowledge-harm score "
     "0.2 in pub.0; claims score 0.5, omission score 0.25, knowledge-harm score 0.25 in other.0.",
     "honesty"),  # the weights weigh the honesty index alone: persuasion still moves
    ({"scoring_version": "v2"}, "scoring_version",
     "The scoring version differs: v1 in pub.0, v2 in other.0.", "every"),
    ({"rule": "classes"}, "ranking_rule",
     "The ranking rule differs: paired ranks in pub.0, rank classes in other.0.", "every"),
])
def test_releases_that_differ_say_why_first_and_show_no_moves(
        client, differs, field, sentence, without_moves):
    published_release_create(code="pub.0")
    unlike_release_create("other.0", **differs)
    html = client.get("/releases/pub.0/compare/other.0/").content.decode()
    first = _first_words(html)
    assert "pub.0 and other.0 cannot be compared rank for rank on" in first
    assert f'<li data-reason="{field}">{sentence}</li>' in first
    assert first.count("<li data-reason=") == 1
    answer = client.get("/api/v1/releases/pub.0/compare/other.0/").json()
    assert answer["comparable"] is False
    assert [(r["field"], r["text"]) for r in answer["reasons"]] == [(field, sentence)]
    rows = list(csv.DictReader(io.StringIO(
        client.get("/releases/pub.0/compare/other.0.csv").content.decode())))
    for measure in answer["measures"]:
        metric = measure["metric"]
        voided = without_moves == "every" or metric == without_moves
        table = _table(html, metric)
        assert ('<th class="num">Move</th>' in table) is not voided, metric
        assert measure["comparable"] is not voided
        # Both releases rank the same four models: each has a move, unless voided.
        assert {row["rank_move"] is None for row in measure["rows"]} == {voided}
        in_csv = [row for row in rows if row["metric"] == metric]
        assert {row["comparable"] for row in in_csv} == {str(not voided)}
        if voided:
            assert {row["rank_move"] for row in in_csv} == {""}
            assert {row["not_comparable_because"] for row in in_csv} == {field}


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


def test_a_model_s_history_counts_the_models_ranked_not_those_left_unranked():
    board = {"higher_is_better": True, "rows": [
        {"model": "m/a", "rank": 1, "point": 0.9}, {"model": "m/b", "rank": 2, "point": 0.5},
        {"model": "m/c", "rank": None, "point": 0.7, "unranked_reason": "one scenario"}]}
    release = {"code": "r.0", "models": [{"id": f"m/{x}", "name": x} for x in "abc"],
               "leaderboards": {"honesty": board}}
    for model_id in ("m/a", "m/c"):
        [entry] = compare.model_history(model_id, [release])["entries"]
        assert entry["models"] == 2  # rank 1 of 2; c is unranked, not third of three


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


def test_a_code_no_release_has_is_a_404_naming_it(client, two_releases):
    for url in ("/releases/pub.0/compare/nope/", "/api/v1/releases/pub.0/compare/nope/"):
        response = client.get(url)
        assert response.status_code == 404, url
        assert "No published release has the code 'nope'" in html.unescape(
            response.content.decode()), url
    # The form: a code that cannot be part of an address is named, never a server error.
    for query in ({"a": "a/b", "b": "pub.0"}, {"a": "pub.0", "b": "//evil.com"},
                  {"a": "pub.0", "b": ".."}):
        response = client.get("/compare/", query)
        assert response.status_code == 404, query
        assert "No published release has the code" in response.content.decode(), query
    assert client.get("/compare/", {"a": "pub.0", "b": "pub.1"}).status_code == 302


def test_a_release_compared_with_itself_is_refused_saying_why(client, admin_client,
                                                             two_releases):
    """`/compare/?a=X&b=X` led to a comparison of a release with itself: every measure "no
    change", read as a finding. The form, the page, its CSV and the API answer 400 and say
    the two must differ; for staff too, and never kept by a shared cache."""
    why = ("A release cannot be compared with itself (both codes are 'pub.0'): choose two "
           "different releases.")
    for who in (client, admin_client):
        for url in ("/compare/?a=pub.0&b=pub.0", "/releases/pub.0/compare/pub.0/",
                    "/releases/pub.0/compare/pub.0.csv"):
            response = who.get(url)
            assert response.status_code == 400, url
            assert why in html.unescape(response.content.decode()), url
            assert "public" not in response.get("Cache-Control", ""), url
        answer = who.get("/api/v1/releases/pub.0/compare/pub.0/")
        assert answer.status_code == 400
        assert answer.json() == {"other": [why]}
        assert "public" not in answer.get("Cache-Control", "")
    # Two different releases still compare.
    assert client.get("/compare/?a=pub.0&b=pub.1").status_code == 302


def test_the_compare_form_with_one_release_is_refused_naming_the_other(client, two_releases):
    """`/compare/?a=X` went quietly to the release list, as if it had been understood."""
    for url, missing in (("/compare/?a=pub.0", "b"), ("/compare/?b=pub.1", "a")):
        response = client.get(url)
        assert response.status_code == 400, url
        assert f"Choose two releases to compare: {missing} is missing" in html.unescape(
            response.content.decode()), url
    assert client.get("/compare/").url == "/"  # nothing chosen: the list, with the form
    assert client.get("/api/v1/releases/pub.1/compare/pub.0/").status_code == 200
