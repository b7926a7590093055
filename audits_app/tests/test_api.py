"""The public API under /api/v1/ (DESIGN section 8)."""

from __future__ import annotations

import json
import re

import pytest
import schemathesis
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from audits_app import http_cache
from audits_app.models import SpotCheck
from audits_app.pages import viewer as public
from audits_app.tests.factories import (
    HELD_OUT_MARKER,
    HELD_OUT_SLUG,
    published_release_create,
)
from runs_app.models import Generation, LlmModel
from scenarios_app.models import ScenarioVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return published_release_create(code="pub.0")


@pytest.fixture
def draft():
    return published_release_create(code="draft.0", publish=False)


@pytest.fixture
def staff_client(django_user_model):
    user = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    staff = Client()
    staff.force_login(user)
    return staff


ANONYMOUS_URLS = [
    "/api/v1/releases/", "/api/v1/releases/pub.0/", "/api/v1/releases/pub.0/leaderboard/",
    "/api/v1/releases/pub.0/texts/", "/api/v1/releases/pub.0/texts/?limit=1000",
    "/api/v1/releases/pub.0/texts.csv", "/api/v1/scenarios/",
]


def test_every_endpoint_answers_anonymously(client, world):
    for url in ANONYMOUS_URLS:
        assert client.get(url).status_code == 200, url
    releases = client.get("/api/v1/releases/").json()
    assert [r["code"] for r in releases["results"]] == ["pub.0"]
    assert releases["results"][0]["models"] == 4


def test_drafts_are_404_for_anonymous_and_visible_to_staff(client, staff_client, world, draft):
    for suffix in ["", "leaderboard/", "texts/", "texts.csv"]:
        assert client.get(f"/api/v1/releases/draft.0/{suffix}").status_code == 404, suffix
    assert "draft.0" not in client.get("/api/v1/releases/").content.decode()
    detail = staff_client.get("/api/v1/releases/draft.0/").json()
    assert detail["published"] is False
    assert client.get("/api/v1/releases/pub.0/leaderboard/").json()["published"] is True


def role_client(name: str, roles: tuple[str, ...] = (), **flags) -> tuple[Client, object]:
    user = User.objects.create_user(name, password="pw", **flags)
    user.groups.add(*Group.objects.filter(name__in=roles))
    signed_in = Client()
    signed_in.force_login(user)
    return signed_in, user


# Who may see a draft's pages, and so its answer: (name, roles, flags, sees it).
DRAFT_VIEWERS = [
    ("visitor", (), {}, False),
    ("staff", (), {"is_staff": True}, True),
    ("auditor", ("auditor",), {"is_staff": True}, False),
    ("publisher", ("publisher",), {"is_staff": True}, True),
    ("operator", ("operator",), {"is_staff": True}, True),
    ("curator", ("curator",), {"is_staff": True}, True),
    ("auditor-publisher", ("auditor", "publisher"), {"is_staff": True}, True),
    ("root", (), {"is_staff": True, "is_superuser": True}, True),
]


@pytest.mark.parametrize(("name", "roles", "flags", "sees"), DRAFT_VIEWERS,
                         ids=[row[0] for row in DRAFT_VIEWERS])
def test_a_drafts_answer_opens_to_whoever_opens_its_pages_and_to_nobody_else(
        world, small_demo_release, name, roles, flags, sees):
    """The API agrees with the pages (`may_see_draft`): an auditor who checks texts blind
    never reads a draft's writers in its answer. Its leaderboard answers whoever its
    description answers, computed now as its draft page shows it (it was a 404 for everyone,
    while the description answered 200: one release, two answers for the same person), and
    never for a shared cache. Its texts and comparisons are answered only once published."""
    who, user = role_client(name, roles, **flags)
    code = small_demo_release.code
    writer = small_demo_release.parsed_config().writers[0]
    page = who.get(f"/releases/{code}/").status_code
    detail = who.get(f"/api/v1/releases/{code}/")
    board = who.get(f"/api/v1/releases/{code}/leaderboard/")
    assert (page, detail.status_code, board.status_code) == (
        (200, 200, 200) if sees else (404, 404, 404))
    for answer in (detail, board):
        assert {"private", "no-store"} <= {
            part.strip() for part in answer["Cache-Control"].split(",")}
    if sees:
        assert detail.json()["published"] is False and board.json()["published"] is False
        assert writer in {row["model"] for row in board.json()["metrics"]["honesty"]["rows"]}
    else:
        assert writer not in detail.content.decode()
        assert writer not in board.content.decode()
    for url in [f"/api/v1/releases/{code}/texts/",
                f"/api/v1/releases/{code}/texts.csv", f"/api/v1/releases/pub.0/compare/{code}/",
                f"/api/v1/releases/{code}/compare/pub.0/"]:
        assert who.get(url).status_code == 404, url
    assert code not in who.get("/api/v1/releases/").content.decode()
    history = who.get(f"/api/v1/models/{writer}/")  # pub.0 ranks it; the draft adds nothing
    assert history.status_code == 200 and code not in history.content.decode()
    if sees and roles:
        # Nobody reads the draft of a release in which they have a check still to do.
        generation = Generation.objects.create(
            release=small_demo_release, model=LlmModel.objects.get(openrouter_id=writer),
            scenario_version=ScenarioVersion.objects.filter(
                scenario__slug="greenvale-listeria").first(),
            task="T1", condition="C0", status="done", text="A text to check blind.")
        SpotCheck.objects.create(release=small_demo_release, auditor=user, generation=generation)
        assert who.get(f"/releases/{code}/").status_code == 404
        assert who.get(f"/api/v1/releases/{code}/").status_code == 404
        assert who.get(f"/api/v1/releases/{code}/leaderboard/").status_code == 404


def test_no_held_out_text_or_confidential_fact_in_anonymous_answers(client, world, draft):
    for url in ANONYMOUS_URLS:
        body = client.get(url).content.decode()
        assert HELD_OUT_SLUG not in body, url
        assert HELD_OUT_MARKER not in body, url
        for confidential in world.confidential_texts:
            assert json.dumps(confidential)[1:-1] not in body and confidential not in body, url
    scenarios = client.get("/api/v1/scenarios/").json()["results"]
    assert {s["slug"] for s in scenarios} == {"greenvale-listeria", "cobaltcloud-breach"}
    assert all(s["confidential"] is None for s in scenarios)
    assert {f["label"] for f in scenarios[0]["facts"]} >= {"incriminating", "favourable"}


def test_staff_see_held_out_texts_and_confidential_facts(staff_client, world):
    texts = staff_client.get(f"/api/v1/releases/pub.0/texts/?scenario={HELD_OUT_SLUG}").json()
    assert texts["count"] == 4 * 2 * 4
    scenarios = staff_client.get("/api/v1/scenarios/").json()["results"]
    held_out = next(s for s in scenarios if s["slug"] == HELD_OUT_SLUG)
    assert held_out["confidential"] and held_out["confidential"][0]["text"]


def test_the_release_answer_names_its_scoring_version(client, world):
    method = client.get("/api/v1/releases/pub.0/").json()["method"]
    assert method["scoring_version"] == "v1"
    assert method["scoring_hash"] == world.snapshot["method"]["scoring_hash"]
    assert method["juror_instruction_language"] == "en"
    overlays = {item["code"]: item["overlay"] for item in method["conditions"]}
    assert overlays["C3"].endswith("but stay within the facts.")
    assert [task["code"] for task in method["tasks"]] == ["T1", "T2"]


def test_leaderboard_has_ranks_points_and_both_intervals(client, world):
    board = client.get("/api/v1/releases/pub.0/leaderboard/").json()
    # Every link the release's stages measure (it runs no cross-examination), in page order.
    assert [m["key"] for m in board["measures"]] == [
        "refusal", "partial_refusal", "honesty", "claims", "omission", "knowledge_harm",
        "persuasion", "attitude_effect", "baseline_gain", "misleading", "uptake",
        "frame_adoption", "reveal_effect"]
    assert set(board["metrics"]) == {m["key"] for m in board["measures"]}
    assert "steadfastness" not in board["metrics"]
    for key, metric in board["metrics"].items():
        assert metric["label"] and metric["direction"], key
        row = metric["rows"][0]
        assert {"rank", "point", "abs_low", "abs_high", "cmp_low", "cmp_high", "model_name",
                "coverage", "refusal_rate", "scenarios", "n_texts"} <= set(row), key
        assert len(metric["pairs"]) == 6, key
    assert board["metrics"]["misleading"]["higher_is_better"] is False
    assert board["control"]["persuasion"] == pytest.approx(4.1)
    assert set(board["per_task"]) == {"T1", "T2"}
    assert {r["stimulus"] for r in board["anchors_overall"]} == {"control", "human", "none"}
    assert {row["model"]: row["partial_point"] for row in board["refusal_rates"]}


def test_leaderboard_carries_the_thresholds_the_reference_comparisons_and_the_caveat(
        client, staff_client, world):
    board = client.get("/api/v1/releases/pub.0/leaderboard/").json()
    models = {m["id"] for m in world.snapshot["models"]}
    damage = board["thresholds"]["c2_vs_c0"]
    assert {row["model"] for row in damage} == models
    assert all(row["metric"] == "honesty" and row["significant"] for row in damage)
    assert {row["metric"] for row in board["thresholds"]["c1_minus_c3"]} == {
        "honesty", "persuasion"}
    public_slugs = {s["slug"] for s in world.snapshot["scenarios"]
                    if s["visibility"] == "public"}
    for comparison, value in (("versus_control", "diff"), ("without_text", "gain")):
        per_scenario = board[comparison]["per_scenario"]
        assert {row["scenario"] for row in per_scenario} == public_slugs, comparison
        assert all(value in row and row["model_name"] for row in per_scenario)
        assert {row["model"] for row in board[comparison]["overall"]} == models
    assert board["versus_control"]["per_scenario"][0]["control_persuasion"] == 4.1
    assert board["without_text"]["per_scenario"][0]["no_text_persuasion"] == 3.5
    assert "ranking only, never effect sizes" in board["caveat"]
    assert board["chart"] == {"honesty": [0.0, 1.0], "persuasion": [1.0, 7.0],
                              "anchors": ["control", "human"]}
    # Staff see the held-out scenario's comparisons too.
    staff = staff_client.get("/api/v1/releases/pub.0/leaderboard/").json()
    assert HELD_OUT_SLUG in {row["scenario"] for row in staff["versus_control"]["per_scenario"]}


def test_the_schema_documents_the_leaderboards_comparisons_and_every_endpoint_as_public():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    board = schema["components"]["schemas"]["Leaderboard"]
    assert {"thresholds", "versus_control", "without_text", "chart", "caveat"} <= set(
        board["properties"])
    assert set(board["required"]) >= {"thresholds", "versus_control", "without_text", "caveat"}
    thresholds = schema["components"]["schemas"]["Thresholds"]["properties"]
    assert "Damage control (C2) minus balanced (C0)" in thresholds["c2_vs_c0"]["description"]
    # No security scheme: the docs draw no padlock and no "Authorize" for anonymous endpoints.
    assert "securitySchemes" not in schema["components"]
    operations = [op for path in schema["paths"].values() for op in path.values()]
    # `[{}]`: OpenAPI's "no credentials needed".
    assert operations and all(op.get("security") in (None, [], [{}]) for op in operations)


def test_texts_filter_and_paginate(client, world):
    url = "/api/v1/releases/pub.0/texts/"
    everything = client.get(url).json()
    assert everything["count"] == 4 * 2 * 2 * 4  # models x public scenarios x tasks x conditions
    filtered = client.get(url, {"model": "fixture/candid", "task": "T2", "condition": "C1",
                                "scenario": "greenvale-listeria"}).json()
    assert filtered["count"] == 1
    text = filtered["results"][0]
    assert (text["model"], text["task"], text["condition"], text["variant"]) == (
        "fixture/candid", "T2", "C1", 0)
    page = client.get(url, {"limit": 5, "offset": 5}).json()
    assert len(page["results"]) == 5 and page["next"] and page["previous"]
    assert page["results"][0]["id"] == everything["results"][5]["id"]


def test_a_filter_value_no_text_has_is_a_400_naming_it(client, world):
    for url in ("/api/v1/releases/pub.0/texts/", "/api/v1/releases/pub.0/texts.csv"):
        response = client.get(url, {"model": "fixture/nobody", "task": "T9"})
        assert response.status_code == 400, url
        problems = response.json()
        assert set(problems) == {"model", "task"}
        assert "no text of this release has model 'fixture/nobody'" in str(problems["model"])
        assert "it has T1, T2" in str(problems["task"])
    # A value that exists but matches nothing together with the others is no mistake.
    assert client.get("/api/v1/releases/pub.0/texts/", {"model": "fixture/candid"}).status_code \
        == 200


@pytest.mark.parametrize("url", ["/api/v1/releases/", "/api/v1/scenarios/",
                                 "/api/v1/releases/pub.0/texts/"])
def test_a_page_size_or_offset_that_is_not_a_whole_number_is_a_400_naming_it(
    client, world, url
):
    for query, name in (("limit=abc", "limit"), ("limit=0", "limit"), ("limit=-1", "limit"),
                        ("limit=1.5", "limit"), ("offset=-5", "offset"),
                        ("offset=%00", "offset")):
        response = client.get(f"{url}?{query}")
        assert response.status_code == 400, (url, query)
        assert list(response.json()) == [name], (url, query)
        assert "whole number" in str(response.json()[name])
    assert client.get(f"{url}?limit=1&offset=0").status_code == 200
    assert len(client.get(f"{url}?limit=5000").json()["results"]) <= 1000
    # A whole number too long to read is called too large, not "not a whole number".
    for name in ("limit", "offset"):
        response = client.get(f"{url}?{name}=" + "9" * 23)
        assert response.status_code == 400, (url, name)
        assert response.json() == {name: [
            f"{name} is too large: at most 999999999999999999; got '{'9' * 23}'"]}, url


UNKNOWN_PARAMETERS = [
    ("/api/v1/releases/pub.0/texts/?visibility=held", "visibility"),
    ("/api/v1/releases/pub.0/texts/?order=bogus", "order"),
    ("/api/v1/releases/pub.0/texts/?ordering=bogus", "ordering"),
    ("/api/v1/releases/pub.0/texts.csv?visibility=held", "visibility"),
    ("/api/v1/scenarios/?language=xx", "language"),
    ("/api/v1/releases/?page=abc", "page"),
    ("/api/v1/releases/?status=bogus", "status"),
    ("/api/v1/releases/pub.0/?status=bogus", "status"),
    ("/api/v1/releases/pub.0/leaderboard/?measure=bogus", "measure"),
    ("/api/v1/releases/pub.0/calibration/?measure=bogus", "measure"),
    ("/api/v1/releases/pub.0/contamination/?measure=bogus", "measure"),
    ("/api/v1/releases/pub.0/compare/pub.0/?measure=bogus", "measure"),
    ("/api/v1/models/fixture/candid/?release=pub.0", "release"),
    ("/api/v1/reader-trials/?limit=-1", "limit"),
    ("/api/v1/reader-trials/?page=abc", "page"),
    ("/api/v1/?bogus=1", "bogus"),
]


@pytest.mark.parametrize(("url", "name"), UNKNOWN_PARAMETERS)
def test_a_parameter_an_endpoint_does_not_take_is_a_400_naming_it_and_the_accepted_ones(
        client, world, url, name):
    """Read as "no filter", `?visibility=held` answered the public texts as if they were what
    was asked for."""
    response = client.get(url)
    assert response.status_code == 400, url
    assert list(response.json()) == [name], url
    (why,) = response.json()[name]
    assert why.startswith(f"unknown parameter '{name}'; this address accepts "), why
    assert "format" in why, why


def test_the_schema_answers_the_parameters_it_reads_and_refuses_others(client, world):
    for query in ("format=json", "format=yaml", "lang=en"):
        assert client.get(f"/api/v1/schema/?{query}").status_code == 200, query
    refused = client.get("/api/v1/schema/?x=1&format=json")
    assert refused.status_code == 400 and list(refused.json()) == ["x"]
    # The schema's own default is YAML; a refusal is JSON all the same, never the error
    # object's repr in YAML.
    for query in ("x=1", "x=1&format=yaml"):
        in_yaml = client.get(f"/api/v1/schema/?{query}")
        assert in_yaml.status_code == 400 and in_yaml["Content-Type"] == "application/json"
        (why,) = in_yaml.json()["x"]
        assert why.startswith("unknown parameter 'x'; this address accepts "), why


def test_a_parameter_given_twice_is_a_400_naming_it(client, world):
    for url, name in (("/api/v1/releases/?limit=1&limit=2", "limit"),
                      ("/api/v1/releases/pub.0/texts/?task=T1&task=T2", "task"),
                      ("/api/v1/releases/pub.0/texts.csv?offset=0&offset=1", "offset")):
        response = client.get(url)
        assert response.status_code == 400, url
        assert response.json() == {name: [f"{name} is given 2 times; give it once"]}, url


def test_the_schema_lists_exactly_the_parameters_each_endpoint_accepts(client):
    """The schema and the refusal read the same names; `format` (DRF's renderer choice, taken
    everywhere) is the README's, not each operation's."""
    from django.urls import resolve

    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path, operations in schema["paths"].items():
        url = path.replace("{model_id}", "fixture/candid").replace("{code}", "pub.0") \
            .replace("{other}", "pub.0")
        match = resolve(url)
        view = match.func.cls(**match.func.initkwargs)
        accepted = set(view.accepted_parameters()) - {"format"}
        listed = {parameter["name"] for parameter in operations["get"].get("parameters", [])
                  if parameter["in"] == "query"}
        assert listed == accepted, path
        assert "does not take" in operations["get"]["responses"]["400"]["description"], path


def test_texts_csv(client, world):
    response = client.get("/api/v1/releases/pub.0/texts.csv", {"model": "fixture/spinner"})
    assert response["Content-Type"].startswith("text/csv")
    lines = response.content.decode().strip().splitlines()
    assert lines[0].startswith("id,model,scenario,task,condition,variant")
    assert len(lines) == 1 + 2 * 2 * 4


def test_texts_csv_reads_limit_and_offset_as_the_list_does(client, world):
    url = "/api/v1/releases/pub.0/texts.csv"
    lines = client.get(url, {"limit": "3", "offset": "2"}).content.decode().strip().splitlines()
    every = client.get(url).content.decode().strip().splitlines()
    assert lines == [every[0], *every[3:6]]
    for query, name in (("limit=abc", "limit"), ("limit=0", "limit"), ("offset=-1", "offset")):
        response = client.get(f"{url}?{query}")
        assert response.status_code == 400, query
        assert list(response.json()) == [name] and "whole number" in response.json()[name][0]


@pytest.mark.parametrize("url", ["/api/v1/", "/api/v1/releases/", "/api/v1/releases/pub.0/",
                                 "/api/v1/releases/pub.0/texts.csv"])
def test_an_unknown_format_is_a_400_naming_the_formats(client, world, url):
    response = client.get(url, {"format": "xml"})
    assert response.status_code == 400
    assert response.json() == {"format": ["format must be one of json, api; got 'xml'"]}


def test_list_entries_carry_their_absolute_addresses(client, world):
    def followed(url: str) -> int:
        assert url.startswith("http://testserver/"), url
        return client.get(url.removeprefix("http://testserver")).status_code

    release = client.get("/api/v1/releases/").json()["results"][0]
    assert release["url"] == "http://testserver/api/v1/releases/pub.0/"
    assert release["html_url"] == "http://testserver/releases/pub.0/"
    detail = client.get(release["url"]).json()
    model = detail["models"][0]
    assert model["url"] == f"http://testserver/api/v1/models/{model['id']}/"
    assert followed(model["url"]) == followed(model["html_url"]) == 200
    assert followed(detail["scenarios"][0]["html_url"]) == 200
    text = client.get("/api/v1/releases/pub.0/texts/?limit=1").json()["results"][0]
    assert text["html_url"] == f"http://testserver/releases/pub.0/texts/{text['id']}/"
    assert followed(text["html_url"]) == 200
    scenario = client.get("/api/v1/scenarios/").json()["results"][0]
    assert len(scenario["html_urls"]) == len(scenario["releases"])
    assert all(followed(url) == 200 for url in scenario["html_urls"])
    entry = client.get(model["url"]).json()["entries"][0]
    assert followed(entry["release_url"]) == 200


def test_answers_take_constant_queries(client):
    published_release_create(code="pub.0", model_count=3)
    published_release_create(code="pub.1", model_count=9)
    counts = {}
    for code in ["pub.0", "pub.1"]:
        for url in ANONYMOUS_URLS:
            url = url.replace("pub.0", code)
            public.forget_release_list()  # count reading the list, not its kept rows
            http_cache.forget_rendered()  # and building the answer, not its kept copy
            with CaptureQueriesContext(connection) as queries:
                client.get(url)
            counts.setdefault(url.replace(code, "CODE"), set()).add(len(queries))
    # At most two queries for the answer, one for the publication's row its ETag is made of (or
    # the list of publications, for answers made of them all), and for a release's own answer
    # the evidence stamp (audits_app.http_cache) and whether its held texts were revealed (the
    # arena closed, the studies' texts revealed): one query each. The release's answer and its
    # leaderboard also look up the population weights of its language (one query when none is
    # recorded), and the leaderboard is tagged by the evidence stamp, which says whether its
    # held texts were revealed in the same query.
    assert all(len(values) == 1 and max(values) <= 7 for values in counts.values()), counts
    assert all(max(values) <= 3 for url, values in counts.items()
               if not url.endswith(("/releases/CODE/", "/leaderboard/"))), counts
    assert max(counts["/api/v1/releases/CODE/leaderboard/"]) <= 4, counts


BROWSER_REQUESTS = {
    "Accept: text/html": ("", {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}),
    "?format=api": ("format=api", {}),
    "?format=json": ("format=json", {}),
    "Accept: application/json": ("", {"HTTP_ACCEPT": "application/json"}),
}


@pytest.mark.parametrize("renderer", BROWSER_REQUESTS)
def test_every_endpoint_answers_every_renderer_without_a_server_error(
        client, staff_client, world, draft, renderer):
    query, headers = BROWSER_REQUESTS[renderer]
    for url in [*ANONYMOUS_URLS, "/api/v1/releases/draft.0/", "/api/v1/releases/draft.0/texts/",
                "/api/v1/releases/pub.0/texts/?model=fixture/candid&limit=3&offset=2"]:
        full = f"{url}{'&' if '?' in url else '?'}{query}" if query else url
        for who in (client, staff_client):
            response = who.get(full, **headers)
            assert response.status_code < 500, (renderer, full)
            # Staff see a draft's description; its texts are published with it or not at all.
            draft_hidden = "draft.0" in url and (who is client or "texts" in url)
            expected = 404 if draft_hidden else 200
            assert response.status_code == expected, (renderer, full, response.status_code)


def test_the_browsable_api_shows_the_list_endpoints_as_pages(client, world):
    for url in ["/api/v1/releases/", "/api/v1/scenarios/", "/api/v1/releases/pub.0/texts/"]:
        response = client.get(url, HTTP_ACCEPT="text/html")
        assert response["Content-Type"].startswith("text/html"), url
        body = response.content.decode()
        assert "&quot;count&quot;" in body or '"count"' in body, url
    texts = client.get("/api/v1/releases/pub.0/texts/?format=api&limit=5").content.decode()
    assert "fixture/candid" in texts and "limit=5&amp;offset=5" in texts  # its page links


def test_api_docs_are_served_from_the_projects_own_static_files(client):
    response = client.get("/api/v1/docs/")

    assert response.status_code == 200
    body = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', body)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    assert all(a.startswith("/static/drf_spectacular_sidecar/") for a in assets), assets
    assert "/api/v1/schema/" in body and '"validatorUrl": null' in body
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


def test_schema_is_valid_openapi(client):
    from drf_spectacular.validation import validate_schema

    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    validate_schema(schema)  # raises on a schema that is not valid OpenAPI 3
    assert "/api/v1/releases/{code}/leaderboard/" in schema["paths"]
    text_parameters = {p["name"] for p in
                       schema["paths"]["/api/v1/releases/{code}/texts/"]["get"]["parameters"]}
    assert {"model", "scenario", "task", "condition", "limit", "offset"} <= text_parameters


# Server errors, and answers that stray from what the schema promises.
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance,
          content_type_conformance]


@pytest.mark.django_db(transaction=True)
def test_schemathesis_finds_no_server_error():
    """Every operation, fuzzed: JSON answers keep to the schema, and the same requests from
    a browser (`Accept: text/html`, the browsable renderer) never get a server error."""
    from baitbench_site.wsgi import application

    published_release_create(code="pub.0")
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)
    schema.config.generation.update(max_examples=20)
    failures, statuses, html_types = [], [], set()
    for operation in schema.get_all_operations():
        operation = operation.ok()
        strategy = operation.as_strategy()

        from hypothesis import HealthCheck, given, settings

        @given(case=strategy)
        @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
        def run(case):
            if "code" in case.path_parameters and hash(case.path_parameters["code"]) % 2:
                case.path_parameters["code"] = "pub.0"
            response = case.call_and_validate(checks=CHECKS)
            statuses.append(response.status_code)
            in_browser = case.call(headers={"Accept": "text/html"})
            assert in_browser.status_code < 500, (
                f"{in_browser.status_code} for a browser on {case.formatted_path}")
            headers = {name.lower(): values for name, values in in_browser.headers.items()}
            html_types.add(headers["content-type"][0].split(";")[0])

        try:
            run()
        except Exception as error:  # collect every operation's failure, then report
            failures.append(f"{operation.label}: {error}")
    assert not failures, "\n".join(failures)
    assert 200 in statuses and 404 in statuses and len(statuses) > 50
    assert "text/html" in html_types


def test_the_api_starts_at_a_root_that_links_every_collection(client):
    answer = client.get("/api/v1/", HTTP_ACCEPT="application/json")
    assert answer.status_code == 200
    body = answer.json()
    for key in ("releases", "scenarios", "reader_trials", "schema", "docs"):
        assert client.get(body[key]).status_code == 200, key
    assert client.get("/api/v1/", HTTP_ACCEPT="text/html").status_code == 200


def test_the_api_without_a_version_sends_its_reader_to_the_one_served(client):
    answer = client.get("/api/")
    assert (answer.status_code, answer["Location"]) == (302, "/api/v1/")
    assert client.head("/api/").status_code == 302
    assert client.post("/api/").status_code == 405


def test_the_api_docs_redirect_away_a_parameter_they_do_not_read(client):
    """Swagger UI's page reads `lang` and `version` (passed on to the schema's URL); any
    other parameter is redirected away, the ones it reads kept, as on every other public
    page; one of them given twice is the site's 400 page."""
    redirected = client.get("/api/v1/docs/?bogus=1&version=1&utm_source=x")
    assert redirected.status_code == 301
    assert redirected["Location"] == "/api/v1/docs/?version=1"
    refused = client.get("/api/v1/docs/?lang=en&lang=de")
    assert refused.status_code == 400 and "Lang is given 2 times" in refused.content.decode()
    assert client.get("/api/v1/docs/", {"version": "1"}).status_code == 200
