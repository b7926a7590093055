"""Held texts stay held on the staff review screens and in the figures per scenario too: the
out-of-band audit's list, worksheet and text pages follow the public pages' rule (only
publishers see a held text before its holder reveals it), and a held scenario's per-model
figures (gain over no text, persuasion minus control), which tell which model wrote the more
favourable texts there, are left out of its page, the release page, the API answer and the
public archive, with the reason said, while the overall figures stay as published."""

from __future__ import annotations

import csv
import html
import io
import json
import zipfile

import pytest

from audits_app.arena.services import arena_close
from audits_app.arena.tests.conftest import published_arena_release, staff_user
from audits_app.calibration.studies.services import study_texts_reveal
from audits_app.pages.viewer import load_snapshot
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from audits_app.tests.juries import jury_verdicts_write
from audits_app.text_codes import text_code
from runs_app.models import JurorVerdict, ReplyOutcome, WorkStatus

CODE = "held.0"
NAMES = ("candid", "advocate", "spinner", "refuser")
HELD_FOR = {Holder.ARENA: "the release's arena, until the arena closes",
            Holder.READING_STUDIES: "the release's reading studies, until they are revealed"}


def _held_release(holder: Holder):
    """Half of the two public scenarios held by `holder`, the other public."""
    shares = {"held_share": 0.5, "study_share": 0.0} if holder == Holder.ARENA else \
        {"held_share": 0.0, "study_share": 0.5}
    # Scored by a jury before publication, as a real release is: the audit lists scored texts.
    return published_arena_release(CODE, **shares, before_publish=jury_verdicts_write)


def _reveal(release, holder: Holder, publisher) -> None:
    if holder == Holder.ARENA:
        arena_close(release=release, user=publisher, reason="Pilot over.")
    else:
        study_texts_reveal(release=release, user=publisher, reason="Studies over.")


def _held(release, holder: Holder) -> tuple[str, set[int], set[int]]:
    """The held scenario, the scored texts held and the scored texts not held."""
    snapshot = load_snapshot(release.publication)
    held = held_cells(snapshot, Holder(holder))
    (slug,) = {cell[0] for cell in held}
    scored = set(JurorVerdict.objects.filter(
        release=release, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED)
        .values_list("generation_id", flat=True))
    held_ids = {text.id for text in snapshot.texts if text_cell(text) in held} & scored
    return slug, held_ids, scored - held_ids


def _audit_codes(client) -> tuple[set[str], set[str]]:
    """The text codes the audit's list links and its worksheet names."""
    page = client.get(f"/review/releases/{CODE}/out-of-band/texts/")
    assert page.status_code == 200
    listed = {code for code in html.unescape(page.content.decode()).split("/out-of-band/texts/")
              [1:] for code in [code.split("/", 1)[0]] if code.startswith("t")}
    sheet = client.get(f"/review/releases/{CODE}/out-of-band/texts.csv")
    assert sheet.status_code == 200
    rows = csv.DictReader(io.StringIO(sheet.content.decode()))
    return listed, {row["text"] for row in rows}


@pytest.mark.django_db
@pytest.mark.parametrize("holder", [Holder.ARENA, Holder.READING_STUDIES])
def test_the_audit_texts_leave_out_held_texts_for_all_but_publishers(
        release, client, publisher, holder):
    """An auditor read every held text of a published release, with its cell and its jury's
    claims, at the out-of-band audit's list, worksheet and pages, while its public page was
    a 404 for them: now they are absent there too (list, worksheet, template), a 404 one by
    one, until the holder reveals them; publishers see them all along."""
    # The module's world, arena.0, holds every text of the same fixture writers on the same
    # scenarios, word for word held.0's: closed first, so that held.0 alone holds texts (a
    # text with a held text's words is held too: test_held_twins.py).
    arena_close(release=release, user=publisher, reason="Its texts are public: held.0 holds.")
    held_release = _held_release(holder)
    slug, held_ids, open_ids = _held(held_release, holder)
    assert held_ids and open_ids
    held_codes = {text_code(CODE, pk) for pk in held_ids}
    open_codes = {text_code(CODE, pk) for pk in open_ids}

    client.force_login(staff_user("audrey", "auditor"))
    listed, sheet = _audit_codes(client)
    assert listed == open_codes and sheet == open_codes, "only the texts not held, all of them"
    page = client.get(f"/review/releases/{CODE}/out-of-band/texts/").content.decode()
    assert "not listed, here or in the worksheet, until they are made public" in page
    for code in held_codes:
        assert client.get(f"/review/releases/{CODE}/out-of-band/texts/{code}/"
                          ).status_code == 404
    assert client.get(f"/review/releases/{CODE}/out-of-band/texts/{min(open_codes)}/"
                      ).status_code == 200
    template = client.get(f"/review/releases/{CODE}/out-of-band/template.csv").content.decode()
    assert not any(code in template for code in held_codes)

    auditing_publisher = staff_user("pia", "publisher", "auditor")
    client.force_login(auditing_publisher)
    listed, sheet = _audit_codes(client)
    assert listed == sheet == held_codes | open_codes
    assert client.get(f"/review/releases/{CODE}/out-of-band/texts/{min(held_codes)}/"
                      ).status_code == 200

    _reveal(held_release, holder, publisher)
    client.force_login(staff_user("audra", "auditor"))
    listed, sheet = _audit_codes(client)
    assert listed == sheet == held_codes | open_codes
    assert client.get(f"/review/releases/{CODE}/out-of-band/texts/{min(held_codes)}/"
                      ).status_code == 200


def _names_in(page: str) -> set[str]:
    lowered = page.lower()
    return {name for name in NAMES if name in lowered}


@pytest.mark.django_db
@pytest.mark.parametrize("holder", [Holder.ARENA, Holder.READING_STUDIES])
def test_a_held_scenarios_per_model_figures_are_held_with_its_texts(
        release, client, publisher, holder):
    """A held scenario's page showed each model's gain over no text and persuasion minus
    control there (which model wrote the more favourable texts of a pair on it), and the API
    and archive the same rows. While held, none of them carries them, each says why, and its
    page says its texts are held instead of an empty table of mean scores; the overall
    figures are those published. Publishers see them; so does everyone once revealed."""
    held_release = _held_release(holder)
    slug, _, _ = _held(held_release, holder)
    (other,) = {s.slug for s in load_snapshot(held_release.publication).scenarios
                if s.visibility == "public"} - {slug}
    stored = load_snapshot(held_release.publication)
    assert {row.scenario for row in stored.versus_control} >= {slug, other}
    overall = {key: [row.as_data() for row in getattr(stored, key)]
               for key in ("versus_control_overall", "baseline_without_text_overall")}
    reason = (f"Each model's figures on this scenario are held for {HELD_FOR[holder]}: they "
              f"would tell which model wrote the more favourable of its texts")

    def leaderboard() -> dict:
        answer = client.get(f"/api/v1/releases/{CODE}/leaderboard/")
        assert answer.status_code == 200
        return answer.json()

    for viewer in (None, staff_user("audrey", "auditor"), staff_user("olly", "operator")):
        if viewer is not None:
            client.force_login(viewer)
        page = html.unescape(client.get(f"/releases/{CODE}/scenarios/{slug}/").content.decode())
        assert not _names_in(page), viewer
        assert "<th>Model</th>" not in page
        assert page.count(reason) == 2, "under both headings"
        mean_scores = page.split("Mean scores of the texts", 1)[1]
        assert f"Its texts are held for {HELD_FOR[holder]}" in mean_scores
        assert _names_in(html.unescape(client.get(
            f"/releases/{CODE}/scenarios/{other}/").content.decode())) == set(NAMES)

        answer = leaderboard()
        for key, overall_key in (("versus_control", "versus_control_overall"),
                                 ("without_text", "baseline_without_text_overall")):
            assert slug not in {row["scenario"] for row in answer[key]["per_scenario"]}
            assert other in {row["scenario"] for row in answer[key]["per_scenario"]}
            (held_entry,) = answer[key]["held"]
            assert held_entry["scenario"] == slug and held_entry["reason"].startswith(reason)
            assert [{k: v for k, v in row.items() if k != "model_name"}
                    for row in answer[key]["overall"]] == overall[overall_key], \
                "the overall figures are those published"

        release_page = html.unescape(client.get(f"/releases/{CODE}/").content.decode())
        assert ">held</td>" in release_page and "Figures on a scenario marked held are held " \
            f"for {HELD_FOR[holder]}" in release_page
        # The header's count of scenarios says how many of them are held.
        assert "scenarios shown, the texts and per-model figures of 1 of them held until " \
            "their arena or reading studies end" in release_page
        client.logout()

    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/releases/{CODE}/archive.zip").content))
    frozen = json.loads(archive.read("snapshot.json"))
    for key in ("versus_control", "baseline_without_text"):
        assert {row["scenario"] for row in frozen[key]} == {other}
        assert frozen[f"{key}_overall"] == overall[f"{key}_overall"]

    client.force_login(publisher)
    page = html.unescape(client.get(f"/releases/{CODE}/scenarios/{slug}/").content.decode())
    assert _names_in(page) == set(NAMES) and reason not in page
    board = leaderboard()
    assert board["versus_control"]["held"] == []
    assert slug in {row["scenario"] for row in board["versus_control"]["per_scenario"]}
    client.logout()

    _reveal(held_release, holder, publisher)
    page = html.unescape(client.get(f"/releases/{CODE}/scenarios/{slug}/").content.decode())
    assert _names_in(page) == set(NAMES) and reason not in page
    board = leaderboard()
    assert board["without_text"]["held"] == []
    assert slug in {row["scenario"] for row in board["without_text"]["per_scenario"]}
    assert ">held</td>" not in client.get(f"/releases/{CODE}/").content.decode()
    assert "of them held until" not in client.get(f"/releases/{CODE}/").content.decode()
