"""Held texts stay held in the audit records too: a spot-check of a text the release now holds
for its arena or reading studies, its batch item, correction, out-of-band row, reader result
and contamination finding name the text's writer (a stratum, "Written by") or quote it (claim
labels, an excerpt), so in the admin and on the review screens they are absent for everyone
but publishers until the holder reveals the texts, as the generation admin and the public
pages leave the texts out; the figures (a batch's size and checks done) stay as they were
(user tryout on demo.0)."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import Group
from django.utils.timezone import localdate

from audits_app.arena.services import arena_close
from audits_app.arena.tests.conftest import published_arena_release, staff_user
from audits_app.calibration.readers_import import human_readers_import
from audits_app.calibration.studies.services import study_texts_reveal
from audits_app.models import (
    HumanReaderResult,
    OutOfBandVerdict,
    SpotCheck,
    SpotCheckBatch,
    SpotCheckItem,
)
from audits_app.pages.viewer import load_snapshot
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from audits_app.spotchecks.demo import demo_spotchecks
from audits_app.spotchecks.imports import oob_audit_import
from audits_app.spotchecks.selectors import jury_texts
from audits_app.tests.juries import jury_verdicts_write
from audits_app.text_codes import text_code
from runs_app.models import (
    ContaminationCheck,
    ContaminationFinding,
    FindingKind,
    Generation,
    Release,
)

CODE = "checked.0"
PUBLIC = ("greenvale-listeria", "cobaltcloud-breach")
CANDID = "fixture/candid"
HELD_NOTE = "of texts a published release holds for its arena or reading studies"


def _audit_records(release: Release) -> None:
    """Before publication, as a real release's: a jury, a batch of every scored text but two
    per scenario, coded by the two demo auditors; an out-of-band audit of those two per
    scenario; human readers of one text per public scenario."""
    jury_verdicts_write(release)
    texts = jury_texts(release)
    by_scenario: dict[str, list[int]] = {}
    for pk, slug in Generation.objects.filter(pk__in=list(texts)).order_by("pk").values_list(
            "pk", "scenario_version__scenario__slug"):
        by_scenario.setdefault(slug, []).append(pk)
    outside = {pk for pks in by_scenario.values() for pk in pks[:2]}
    assert demo_spotchecks(release=release, size=len(texts) - len(outside),
                           leave_out=lambda _release, ids: outside & set(ids)) > 0
    rows = ["generation,claim,label,agree,note"]
    for pk in sorted(outside):
        rows += [f"{pk},1,{texts[pk].claims[0].label},,", f"{pk},overall,,yes,Read twice."]
    imported = oob_audit_import(release=release, auditor_name="R. Vos", organisation="Fact Lab",
                                audited_on=localdate(), method="Two readers, consensus",
                                csv_text="\n".join(rows) + "\n", source_name="workshop.csv")
    assert imported.ok, imported.problems
    lines = ["scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4"]
    for slug in PUBLIC:
        lines += [f"{slug},{by_scenario[slug][2]},p1,4,4,4,0,0,dk,1",
                  f"{slug},none,p1,4,4,4,0,0,dk,1"]
    read = human_readers_import(release=release, csv_text="\n".join(lines) + "\n")
    assert read.ok, read.problems
    # A contamination check that found every candid text repeating its scenario's file: each
    # finding quotes the text and names its writer.
    check = ContaminationCheck.objects.create(release=release)
    ContaminationFinding.objects.bulk_create(
        ContaminationFinding(contamination_check=check, model=text.model.openrouter_id,
                             scenario=text.scenario_version.scenario,
                             kind=FindingKind.OUTPUT_OVERLAP, evidence=text.text[:80],
                             source=f"generation {text.pk}", source_release=release.code)
        for text in Generation.objects.filter(release=release, model__openrouter_id=CANDID)
        .select_related("model", "scenario_version__scenario"))


def _checked_release(holder: Holder, world: Release, publisher) -> Release:
    """checked.0. The module's world, arena.0, holds every text of the same fixture writers
    on the same scenarios, word for word checked.0's: its arena is closed first, so that
    checked.0 alone holds texts (a text with a held text's words is held too:
    test_held_twins.py)."""
    arena_close(release=world, user=publisher, reason="Its texts are public: checked.0 holds.")
    shares = {"held_share": 0.5, "study_share": 0.0} if holder == Holder.ARENA else \
        {"held_share": 0.0, "study_share": 0.5}
    return published_arena_release(CODE, **shares, before_publish=_audit_records)


def _held_ids(release: Release, holder: Holder) -> set[int]:
    snapshot = load_snapshot(release.publication)
    held = held_cells(snapshot, holder)
    return {text.id for text in snapshot.texts if text_cell(text) in held}


def _reveal(release: Release, holder: Holder, publisher) -> None:
    if holder == Holder.ARENA:
        arena_close(release=release, user=publisher, reason="Pilot over.")
    else:
        study_texts_reveal(release=release, user=publisher, reason="Studies over.")


def _claim_quotes(checks) -> set[str]:
    return {entry["quote"] for check in checks for entry in check.claim_labels
            if len(entry.get("quote", "")) > 20}


def _words(page: str) -> str:
    """A page's words, without its markup (a review page marks the jury's claims, numbered)."""
    page = re.sub(r"<sup>.*?</sup>|<[^>]+>", " ", html.unescape(page))
    return " ".join(page.split())


def _opening(text: str) -> str:
    return " ".join(text.split()[:12])


def _linked(page: str, model: str, app: str = "audits_app") -> set[int]:
    return {int(pk) for pk in re.findall(rf"/admin/{app}/{model}/(\d+)/change/", page)}


def _admin_sees(client, release: Release, held_ids: set[int]) -> dict[str, bool]:
    """Whether the admin shows this person any record of a held text, place by place, and
    that it shows the records of the other texts."""
    codes = {pk: text_code(CODE, pk) for pk in Generation.objects.filter(
        release=release).values_list("pk", flat=True)}
    held_codes = {codes[pk] for pk in held_ids}
    checks = SpotCheck.objects.filter(release=release)
    held_checks = set(checks.filter(generation_id__in=held_ids).values_list("pk", flat=True))
    # Quotes and excerpts of held texts that no other text shares (the fixture's refusals
    # open alike, whatever the scenario).
    held_quotes = _claim_quotes(checks.filter(generation_id__in=held_ids)) - _claim_quotes(
        checks.exclude(generation_id__in=held_ids))
    batch = SpotCheckBatch.objects.get(release=release)
    audit = release.oob_audits.get()
    readers = HumanReaderResult.objects.filter(release=release)
    held_readers = set(readers.filter(generation_id__in=held_ids).values_list("pk", flat=True))
    assert held_checks and held_quotes and held_readers

    batch_page = html.unescape(client.get(
        f"/admin/audits_app/spotcheckbatch/{batch.pk}/change/").content.decode())
    listed = client.get("/admin/audits_app/spotcheck/", {"release__id__exact": release.pk})
    assert listed.status_code == 200
    check_list = html.unescape(listed.content.decode())
    audit_page = html.unescape(client.get(
        f"/admin/audits_app/outofbandaudit/{audit.pk}/change/").content.decode())
    reader_list = client.get("/admin/audits_app/humanreaderresult/").content.decode()
    open_check = checks.exclude(generation_id__in=held_ids).order_by("pk").first()
    assert client.get(f"/admin/audits_app/spotcheck/{open_check.pk}/change/").status_code == 200
    assert _linked(check_list, "spotcheck") - held_checks, "the other checks are listed"
    assert _linked(reader_list, "humanreaderresult") - held_readers
    findings = ContaminationFinding.objects.filter(contamination_check__release=release)
    held_findings = {finding.pk for finding in findings
                     if int(finding.source.split()[1]) in held_ids}
    held_excerpts = {" ".join(finding.evidence.split()) for finding in findings
                     if finding.pk in held_findings} - {
        " ".join(finding.evidence.split()) for finding in findings
        if finding.pk not in held_findings}
    assert held_excerpts
    assert held_findings and held_findings != set(findings.values_list("pk", flat=True))
    finding_list = html.unescape(client.get("/admin/runs_app/contaminationfinding/",
                                            {"all": ""}).content.decode())
    check_page = html.unescape(client.get(
        f"/admin/runs_app/contaminationcheck/{release.contamination_check.pk}/change/"
    ).content.decode())
    assert _linked(finding_list, "contaminationfinding", "runs_app") - held_findings
    held_check = client.get(f"/admin/audits_app/spotcheck/{min(held_checks)}/change/")
    held_check_page = html.unescape(held_check.content.decode())
    return {
        "batch items": bool(held_codes & set(re.findall(r"t[0-9a-f]{12}", batch_page))),
        "batch note": HELD_NOTE in batch_page,
        "check list": bool(_linked(check_list, "spotcheck") & held_checks),
        "check page": held_check.status_code == 200,
        "check history": client.get(f"/admin/audits_app/spotcheck/{min(held_checks)}/history/"
                                    ).status_code == 200,
        "claim quotes": any(quote in batch_page + check_list + held_check_page
                            for quote in held_quotes),
        "audit rows": bool(held_codes & set(re.findall(r"t[0-9a-f]{12}", audit_page))),
        "audit note": HELD_NOTE in audit_page,
        "reader list": bool(_linked(reader_list, "humanreaderresult") & held_readers),
        "finding list": bool(_linked(finding_list, "contaminationfinding", "runs_app")
                             & held_findings),
        "finding excerpts": any(excerpt in _words(finding_list + check_page)
                                for excerpt in held_excerpts),
        "finding page": client.get(f"/admin/runs_app/contaminationfinding/{min(held_findings)}"
                                   f"/change/").status_code == 200,
        "reader page": client.get(f"/admin/audits_app/humanreaderresult/{min(held_readers)}"
                                  f"/change/").status_code == 200,
    }


@pytest.mark.django_db
@pytest.mark.parametrize("holder", [Holder.ARENA, Holder.READING_STUDIES])
def test_the_admin_shows_no_audit_record_of_a_held_text_but_to_publishers(
        release, client, publisher, holder):
    """The tryout: as curator or operator, the batch's items named a held text's writer in
    its stratum (`fixture/candid|C0|supported`) and a spot-check's claim labels quoted it
    sentence by sentence. Every admin of a record that names a text leaves out the held
    texts' rows (a 302 to the admin's index for one, as the generation admin does) for
    curators, operators and auditors, until the holder reveals the texts; the batch's
    figures are as before; publishers see every row."""
    checked = _checked_release(holder, release, publisher)
    held_ids = _held_ids(checked, holder)
    assert SpotCheckItem.objects.filter(batch__release=checked, generation_id__in=held_ids)
    assert OutOfBandVerdict.objects.filter(audit__release=checked, generation_id__in=held_ids)
    nothing = dict.fromkeys(("batch items", "check list", "check page", "check history",
                             "claim quotes", "audit rows", "reader list", "reader page",
                             "finding list", "finding excerpts", "finding page"), False)
    for role in ("curator", "operator"):
        client.force_login(staff_user(role, role))
        assert _admin_sees(client, checked, held_ids) == {
            **nothing, "batch note": True, "audit note": True}, role
        batches = html.unescape(client.get("/admin/audits_app/spotcheckbatch/").content.decode())
        done = SpotCheck.objects.filter(item__batch__release=checked, status="done").count()
        assert f'<td class="field-done_count">{done}</td>' in batches, "the figures stay"

    # An auditor sees their own checks in the admin: not those of held texts.
    auditor = SpotCheck.objects.filter(release=checked, generation_id__in=held_ids
                                       ).order_by("pk").first().auditor
    client.force_login(auditor)
    mine = SpotCheck.objects.filter(auditor=auditor)
    page = client.get("/admin/audits_app/spotcheck/").content.decode()
    assert _linked(page, "spotcheck") == set(
        mine.exclude(generation_id__in=held_ids).values_list("pk", flat=True))
    held_check = mine.filter(generation_id__in=held_ids).order_by("pk").first()
    assert client.get(f"/admin/audits_app/spotcheck/{held_check.pk}/change/").status_code == 302

    client.force_login(publisher)
    assert _admin_sees(client, checked, held_ids) == {
        **dict.fromkeys(nothing, True), "batch note": False, "audit note": False}

    _reveal(checked, holder, publisher)
    client.force_login(staff_user("curator-after", "curator"))
    assert _admin_sees(client, checked, held_ids) == {
        **dict.fromkeys(nothing, True), "batch note": False, "audit note": False}


@pytest.mark.django_db
@pytest.mark.parametrize("holder", [Holder.ARENA, Holder.READING_STUDIES])
def test_an_auditor_cannot_read_a_held_text_they_checked_before_publication(
        release, client, publisher, holder):
    """The tryout: an auditor who checked a text before publication read it whole, with
    "Written by Candid (fixture)", at /review/checks/<id>/ while the arena showed it blind.
    A held text's check is a 404 (as its public page), its correction too, and the queue
    lists it nowhere (saying how many it leaves out) nor counts it, until the holder reveals
    the texts; an auditor who also publishes reads it all along."""
    checked = _checked_release(holder, release, publisher)
    held_ids = _held_ids(checked, holder)
    auditor = SpotCheck.objects.filter(release=checked, generation_id__in=held_ids
                                       ).order_by("pk").first().auditor
    mine = SpotCheck.objects.filter(auditor=auditor, release=checked)
    held_checks = list(mine.filter(generation_id__in=held_ids).order_by("pk"))
    open_checks = list(mine.exclude(generation_id__in=held_ids).order_by("pk"))
    assert held_checks and open_checks
    # A held text whose opening no other text shares: the fixture's refusals open alike (the
    # organisation comes later), so an open refusal's page shows a held one's first words.
    others = {_opening(text) for text in Generation.objects.filter(release=checked).exclude(
        pk__in=held_ids).values_list("text", flat=True)}
    first = next((check for check in held_checks
                  if _opening(Generation.objects.get(pk=check.generation_id).text) not in others),
                 None)
    assert first, "a held text of its own opening"
    opening = _opening(Generation.objects.get(pk=first.generation_id).text)
    client.force_login(auditor)

    for check in held_checks:
        assert client.get(f"/review/checks/{check.pk}/").status_code == 404
        assert client.post(f"/review/checks/{check.pk}/correct/",
                           {"reason": "x"}).status_code == 404
    queue = html.unescape(client.get("/review/").content.decode())
    linked = {int(pk) for pk in re.findall(r"/review/checks/(\d+)/", queue)}
    assert linked == {check.pk for check in open_checks}
    assert f"{len(held_checks)} of your spot-checks are of texts a published release holds " \
           "for its arena or reading studies" in queue
    assert f"{len(open_checks)} of {len(open_checks)} done" in queue, "counts only those shown"
    page = _words(client.get(f"/review/checks/{open_checks[-1].pk}/").content.decode())
    assert f"Check {len(open_checks)} of {len(open_checks)}" in page
    assert opening not in _words(queue) + page

    auditor.groups.add(Group.objects.get(name="publisher"))
    client.force_login(type(auditor).objects.get(pk=auditor.pk))
    page = _words(client.get(f"/review/checks/{first.pk}/").content.decode())
    assert opening in page and "Written by" in page
    assert "holds for its arena" not in client.get("/review/").content.decode()
    auditor.groups.remove(Group.objects.get(name="publisher"))

    _reveal(checked, holder, publisher)
    client.force_login(type(auditor).objects.get(pk=auditor.pk))
    page = _words(client.get(f"/review/checks/{first.pk}/").content.decode())
    assert opening in page and "Written by" in page
    queue = client.get("/review/").content.decode()
    assert {int(pk) for pk in re.findall(r"/review/checks/(\d+)/", queue)} == {
        check.pk for check in held_checks + open_checks}
