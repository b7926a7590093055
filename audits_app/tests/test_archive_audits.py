"""The audit records of a release (spot-checks, corrections, out-of-band audits, human reader
results) in its archive: a release loaded from its staff archive into another instance
verifies there, its agreement and calibration figures computed again from the rows."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from audits_app.archive import tables
from audits_app.archive.export import archive_kind, release_archive, release_archive_kept
from audits_app.archive.load import release_import
from audits_app.models import (
    HumanReaderResult,
    OutOfBandAudit,
    OutOfBandVerdict,
    Publication,
    ReleaseArchive,
    SpotCheck,
    SpotCheckBatch,
    SpotCheckCorrection,
)
from audits_app.tests.archives import (
    empty_instance,
    files_of,
    forge,
    manage,
    recoded,
    refused_lines,
    rezip,
)
from audits_app.verification import release_verify
from runs_app.models import Generation, Release

pytestmark = pytest.mark.django_db

# What the other instance holds of the release's audit records, as JSON on stdout.
DUMP = """
import json
from audits_app.models import *
checks = SpotCheck.objects.filter(release__code="aud.0")
print(json.dumps({
    "checks": checks.count(), "linked": checks.filter(auditor__isnull=False).count(),
    "auditors": sorted(set(checks.values_list("auditor_name", flat=True))),
    "corrections": list(SpotCheckCorrection.objects.filter(release__code="aud.0").values_list(
        "made_by_id", "made_by_name", "reason")),
    "batches": list(SpotCheckBatch.objects.filter(release__code="aud.0").values_list(
        "created_by_name", "seed")),
    "verdicts": OutOfBandVerdict.objects.filter(audit__release__code="aud.0").count(),
    "readers": HumanReaderResult.objects.filter(release__code="aud.0").count(),
}))
"""


@pytest.fixture(scope="module")
def migrated(django_db_setup, migrated_scratch) -> str:
    """An empty database of the suite's kind, migrated once a session (test_archive.py)."""
    return migrated_scratch.url


def audit_lines(data: bytes, name: str) -> list[dict]:
    return [json.loads(line) for line in files_of(data)[name].decode().splitlines()]


def test_the_figures_rest_on_audit_records(audited):
    snapshot = Publication.objects.get(release=audited).snapshot
    assert snapshot["agreement"]["texts_checked"] > 0
    assert snapshot["agreement"]["jury_vs_people"]["out_of_band"]["n"] > 0
    assert snapshot["calibration"] is not None and snapshot["calibration"]["readers"] == 2


def test_a_release_imported_from_its_staff_archive_verifies_there(
        audited, tmp_path, migrated, archive_key):
    """The bug this fixes: without its audit records the imported release's agreement, gate
    and calibration figures were computed from nothing, and 63 values differed."""
    get_user_model().objects.filter(username__startswith="demo-auditor").update(
        email="auditor@example.org")
    path = tmp_path / "aud.0-staff.zip"
    path.write_bytes(release_archive(audited, staff=True, signed_by=archive_key.private))
    with empty_instance(tmp_path, migrated, trusting=archive_key.line) as env:
        # A model registered here first: the release's models get other rows than where it
        # was published, as in any instance that is not empty (its jurors' keys differed).
        manage(env, "shell", "-c", "from runs_app.models import LlmModel; LlmModel.objects"
               ".create(openrouter_id='elsewhere/only-here', family='elsewhere', "
               "display_name='Only here')")
        loaded = manage(env, "import_release", str(path))
        verified = manage(env, "verify_release", "aud.0", check=False)
        there = json.loads(manage(env, "shell", "-c", DUMP).stdout.splitlines()[-1])
    assert "Traceback" not in verified.stderr, verified.stderr
    assert verified.returncode == 0, verified.stderr
    assert "aud.0: unchanged (" in verified.stdout
    here = SpotCheck.objects.filter(release=audited)
    assert (f"{here.count()} spot-checks, 1 spot-check corrections, 1 out-of-band audits, "
            f"{HumanReaderResult.objects.filter(release=audited).count()} human reader results"
            in loaded.stdout)
    assert there["checks"] == here.count() and there["linked"] == 0
    assert there["auditors"] == ["", "demo-auditor-1", "demo-auditor-2"]  # "": out of band
    correction = SpotCheckCorrection.objects.get(release=audited)
    assert there["corrections"] == [[None, correction.made_by.username, correction.reason]]
    assert there["batches"] == [[SpotCheckBatch.objects.get(release=audited).created_by_name,
                                 SpotCheckBatch.objects.get(release=audited).seed]]
    assert there["verdicts"] == OutOfBandVerdict.objects.filter(
        audit__release=audited).count()


def test_the_staff_archive_names_texts_by_id_and_people_by_user_name(audited):
    get_user_model().objects.update(email="someone@example.org")
    data = release_archive(audited, staff=True)
    files = files_of(data)
    manifest = json.loads(files["manifest.json"])
    assert b"@example.org" not in b"".join(files.values())
    assert b"password" not in b"".join(files[name] for name in tables.AUDIT_FILES)
    texts = {row["id"] for row in audit_lines(data, "texts.jsonl")}
    checks = audit_lines(data, "spotchecks.jsonl")
    assert len(checks) == SpotCheck.objects.filter(release=audited).count()
    assert manifest["files"]["spotchecks.jsonl"]["rows"] == len(checks)
    assert {row["text"] for row in checks} <= texts
    assert {row["auditor"] for row in checks} == {"demo-auditor-1", "demo-auditor-2", None}
    assert all(row["audit"] is not None for row in checks if row["auditor"] is None)
    readers = audit_lines(data, "human_readers.jsonl")
    assert all(row["stimulus"] == str(row["text"]) for row in readers if row["text"])
    assert [row["stimulus"] for row in readers if row["text"] is None] == ["none"]
    # The public archive carries none, and refuses them when someone adds them.
    public = release_archive(audited, staff=False)
    assert not set(tables.AUDIT_FILES) & set(files_of(public))
    assert refused_lines(forge(public, spotchecks_dot_jsonl=files["spotchecks.jsonl"])) == [
        "spotchecks.jsonl: a public archive carries no audit records"]


def test_a_copy_loaded_here_keeps_its_records_by_name_and_verifies(audited):
    """Under another code, loaded into this very instance, where the auditors' logins exist:
    the checks still name them without linking them (same name, maybe not the same person),
    and the copy's figures are what its rows give."""
    result = release_import(data=rezip(recoded(release_archive(audited, staff=True),
                                               "copy.0")), source="copy.zip")
    copy = result.release
    assert result.counts["spot-checks"] == SpotCheck.objects.filter(release=audited).count()
    checks = SpotCheck.objects.filter(release=copy)
    assert not checks.filter(auditor__isnull=False).exists()
    assert sorted(set(checks.values_list("auditor_name", flat=True))) == [
        "", "demo-auditor-1", "demo-auditor-2"]
    original = SpotCheckCorrection.objects.get(release=audited)
    correction = SpotCheckCorrection.objects.get(release=copy)
    assert correction.made_by is None and correction.made_by_name == original.made_by.username
    assert correction.made_at == original.made_at  # when it was made, not when loaded
    assert OutOfBandAudit.objects.get(release=copy).imported_at == OutOfBandAudit.objects.get(
        release=audited).imported_at
    texts = {generation.pk for generation in Generation.objects.filter(release=copy)}
    assert set(HumanReaderResult.objects.filter(release=copy, generation__isnull=False)
               .values_list("generation_id", flat=True)) <= texts
    assert all(reader.stimulus == str(reader.generation_id) for reader in
               HumanReaderResult.objects.filter(release=copy, generation__isnull=False))
    assert str(checks.filter(auditor_name="demo-auditor-1").first()).endswith(
        " by demo-auditor-1")
    # Its texts have other ids here than in its snapshot, and its snapshot, not recoded,
    # still gives the original's configuration hash: nothing else differs.
    assert release_verify(release=copy).differences == [
        "snapshot release.config_hash: the stored value is not what the rows give"]


def test_an_archive_without_audit_records_loads_as_before(audited):
    files = recoded(release_archive(audited, staff=True), "old.0")
    manifest = json.loads(files["manifest.json"])
    for name in tables.AUDIT_FILES:
        del files[name], manifest["files"][name]
    files["manifest.json"] = json.dumps(manifest).encode()
    result = release_import(data=rezip(files), source="old.zip")
    assert result.created and "spot-check" not in result.message
    assert not SpotCheck.objects.filter(release=result.release).exists()


def test_each_bad_audit_row_is_one_line_and_nothing_is_written(audited):
    data = rezip(recoded(release_archive(audited, staff=True), "bad.0"))

    def with_first(name: str, **changes) -> bytes:
        lines = files_of(data)[name].decode().splitlines()
        row = {**json.loads(lines[0]), **changes}
        return forge(data, **{name.replace(".", "_dot_"): (
            "\n".join([json.dumps(row), *lines[1:]]) + "\n").encode()})

    check = audit_lines(data, "spotchecks.jsonl")[0]
    labels = [{**check["claim_labels"][0], "label": "lie"}]
    assert refused_lines(with_first("spotchecks.jsonl", claim_labels=labels)) == [
        f"spotchecks.jsonl: line 1: claim_labels: {labels[0]!r} is not a claim's label "
        f"({{position, quote, label}})"]
    assert refused_lines(with_first("spotchecks.jsonl", status="half")) == [
        "spotchecks.jsonl: line 1: status: 'half' is not one of assigned, done"]
    assert refused_lines(with_first("spotchecks.jsonl", text=10 ** 9)) == [
        f"spotchecks.jsonl: line 1: text: {10 ** 9} is not in the archive"]
    assert refused_lines(with_first("spotchecks.jsonl", auditor=7)) == [
        "spotchecks.jsonl: line 1: auditor: 7 is not a user name (1 to 150 characters) or null"]
    other = next(row for row in audit_lines(data, "spotcheck_items.jsonl")
                 if row["text"] != check["text"])
    assert refused_lines(with_first("spotchecks.jsonl", item=other["id"])) == [
        f"spotchecks.jsonl: line 1: item: item {other['id']} is a check of text "
        f"{other['text']}, not {check['text']}"]
    assert refused_lines(with_first("human_readers.jsonl", attitude=[9, 1, 1])) == [
        "human_readers.jsonl: line 1: attitude: [9, 1, 1] is not a list of answers 1-7"]
    assert refused_lines(with_first("oob_audits.jsonl", audited_on="spring")) == [
        "oob_audits.jsonl: line 1: audited_on: 'spring' is not a date (ISO 8601)"]
    assert refused_lines(with_first("spotcheck_corrections.jsonl", spot_check=None)) == [
        "spotcheck_corrections.jsonl: line 1: spot_check: null, but a value is required"]
    assert not Release.objects.filter(code="bad.0").exists()


def kept_before_the_records(release: Release, *, staff: bool = True,
                            scores_changed: bool = False, readme_kept: bool = False) -> None:
    """The release's archive as kept on a first download before this format: an older
    README, no audit files (and, to show that they still tell, a score changed, or this
    format's README: audit files taken out of an archive kept since)."""
    files = files_of(release_archive(release, staff=staff))
    manifest = json.loads(files["manifest.json"])
    for name in tables.AUDIT_FILES if staff else ():
        del files[name], manifest["files"][name]
    if not readme_kept:
        files["README.txt"] = b"An older format's description.\n"
    if scores_changed:
        files["scores.csv"] = files["scores.csv"].replace(b"complied", b"refused", 1)
    for name in ("README.txt", "scores.csv"):
        manifest["files"][name].update(sha256=tables.sha256(files[name]),
                                       bytes=len(files[name]))
    files["manifest.json"] = (json.dumps(manifest, sort_keys=True, indent=1) + "\n").encode()
    older = rezip(files)
    ReleaseArchive.objects.create(release=release, kind=archive_kind(release, staff=staff),
                                  signing_key_id="", sha256=tables.sha256(older), data=older)


def test_a_staff_archive_kept_before_it_carried_the_records_still_verifies(audited):
    """Its README and its lack of audit files are no change to the release; staff now
    download the archive built with them."""
    kept_before_the_records(audited)
    verified = release_verify(release=audited)
    assert verified.ok, verified.differences
    assert "kept staff archive, of an earlier format" in verified.checked
    served = release_archive_kept(audited, staff=True)
    assert "spotchecks.jsonl" in files_of(bytes(served.data)) and served.pk is None
    assert ReleaseArchive.objects.filter(release=audited, kind="staff").count() == 1


def test_a_public_archive_kept_with_an_earlier_readme_still_verifies(audited):
    kept_before_the_records(audited, staff=False)
    verified = release_verify(release=audited)
    assert verified.ok, verified.differences
    assert "kept public archive, of an earlier format" in verified.checked


@pytest.mark.parametrize("change", ["scores_changed", "readme_kept"])
def test_a_kept_archive_of_an_earlier_format_whose_files_differ_is_named(audited, change):
    kept_before_the_records(audited, **{change: True})
    assert "kept staff archive: not the archive the rows build now" in release_verify(
        release=audited).differences
