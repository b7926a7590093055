"""A held text's twin is held too: a text of another release with the same words (as
`same_words.words_key` normalises them) names the held text's writer wherever it is shown
with its own, so non-publishers meet it nowhere the held text is hidden from them (user
tryout: a draft, tryout.0, pinning the scenario demo.0 holds for its open arena, got 16 texts
word for word the arena's; an operator found them with their writer in the generation admin,
an auditor's spot-check of one said "Written by Advocate (fixture)" once saved)."""

from __future__ import annotations

import html
import re

import pytest

from audits_app.arena.services import arena_close
from audits_app.arena.tests.conftest import published_arena_release, staff_user
from audits_app.models import SpotCheck, SpotCheckBatch
from audits_app.pages.viewer import load_snapshot
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from audits_app.publication.same_words import words_key
from audits_app.spotchecks.services import spotcheck_batch_create
from audits_app.tests.juries import jury_verdicts_write
from audits_app.text_codes import text_code
from runs_app.models import Generation, Release

DRAFT = "tryout.0"


def _held_ids(release: Release) -> set[int]:
    snapshot = load_snapshot(release.publication)
    held = held_cells(snapshot, Holder.ARENA)
    return {text.id for text in snapshot.texts if text_cell(text) in held}


def _draft(release: Release, **kwargs) -> tuple[Release, set[int], set[int]]:
    """tryout.0: the same fixture writers on the same scenarios, scored, not published; with
    the ids of its texts that have the words of a text arena.0 holds, and of the others."""
    draft = published_arena_release(DRAFT, held_share=0.0, publish=False, **kwargs)
    keys = {words_key(body) for body in Generation.objects.filter(
        pk__in=_held_ids(release)).values_list("text", flat=True)}
    rows = Generation.objects.filter(release=draft).values_list("pk", "text")
    twins = {pk for pk, body in rows if words_key(body) in keys}
    others = {pk for pk, _ in rows} - twins
    assert twins and others, "the fixture writers write the arena's texts again"
    return draft, twins, others


def _listed(client, **query) -> tuple[set[int], str]:
    response = client.get("/admin/runs_app/generation/", query)
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    return {int(pk) for pk in re.findall(r"/admin/runs_app/generation/(\d+)/change/", page)}, page


@pytest.mark.django_db
def test_the_generation_admin_shows_a_held_texts_twin_to_publishers_alone(
        release, client, publisher):
    draft, twins, others = _draft(release)
    held = _held_ids(release)
    advocate = Generation.objects.filter(pk__in=twins, model__openrouter_id="fixture/advocate"
                                         ).values_list("model_id", flat=True).first()
    assert advocate is not None
    for role in ("operator", "curator"):  # auditors open no text in the admin
        client.force_login(staff_user(role, role))
        found, _ = _listed(client, q="cobalt")
        assert not found & (twins | held), role
        found, page = _listed(client, release__id__exact=draft.pk)
        assert found == others, role
        assert f"{len(others)} generations" in page, f"{role}: the count leaves them out too"
        found, _ = _listed(client, release__id__exact=draft.pk, model__id__exact=advocate)
        assert not found & twins, role
        twin = min(twins)
        assert client.get(f"/admin/runs_app/generation/{twin}/change/").status_code == 302
        words = " ".join(Generation.objects.get(pk=twin).text.split()[:6])
        found, _ = _listed(client, q=words)
        assert not found & twins, f"{role}: searched for by its words"

    client.force_login(publisher)
    found, _ = _listed(client, release__id__exact=draft.pk)
    assert found == twins | others
    assert client.get(f"/admin/runs_app/generation/{min(twins)}/change/").status_code == 200

    # Once the arena reveals its texts the twins are like any other text.
    arena_close(release=release, user=publisher, reason="Pilot over.")
    client.force_login(staff_user("operator-after", "operator"))
    found, _ = _listed(client, release__id__exact=draft.pk)
    assert found == twins | others


@pytest.mark.django_db
def test_a_batch_never_draws_a_held_texts_twin_and_counts_it_left_out(release, client):
    draft, twins, _ = _draft(release, before_publish=jury_verdicts_write)
    auditor = staff_user("ann", "auditor")
    client.force_login(auditor)
    scored = set(Generation.objects.filter(release=draft, status="done", text__gt=""
                                           ).values_list("pk", flat=True))
    response = client.post(f"/review/releases/{DRAFT}/batches/new/",
                           {"size": str(len(scored)), "disagreement_weight": "2",
                            "double_code_share": "0", "auditors": [auditor.pk]})
    assert response.status_code == 302, response.content.decode()[-2000:]
    batch = SpotCheckBatch.objects.get(release=draft)
    drawn = set(batch.items.values_list("generation_id", flat=True))
    assert drawn and not drawn & twins
    assert batch.left_out_public == len(twins & scored)
    again = client.post(f"/review/releases/{DRAFT}/batches/new/",
                        {"size": "1", "disagreement_weight": "2", "double_code_share": "0",
                         "auditors": [auditor.pk]})
    assert f"{len(twins & scored)} of them because their words are" in html.unescape(
        again.content.decode())


@pytest.mark.django_db
def test_review_screens_and_audit_records_leave_out_a_held_texts_twin(
        release, client, publisher):
    """The tryout's spot-check: drawn before the fix (no `leave_out`), its page a 404 for the
    auditor, nowhere in their queue, the out-of-band texts or the audit-record admin."""
    draft, twins, others = _draft(release, before_publish=jury_verdicts_write)
    auditor = staff_user("ann", "auditor")
    spotcheck_batch_create(release=draft, size=len(twins | others), seed=3, auditors=[auditor])
    checks = SpotCheck.objects.filter(release=draft, auditor=auditor)
    twin_checks = set(checks.filter(generation_id__in=twins).values_list("pk", flat=True))
    open_checks = set(checks.exclude(generation_id__in=twins).values_list("pk", flat=True))
    assert twin_checks and open_checks
    twin_codes = {text_code(DRAFT, pk) for pk in twins}
    client.force_login(auditor)
    for pk in twin_checks:
        assert client.get(f"/review/checks/{pk}/").status_code == 404
    queue = client.get("/review/").content.decode()
    assert {int(pk) for pk in re.findall(r"/review/checks/(\d+)/", queue)} == open_checks
    listing = client.get(f"/review/releases/{DRAFT}/out-of-band/texts/").content.decode()
    worksheet = client.get(f"/review/releases/{DRAFT}/out-of-band/texts.csv").content.decode()
    assert not twin_codes & set(re.findall(r"t[0-9a-f]{12}", listing + worksheet))
    assert set(re.findall(r"t[0-9a-f]{12}", listing)), "the other texts are listed"
    assert client.get(f"/review/releases/{DRAFT}/out-of-band/texts/{min(twin_codes)}/"
                      ).status_code == 404
    client.force_login(staff_user("olivia", "operator"))
    page = client.get("/admin/audits_app/spotcheck/", {"release__id__exact": draft.pk})
    linked = {int(pk) for pk in re.findall(r"/admin/audits_app/spotcheck/(\d+)/change/",
                                           page.content.decode())}
    assert linked == open_checks

    client.force_login(publisher)
    page = client.get("/admin/audits_app/spotcheck/", {"release__id__exact": draft.pk})
    linked = {int(pk) for pk in re.findall(r"/admin/audits_app/spotcheck/(\d+)/change/",
                                           page.content.decode())}
    assert linked == twin_checks | open_checks


@pytest.mark.django_db
def test_a_drafts_pages_leave_out_a_held_texts_twin_and_its_scenarios_per_model_rows(
        release, client, publisher):
    """The re-check's find: an operator or curator opened the draft's own pages
    (/releases/tryout.0/texts/) and read each twin with its writer, and the twins' scenario
    page with each model's figures on it."""
    draft, twins, others = _draft(release)
    scenario = Generation.objects.filter(pk=min(twins)).values_list(
        "scenario_version__scenario__slug", flat=True).get()
    for role in ("operator", "curator"):
        client.force_login(staff_user(role, role))
        listing = client.get(f"/releases/{DRAFT}/texts/").content.decode()
        shown = {int(pk) for pk in re.findall(rf"/releases/{re.escape(DRAFT)}/texts/(\d+)/",
                                              listing)}
        assert not shown & twins, role
        assert shown & others, f"{role}: the draft's other texts are listed"
        assert client.get(f"/releases/{DRAFT}/texts/{min(twins)}/").status_code == 404
        assert client.get(f"/releases/{DRAFT}/texts/{min(others)}/").status_code == 200
        page = html.unescape(client.get(f"/releases/{DRAFT}/scenarios/{scenario}/")
                             .content.decode())
        assert "another release's arena or reading studies" in page, role

    client.force_login(publisher)
    assert client.get(f"/releases/{DRAFT}/texts/{min(twins)}/").status_code == 200
    page = html.unescape(client.get(f"/releases/{DRAFT}/scenarios/{scenario}/").content.decode())
    assert "another release's arena or reading studies" not in page
