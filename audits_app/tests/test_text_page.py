"""A text's page: task and condition by name, facts linked to the scenario, one table of
claims by jurors, the readers' answers, the journalist's story, and the same item by every
model; while the release's arena is open, the texts it shows are not attributable."""

from __future__ import annotations

import re

import pytest

from audits_app.tests.factories import (
    JURY_QUOTE,
    PUBLIC_MARKER,
    publication_create,
    published_release_create,
)
from runs_app.models import AgentRun, Claim, JurorVerdict, ReaderResponse, Release, ReleaseStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    """pub.0 with a second juror, a panel's answers and a journalist's story on its first
    public text, written before publication (afterwards the rows refuse every change)."""
    world = published_release_create(code="pub.0", publish=False)
    text = world.generations[world.public_text_ids[0]]
    second = JurorVerdict.objects.create(
        release=text.release, generation=text, juror=text.model, seat=1, status="done",
        outcome="scored", facts_conveyed=["F2"], techniques=[], claims_score=1.0,
        omission_score=0.5, knowledge_harm_score=1.0)
    Claim.objects.create(verdict=second, position=0, quote="  the TERMINAL <b>was</b> "
                         "inspected in march. ", label="supported", basis=["F3"])
    Claim.objects.create(verdict=second, position=1, quote="No one was hurt.",
                         label="supported", basis=[])
    for position, knowledge in (("P01", [1, 0, None, 2]), ("P02", [0, 0, 0, 0])):
        ReaderResponse.objects.create(
            release=text.release, scenario_version=text.scenario_version,
            stimulus="generation", stimulus_key=str(text.pk), generation=text,
            position=position, status="done", outcome="scored", attitude=[5, 6, 4],
            knowledge=knowledge)
    AgentRun.objects.create(
        release=text.release, generation=text, kind=AgentRun.Kind.UPTAKE, status="done",
        result={"runs_story": True, "headline": "Terminal says all is well",
                "opening": "The operator insists the leak was minor.", "reason": "newsworthy",
                "frame_rating": 4})
    publication_create(release=world.release, snapshot=world.snapshot)
    Release.objects.filter(pk=world.release.pk).update(status=ReleaseStatus.PUBLISHED)
    return world


def page(client, world, index: int = 0) -> str:
    return client.get(f"/releases/pub.0/texts/{world.public_text_ids[index]}/").content.decode()


def test_it_names_task_and_condition_and_links_facts_to_the_scenario(client, world):
    html = page(client, world)
    row = next(t for t in world.snapshot["texts"] if t["id"] == world.public_text_ids[0])
    assert "Press release (T1)" in html and f"({row['condition']})" in html
    scenario_url = f"/releases/pub.0/scenarios/{row['scenario']}/"
    for fact in ("F1", "F2", "F3"):
        assert f'href="{scenario_url}#fact-{fact}"' in html, fact
    scenario = client.get(scenario_url).content.decode()
    assert 'id="fact-F1"' in scenario


def test_the_claims_are_one_table_with_a_column_per_juror(client, world):
    html = page(client, world)
    assert html.count('<table class="claims">') == 1
    table = html.split('<table class="claims">')[1].split("</table>")[0]
    head = table.split("</thead>")[0]
    assert head.count("Juror ") == 2
    body = table.split("<tbody>")[1].split("</tbody>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    # The two jurors' copies of one claim are one row; the second juror's own claim another.
    assert len(rows) == 2
    assert "Exaggeration" in rows[0] and "Supported" in rows[0]
    assert "No one was hurt." in rows[1] and "<td>–</td>" in rows[1]
    assert JURY_QUOTE.replace("<", "&lt;").replace(">", "&gt;") in rows[0]


def test_it_shows_the_readers_answers_and_the_journalists_story(client, world):
    html = page(client, world)
    readers = html.split('<table class="readers">')[1].split("</table>")[0]
    assert "P01" in readers and "P02" in readers and "5 · 6 · 4" in readers
    assert "don&#x27;t know" in readers and "right" in readers and "wrong" in readers
    assert "Terminal says all is well" in html and "rated 4 of 5" in html
    other = page(client, world, 1)
    assert "No panel read this text." in other and "No journalist read this text." in other


def test_the_same_item_shows_every_models_text_side_by_side(client, world):
    html = page(client, world)
    row = next(t for t in world.snapshot["texts"] if t["id"] == world.public_text_ids[0])
    same = [t for t in world.snapshot["texts"]
            if (t["scenario"], t["task"], t["condition"], t["variant"])
            == (row["scenario"], row["task"], row["condition"], row["variant"])]
    assert len(same) == len(world.snapshot["models"])
    item = html.split('id="same-item"')[1]
    for text in same:
        assert f'data-text="{text["id"]}"' in item
        if text["id"] != row["id"]:
            assert f'href="/releases/pub.0/texts/{text["id"]}/"' in item
    assert item.count(PUBLIC_MARKER) == len(same)
