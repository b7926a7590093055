"""Held texts stay held on the staff review screens too: the out-of-band audit's list,
worksheet and text pages follow the public pages' rule (only publishers see a held text
before its holder reveals it)."""

from __future__ import annotations

import csv
import html
import io

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
