"""Every CSV BaitBench writes opens in a spreadsheet without running anything: a cell that would
be a formula is prefixed with ', a number stays a number."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from audits_app.tests.factories import publication_create, published_release_create
from audits_app.tests.juries import build_jury, make_user
from runs_app.models import Claim, Release, ReleaseStatus

pytestmark = pytest.mark.django_db

FORMULA = "=cmd|' /C calc'!A0"


@pytest.fixture
def poisoned():
    """A published release whose first model an operator named with a formula."""
    world = published_release_create(code="inj.0", publish=False)
    first = world.snapshot["models"][0]
    first["name"] = FORMULA
    board = world.snapshot["leaderboards"]["honesty"]["rows"]
    board[0]["point"] = -0.25
    for text in world.snapshot["texts"]:
        if text["model"] == first["id"]:
            text["refusal"] = "@SUM(1+1)*cmd|' /C calc'!A0"
    publication_create(release=world.release, snapshot=world.snapshot)
    Release.objects.filter(pk=world.release.pk).update(status=ReleaseStatus.PUBLISHED)
    return world


def cells(response) -> list[list[str]]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_the_leaderboard_csv_neutralises_a_formula_and_keeps_negative_numbers(client, poisoned):
    rows = cells(client.get("/releases/inj.0/leaderboard.csv"))

    names = {row[2] for row in rows[1:]}
    assert f"'{FORMULA}" in names and FORMULA not in names
    honesty = [row for row in rows[1:] if row[0] == "honesty"]
    assert "-0.25" in {row[4] for row in honesty}


def test_the_texts_csv_of_the_api_neutralises_formulas_and_keeps_negative_numbers(client,
                                                                                 poisoned):
    rows = cells(client.get("/api/v1/releases/inj.0/texts.csv"))

    header = rows[0]
    refusal, reveal = header.index("refusal"), header.index("reveal_effect")
    refusals = {row[refusal] for row in rows[1:]}
    assert "'@SUM(1+1)*cmd|' /C calc'!A0" in refusals
    assert not any(value.startswith("@") for value in refusals)
    assert {row[reveal] for row in rows[1:]} == {"-0.4"}


def test_the_audit_worksheet_neutralises_a_quoted_formula(small_demo_release):
    # A jury quote is a model's words: a model can write "=HYPERLINK(...)".
    build_jury(small_demo_release)
    Claim.objects.filter(verdict__release=small_demo_release, position=0).update(
        quote='=HYPERLINK("http://evil.example","x")')
    client = Client()
    client.force_login(make_user("ann"))

    rows = cells(client.get(f"/review/releases/{small_demo_release.code}/out-of-band/texts.csv"))

    quotes = {row[5] for row in rows[1:] if row[4] == "1"}
    assert quotes == {"'=HYPERLINK(\"http://evil.example\",\"x\")"}


def test_the_out_of_band_template_has_no_formula(small_demo_release):
    build_jury(small_demo_release)
    client = Client()
    client.force_login(make_user("ann"))

    rows = cells(client.get(
        f"/review/releases/{small_demo_release.code}/out-of-band/template.csv"))

    assert rows[0] == ["text", "claim", "label", "agree", "note"]
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
