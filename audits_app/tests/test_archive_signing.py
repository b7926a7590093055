"""Signed release archives: an instance with a key signs what it exports, and an import is
verified, unverified (and marked so wherever the release is shown) or refused.

The archives imported here are arc.0's under another code (`archives.recoded`), as another
instance would have exported them, so that the original stays beside the copy.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import logging
import stat

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audits_app.archive.export import release_archive
from audits_app.archive.load import ArchiveError, release_import
from audits_app.archive.signing import SIGNATURE_FILE, UNSIGNED
from audits_app.models import ReleaseArchive, ReleaseImport
from audits_app.tests.archives import files_of, forge, recoded, rezip, signed
from runs_app.models import Generation, Release

pytestmark = pytest.mark.django_db
UNVERIFIED_PAGE = "neither produced nor verified here"


def with_a_text_changed(files: dict[str, bytes]) -> bytes:
    """texts.jsonl with one character of its first text changed (one byte, in ASCII)."""
    lines = files["texts.jsonl"].decode().split("\n")
    at = lines[0].index('"text":"') + len('"text":"')
    lines[0] = lines[0][:at] + ("X" if lines[0][at] != "X" else "Y") + lines[0][at + 1:]
    return "\n".join(lines).encode()


def refused(data: bytes) -> list[str]:
    with pytest.raises(ArchiveError) as error:
        release_import(data=data, source="copy.zip")
    return error.value.lines


def test_an_instance_with_a_key_signs_every_archive_it_exports(
        published, client, settings, archive_key):
    settings.ARCHIVE_SIGNING_KEY_FILE = ""
    unsigned = client.get("/releases/arc.0/archive.zip").content
    settings.ARCHIVE_SIGNING_KEY_FILE = str(archive_key.path)
    first = client.get("/releases/arc.0/archive.zip").content

    files = files_of(first)
    signature = json.loads(files[SIGNATURE_FILE])
    assert SIGNATURE_FILE not in files_of(unsigned)
    assert list(files)[:2] == ["manifest.json", SIGNATURE_FILE]
    assert signature["algorithm"] == "ed25519" and signature["key_id"] == archive_key.key_id
    archive_key.private.public_key().verify(base64.b64decode(signature["signature"]),
                                            files["manifest.json"])
    assert client.get("/releases/arc.0/archive.zip").content == first  # kept, per key
    assert sorted(ReleaseArchive.objects.filter(release=published).values_list(
        "signing_key_id", flat=True)) == ["", archive_key.key_id]


def test_an_archive_signed_by_a_trusted_key_imports_verified(
        published, settings, archive_key, other_key):
    settings.ARCHIVE_TRUSTED_KEYS = f"{archive_key.line},\n{other_key.line}\n"
    data = signed(recoded(release_archive(published, staff=True), "copy.0"), other_key.private)

    result = release_import(data=data, source="copy.zip")

    row = ReleaseImport.objects.get(release=result.release)
    assert (row.verified, row.signing_key_id, row.unverified_reason) == (
        True, other_key.key_id, "")
    assert result.message.endswith(f"; verified: signed by trusted key {other_key.key_id}")


def test_a_text_changed_under_a_trusted_signature_is_refused_and_nothing_is_written(
        published, settings, other_key):
    settings.ARCHIVE_TRUSTED_KEYS = other_key.line
    files = recoded(release_archive(published, staff=True), "copy.0")
    genuine = signed(files, other_key.private)
    tampered = forge(genuine, texts_dot_jsonl=with_a_text_changed(files))
    counts = Release.objects.count(), Generation.objects.count()

    assert files_of(tampered)[SIGNATURE_FILE] == files_of(genuine)[SIGNATURE_FILE]
    assert refused(tampered) == [
        f"copy.zip: manifest.sig: the signature of trusted key {other_key.key_id} does not "
        f"match manifest.json: the archive was changed after it was signed; nothing was "
        f"imported"]
    assert (Release.objects.count(), Generation.objects.count()) == counts
    assert release_import(data=genuine, source="copy.zip").created


def test_an_unsigned_forged_archive_is_imported_unverified_and_every_page_says_so(
        published, client, settings, other_key):
    settings.ARCHIVE_TRUSTED_KEYS = other_key.line
    files = recoded(release_archive(published, staff=True), "copy.0")
    forged = forge(rezip(files), texts_dot_jsonl=with_a_text_changed(files))

    result = release_import(data=forged, source="forged.zip")

    row = ReleaseImport.objects.get(release=result.release)
    assert (row.verified, row.signing_key_id, row.unverified_reason) == (False, "", UNSIGNED)
    assert result.message.endswith("; imported, unverified: the archive is not signed")
    page = client.get("/releases/copy.0/").content.decode()
    body = page.split("<main", 1)[-1]
    assert "Imported, unverified." in body and "an unsigned archive" in body
    assert body.index(UNVERIFIED_PAGE) < body.index("<h2")  # near the top
    assert UNVERIFIED_PAGE not in client.get("/releases/arc.0/").content.decode()
    assert UNVERIFIED_PAGE in client.get("/releases/copy.0/texts/").content.decode()
    front = client.get("/").content.decode()
    assert ('copy.0</a> <strong class="unverified-mark">imported, unverified</strong>'
            in front)
    assert 'arc.0</a> <strong class="unverified-mark">' not in front

    answer = client.get("/api/v1/releases/copy.0/").json()
    assert answer["provenance"] == {"imported": True, "verified": False, "key_id": "",
                                    "reason": UNSIGNED}
    assert client.get("/api/v1/releases/arc.0/").json()["provenance"]["imported"] is False
    listed = {entry["code"]: entry["provenance"]
              for entry in client.get("/api/v1/releases/").json()["results"]}
    assert listed["copy.0"]["verified"] is False and listed["arc.0"]["verified"] is True
    schema = client.get("/api/v1/schema/?format=json").json()
    assert "verified" in schema["components"]["schemas"]["Provenance"]["properties"]

    for url in ("/releases/copy.0/leaderboard.csv", "/api/v1/releases/copy.0/texts.csv"):
        rows = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
        assert list(rows[0])[-1] == "provenance", url
        assert {row["provenance"] for row in rows} == {f"imported, unverified: {UNSIGNED}"}
    assert not client.get("/releases/arc.0/leaderboard.csv").content.decode().splitlines()[
        0].endswith(",provenance")


def test_an_archive_re_exported_from_an_unverified_import_stays_unverified(
        published, settings, other_key):
    """The instance that imported it unverified may sign its own export, trusted or not:
    its signature vouches for the file, not for figures it never checked."""
    settings.ARCHIVE_TRUSTED_KEYS = other_key.line
    copy = release_import(data=rezip(recoded(release_archive(published, staff=True),
                                             "copy.0")), source="copy.zip").release

    again = files_of(release_archive(copy, staff=True))

    assert json.loads(again["manifest.json"])["provenance"] == {
        "imported": True, "verified": False, "key_id": "", "reason": UNSIGNED}
    vouched = signed(recoded(rezip(again), "copy.1"), other_key.private)
    result = release_import(data=vouched, source="copy.1.zip")
    row = ReleaseImport.objects.get(release=result.release)
    assert not row.verified and row.signing_key_id == other_key.key_id
    assert "had imported the release unverified (the archive is not signed)" in (
        row.unverified_reason)


def test_a_key_this_instance_does_not_trust_imports_unverified(
        published, client, settings, archive_key, other_key):
    settings.ARCHIVE_TRUSTED_KEYS = archive_key.line  # its own key, not the other one
    data = signed(recoded(release_archive(published, staff=True), "copy.0"), other_key.private)

    result = release_import(data=data, source="copy.zip")

    row = ReleaseImport.objects.get(release=result.release)
    assert (row.verified, row.signing_key_id) == (False, other_key.key_id)
    assert row.unverified_reason == (f"the archive is signed by key {other_key.key_id}, "
                                     f"which this instance does not trust")
    page = client.get("/releases/copy.0/").content.decode()
    assert f"signed by key <code>{other_key.key_id}</code>, a key this site does not trust" in (
        page)


def test_a_signature_file_that_is_not_one_is_one_line(published):
    files = recoded(release_archive(published, staff=True), "copy.0")

    assert refused(rezip({**files, SIGNATURE_FILE: b"[1, 2]"})) == [
        "copy.zip: manifest.sig: not an archive signature (algorithm is not 'ed25519'); "
        "nothing was imported"]
    assert not Release.objects.filter(code="copy.0").exists()


def test_the_private_key_is_never_printed_or_logged(
        published, client, settings, tmp_path, caplog, capsys):
    path = tmp_path / "instance.pem"
    out, err = io.StringIO(), io.StringIO()
    with caplog.at_level(logging.DEBUG):
        call_command("archive_key", "--out", str(path), "--name", "bb.example",
                     stdout=out, stderr=err)
        secret = "".join(path.read_text().splitlines()[1:-1])
        settings.ARCHIVE_SIGNING_KEY_FILE = str(path)
        assert client.get("/releases/arc.0/archive.zip").status_code == 200
        call_command("export_release", "arc.0", "--out", str(tmp_path / "a.zip"),
                     stdout=out, stderr=err)
        with pytest.raises(CommandError) as again:
            call_command("archive_key", "--out", str(path), stdout=out, stderr=err)
        not_a_key = tmp_path / "not-a-key.pem"
        not_a_key.write_text("-----BEGIN PRIVATE KEY-----\nTOPSECRETVALUE\n"
                             "-----END PRIVATE KEY-----\n")
        settings.ARCHIVE_SIGNING_KEY_FILE = str(not_a_key)
        with pytest.raises(CommandError) as broken:
            call_command("export_release", "arc.0", "--out", str(tmp_path / "b.zip"),
                         stdout=out, stderr=err)

    printed = out.getvalue()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert printed.startswith("ssh-ed25519 ") and printed.splitlines()[0].endswith(" bb.example")
    assert "exists already" in str(again.value) and secret in path.read_text()
    assert str(broken.value) == (f"BAITBENCH_ARCHIVE_SIGNING_KEY: {not_a_key}: not an "
                                 f"unencrypted Ed25519 private key in PEM (make one with "
                                 f"manage.py archive_key)")
    captured = capsys.readouterr()
    everything = "\n".join([printed, err.getvalue(), caplog.text, captured.out, captured.err,
                            str(broken.value)])
    assert len(secret) > 40 and secret not in everything
    assert "TOPSECRETVALUE" not in everything


def test_every_api_answer_about_an_unverified_import_says_so(published, client):
    """Issue 20: the leaderboard, texts, compare and model-history answers carry the
    provenance, as the release answer, the pages and the CSVs do."""
    files = recoded(release_archive(published, staff=True), "copy.0")
    release_import(data=rezip(files), source="copy.zip")
    unverified = {"imported": True, "verified": False, "key_id": "", "reason": UNSIGNED}
    produced_here = {"imported": False, "verified": True, "key_id": "", "reason": ""}

    for code, provenance in (("copy.0", unverified), ("arc.0", produced_here)):
        assert client.get(f"/api/v1/releases/{code}/leaderboard/").json()[
            "provenance"] == provenance
        texts = client.get(f"/api/v1/releases/{code}/texts/?limit=2").json()
        assert texts["provenance"] == provenance and len(texts["results"]) == 2
    compared = client.get("/api/v1/releases/arc.0/compare/copy.0/").json()
    assert (compared["provenance_a"], compared["provenance_b"]) == (produced_here, unverified)
    model = published.parsed_config().writers[0]
    history = client.get(f"/api/v1/models/{model}/").json()
    by_release = {entry["release"]: entry["provenance"] for entry in history["entries"]}
    assert by_release == {"arc.0": produced_here, "copy.0": unverified}

    schema = client.get("/api/v1/schema/?format=json").json()
    components = schema["components"]["schemas"]
    assert "provenance" in components["Leaderboard"]["properties"]
    assert "provenance_b" in components["Compare"]["properties"]
    assert "provenance" in components["ModelHistoryEntry"]["properties"]
    texts_page = next(item for name, item in components.items()
                      if name.startswith("PaginatedTextScore"))
    assert "provenance" in texts_page["properties"]


def test_the_readme_in_an_archive_lists_manifest_sig_only_when_there_is_one(
        published, client, settings, archive_key):
    settings.ARCHIVE_SIGNING_KEY_FILE = ""
    unsigned = files_of(client.get("/releases/arc.0/archive.zip").content)
    settings.ARCHIVE_SIGNING_KEY_FILE = str(archive_key.path)
    signed_files = files_of(client.get("/releases/arc.0/archive.zip").content)

    assert SIGNATURE_FILE in signed_files and SIGNATURE_FILE not in unsigned
    assert f"| `{SIGNATURE_FILE}` |" in signed_files["README.txt"].decode()
    assert SIGNATURE_FILE not in unsigned["README.txt"].decode()
    # The README is otherwise the same table, and the manifest covers it either way.
    assert unsigned["README.txt"].decode().splitlines() == [
        line for line in signed_files["README.txt"].decode().splitlines()
        if SIGNATURE_FILE not in line]
    signed_archive = client.get("/releases/arc.0/archive.zip").content
    assert release_import(data=signed_archive_recoded(signed_archive), source="copy.zip").created


def signed_archive_recoded(data: bytes) -> bytes:
    return rezip(recoded(data, "copy.0"))


def test_a_misconfigured_signing_key_is_a_check_error_and_a_clear_refusal_not_a_500(
        published, client, settings, tmp_path, caplog):
    from django.core import checks

    not_a_key = tmp_path / "not-a-key.pem"
    not_a_key.write_text("-----BEGIN PRIVATE KEY-----\nTOPSECRETVALUE\n-----END PRIVATE KEY-----\n")
    for broken in (str(not_a_key), str(tmp_path / "missing.pem")):
        settings.ARCHIVE_SIGNING_KEY_FILE = broken
        errors = [message for message in checks.run_checks()
                  if message.id == "audits_app.E001"]
        assert len(errors) == 1 and errors[0].msg.startswith(
            f"BAITBENCH_ARCHIVE_SIGNING_KEY: {broken}: ")
        with caplog.at_level(logging.ERROR):
            response = client.get("/releases/arc.0/archive.zip")
        assert response.status_code == 503, response.status_code
        assert "archive signing key is misconfigured" in response.content.decode()
        assert broken not in response.content.decode(), "a visitor is not told the path"
        assert "TOPSECRETVALUE" not in response.content.decode() + caplog.text
    assert "BAITBENCH_ARCHIVE_SIGNING_KEY" in caplog.text
    settings.ARCHIVE_TRUSTED_KEYS = "ssh-rsa AAAA nobody"
    assert [message.msg for message in checks.run_checks() if message.id == "audits_app.E001"
            ][-1] == "BAITBENCH_ARCHIVE_TRUSTED_KEYS: entry 1 is not an ssh-ed25519 public key line"

    settings.ARCHIVE_SIGNING_KEY_FILE = ""
    settings.ARCHIVE_TRUSTED_KEYS = ""
    assert not [message for message in checks.run_checks() if message.id == "audits_app.E001"]
    assert client.get("/releases/arc.0/archive.zip").status_code == 200


def test_staff_read_an_import_in_the_admin_and_nobody_changes_it(published, client):
    from django.contrib.auth.models import User

    result = release_import(data=rezip(recoded(release_archive(published, staff=True),
                                               "copy.0")), source="copy.zip")
    row = ReleaseImport.objects.get(release=result.release)
    client.force_login(User.objects.create_superuser("root", password="pw"))
    listing = client.get("/admin/audits_app/releaseimport/").content.decode()
    assert "copy.0" in listing
    page = client.get(f"/admin/audits_app/releaseimport/{row.pk}/change/").content.decode()
    assert UNSIGNED in page and 'name="_save"' not in page
    assert client.get("/admin/audits_app/releaseimport/add/").status_code == 403
    client.post(f"/admin/audits_app/releaseimport/{row.pk}/delete/", {"post": "yes"})
    assert ReleaseImport.objects.filter(pk=row.pk).exists()
