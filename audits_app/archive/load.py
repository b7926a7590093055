"""Loading a release archive into this instance (`manage.py import_release FILE`).

Everything is checked before anything is written: the manifest, every file's SHA-256, size
and row count, every row's fields and references, the scenario files against their hashes,
and for a staff archive the snapshot and configuration against the publication's hashes. A
problem is reported as `FILE: what is wrong` and nothing is written. The rows then go in as
new rows, in one transaction, and the release is marked published last: everything under a
published release refuses to change, so nothing is written after that.

A staff archive's audit records (`audits_app.archive.audit_records`) go in as the release's
rows too, in the same transaction and after the same checks, so that `verify_release` here
computes the figures drawn from them again; an archive written before it carried them loads
as it did then, without them.

Importing the same archive again finds the release here and says so.

Its signature is checked first (`audits_app.archive.signing`): an archive that names a key
this instance trusts but whose signature does not match is refused; one signed by a trusted
key is imported *verified*; any other is imported *unverified*, and the import row records
which key signed it or why it is unverified. A release an archive says was imported
unverified where it was signed stays unverified here.
"""

from __future__ import annotations

import csv
import io
import json
import math
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, models, transaction
from django.utils.dateparse import parse_datetime
from pydantic import ValidationError

from audits_app.archive import FORMAT, FORMAT_VERSION, audit_records, signing, tables
from audits_app.models import ImportedText, Provenance, Publication, ReleaseImport
from audits_app.publication.services import snapshot_hash
from audits_app.publication.snapshot_model import SnapshotError, snapshot_load
from runs_app.models import (
    AgentRun,
    Claim,
    CrossExamTurn,
    Generation,
    JurorVerdict,
    LlmModel,
    ReaderResponse,
    RefusalCheck,
    Release,
    ReleaseScenario,
    ReleaseStatus,
    ScoringVersion,
    Stimulus,
    TextScore,
)
from runs_app.schemas import ReleaseConfig
from runs_app.scoring_versions import ScoringFileError, scoring_from_content, split_pin
from runs_app.services import config_hash
from runs_app.words import stored_words_key
from scenarios_app.files import parse_yaml
from scenarios_app.models import Scenario, ScenarioStatus, ScenarioVersion
from scenarios_app.schemas import ScenarioFile, field_path, validate_scenario_document
from scenarios_app.services import scenario_apply

MAX_ARCHIVE_BYTES = 2 * 1024 ** 3  # uncompressed, all files together
MAX_MANIFEST_BYTES = 16 * 1024 ** 2
MAX_MEMBER_BYTES = 256 * 1024 ** 2  # one file of an archive, uncompressed
REQUIRED_FILES = ("snapshot.json", "config.json", "texts.jsonl", "refusals.jsonl",
                  "verdicts.jsonl", "claims.csv", "reader_responses.jsonl", "transcripts.jsonl",
                  "scores.csv")
LINE_TABLES = {"texts.jsonl": (tables.TEXTS, ("model", "scenario")),
               "refusals.jsonl": (tables.REFUSALS, ("text", "judge")),
               "verdicts.jsonl": (tables.VERDICTS, ("text", "juror")),
               "reader_responses.jsonl": (tables.READERS, ("text", "scenario")),
               "transcripts.jsonl": (tables.TRANSCRIPTS, ("text",)),
               "crossexam.jsonl": (tables.CROSSEXAM, ("text", "judge"))}
# Files an archive written before they existed does not have: read as empty.
OPTIONAL_FILES = ("crossexam.jsonl",)
FLOAT_SCORES = {name for name in tables.SCORE_FIELDS
                if TextScore._meta.get_field(name).get_internal_type() == "FloatField"}


class ArchiveError(Exception):
    """The archive cannot be imported; `lines` name each problem and where it is."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass
class Contents:
    """A checked archive, parsed."""

    manifest: dict[str, Any]
    archive_sha256: str
    signature: signing.SignatureVerdict
    snapshot: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    scoring: dict[str, Any] | None = None
    scenarios: dict[str, ScenarioFile] = field(default_factory=dict)
    lines: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    claims: list[dict[str, Any]] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)

    @property
    def code(self) -> str:
        return self.manifest["release"]["code"]

    @property
    def staff(self) -> bool:
        return self.manifest["kind"] == "staff"


@dataclass(frozen=True)
class ImportResult:
    release: Release
    created: bool  # False: the same release was here already; nothing was written
    kind: str
    counts: dict[str, int]
    provenance: Provenance | None = None

    @property
    def message(self) -> str:
        if not self.created:
            return (f"release {self.release.code} is already here with this snapshot; "
                    f"nothing was imported")
        rows = ", ".join(f"{count} {name}" for name, count in self.counts.items())
        return (f"imported release {self.release.code} from a {self.kind} archive: {rows}; "
                f"{self.trust}")

    @property
    def trust(self) -> str:
        """Whether anyone vouches for what was imported, in one phrase."""
        provenance = self.provenance
        if provenance is None:
            return ""
        if provenance.verified:
            return f"verified: signed by trusted key {provenance.key_id}"
        return f"imported, unverified: {provenance.reason}"


def release_import(*, data: bytes, source: str = "archive", user=None) -> ImportResult:
    """Check the archive whole, then load it all or nothing (see the module docstring)."""
    contents = read_archive(data, source)
    already = _already_here(contents)
    if already is not None:
        return ImportResult(already, created=False, kind=contents.manifest["kind"], counts={})
    try:
        with transaction.atomic():
            return _write(contents, user)
    except IntegrityError as error:
        raise ArchiveError([f"{source}: its rows conflict with rows already here ({error}); "
                            f"nothing was imported"]) from None


# --- reading and checking ---------------------------------------------------------------


def read_archive(data: bytes, source: str) -> Contents:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ArchiveError([f"{source}: not a ZIP archive"]) from None
    with archive:
        verdict = _signature(archive, source)
        files = _verified_files(archive, source)
    contents = Contents(manifest=files.pop("manifest.json"), archive_sha256=tables.sha256(data),
                        signature=verdict)
    problems = _parse(contents, files)
    problems += _references(contents) if not problems else []
    if problems:
        raise ArchiveError(problems)
    return contents


def _signature(archive: zipfile.ZipFile, source: str) -> signing.SignatureVerdict:
    """Whose signature the manifest carries, checked before anything else is read: a
    trusted key's signature that does not match refuses the archive."""
    names = archive.namelist()
    if "manifest.json" not in names:
        raise ArchiveError([f"{source}: manifest.json: missing: not a BaitBench release archive"])
    manifest_size = archive.getinfo("manifest.json").file_size
    if manifest_size > MAX_MANIFEST_BYTES:
        raise ArchiveError([f"{source}: manifest.json: {manifest_size} bytes, more than a "
                            f"manifest holds ({MAX_MANIFEST_BYTES})"])
    signature = None
    if signing.SIGNATURE_FILE in names:
        size = archive.getinfo(signing.SIGNATURE_FILE).file_size
        if size > signing.MAX_SIGNATURE_BYTES:
            raise ArchiveError([f"{source}: {signing.SIGNATURE_FILE}: {size} bytes, more than "
                                f"a signature holds ({signing.MAX_SIGNATURE_BYTES})"])
        signature = _member(archive, signing.SIGNATURE_FILE, size)
    try:
        return signing.signature_verdict(_member(archive, "manifest.json", manifest_size),
                                         signature)
    except (signing.SignatureRefused, signing.SigningKeyError) as error:
        raise ArchiveError([f"{source}: {error}; nothing was imported"]) from None


def _member(archive: zipfile.ZipFile, name: str, size: int) -> bytes:
    try:
        return _read_at_most(archive, name, size)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise ArchiveError([f"{name}: cannot be read ({error})"]) from None


def _verified_files(archive: zipfile.ZipFile, source: str) -> dict[str, Any]:
    """The manifest (parsed) and every file it lists (bytes), each checked against it."""
    # Folder entries (a ZIP packed again with `zip -r`) hold nothing: they are not files.
    infos = [info for info in archive.infolist() if not (info.is_dir() and not info.file_size)]
    names = [info.filename for info in infos]
    if len(set(names)) != len(names):
        raise ArchiveError([f"{source}: a file name appears twice in the archive"])
    if sum(info.file_size for info in infos) > MAX_ARCHIVE_BYTES:
        raise ArchiveError([f"{source}: more than {MAX_ARCHIVE_BYTES} bytes uncompressed"])
    manifest_size = archive.getinfo("manifest.json").file_size  # checked by `_signature`
    manifest = _manifest(_member(archive, "manifest.json", manifest_size))
    listed: dict[str, dict[str, Any]] = manifest["files"]
    problems = [f"{name}: not listed in the manifest" for name in names
                if name not in ("manifest.json", signing.SIGNATURE_FILE) and name not in listed]
    problems += [f"{name}: listed in the manifest but missing" for name in listed
                 if name not in names]
    problems += [f"{name}: required but not listed in the manifest" for name in REQUIRED_FILES
                 if name not in listed]
    files: dict[str, Any] = {"manifest.json": manifest}
    for name, expected in listed.items():
        if name not in names:
            continue
        size = expected.get("bytes")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            problems.append(f"{name}: bytes: the manifest gives no size")
            continue
        # Sizes before any reading: a member larger than a release file gets, or than its
        # manifest entry says, is refused unread; a smaller one is read (bounded) and its
        # hash tells.
        stored = archive.getinfo(name).file_size
        if max(stored, size) > MAX_MEMBER_BYTES:
            problems.append(f"{name}: {max(stored, size)} bytes, more than a release file may "
                            f"hold ({MAX_MEMBER_BYTES})")
            continue
        if stored > size:
            problems.append(f"{name}: {stored} bytes in the archive, the manifest says {size}")
            continue
        try:
            content = _read_at_most(archive, name, stored)
        except (zipfile.BadZipFile, OSError, ValueError) as error:
            problems.append(f"{name}: cannot be read ({error})")
            continue
        digest = tables.sha256(content)
        if digest != expected.get("sha256"):
            problems.append(f"{name}: SHA-256 {digest[:16]}… is not the manifest's "
                            f"{str(expected.get('sha256'))[:16]}…: the file was changed after "
                            f"export")
        elif len(content) != expected.get("bytes"):
            problems.append(f"{name}: {len(content)} bytes, the manifest says "
                            f"{expected.get('bytes')}")
        files[name] = content
    if problems:
        raise ArchiveError(problems)
    return files


def _read_at_most(archive: zipfile.ZipFile, name: str, size: int) -> bytes:
    """A member's bytes, read in chunks and never more than `size` (what its header and the
    manifest say): a member that inflates past it (a header that lies) is refused before it
    fills the memory."""
    chunks, total = [], 0
    with archive.open(name) as member:
        while chunk := member.read(1024 * 1024):
            total += len(chunk)
            if total > size:
                raise ValueError(f"inflates past the {size} bytes its header gives")
            chunks.append(chunk)
    return b"".join(chunks)


def _manifest(content: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ArchiveError([f"manifest.json: not JSON ({error})"]) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError([f"manifest.json: format: not {FORMAT!r}"])
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ArchiveError([f"manifest.json: format_version: {manifest.get('format_version')!r}"
                            f" is not {FORMAT_VERSION}, the version this instance reads"])
    problems = []
    if manifest.get("kind") not in ("public", "staff"):
        problems.append("manifest.json: kind: must be public or staff")
    release = manifest.get("release")
    if not isinstance(release, dict) or not all(
            isinstance(release.get(key), str) for key in
            ("code", "language", "published_at", "config_hash", "snapshot_hash")):
        problems.append("manifest.json: release: code, language, published_at, config_hash "
                        "and snapshot_hash are required")
    problems += [f"manifest.json: release.{key}: {release.get(key)!r} is not a date and time "
                 f"(ISO 8601)" for key in ("published_at", "frozen_at")
                 if isinstance(release, dict) and release.get(key) is not None
                 and not (isinstance(release[key], str) and parse_datetime(release[key]))]
    if not isinstance(manifest.get("files"), dict) or not all(
            isinstance(meta, dict) for meta in manifest["files"].values()):
        problems.append("manifest.json: files: a mapping of file name to sha256, bytes, rows")
    if not isinstance(manifest.get("scenarios"), list):
        problems.append("manifest.json: scenarios: a list of the scenario files")
    if not isinstance(manifest.get("provenance", {}), dict):
        problems.append("manifest.json: provenance: an object (imported, verified, reason)")
    if problems:
        raise ArchiveError(problems)
    return manifest


def _rows_problem(name: str, found: int, manifest: dict[str, Any]) -> list[str]:
    expected = manifest["files"][name].get("rows")
    return [] if found == expected else [f"{name}: {found} rows, the manifest says {expected}"]


def _parse(contents: Contents, files: dict[str, bytes]) -> list[str]:
    problems: list[str] = []
    manifest = contents.manifest
    for name in ("snapshot.json", "config.json", "scoring_version.json"):
        if name in files:
            try:
                value = json.loads(files[name].decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                problems.append(f"{name}: not JSON ({error})")
                continue
            if not isinstance(value, dict):
                problems.append(f"{name}: not a JSON object")
                continue
            setattr(contents, {"snapshot.json": "snapshot", "config.json": "config",
                               "scoring_version.json": "scoring"}[name], value)
    if problems:
        return problems
    problems += _check_release(contents)
    problems += _check_scoring(contents)
    for entry in manifest["scenarios"]:
        problems += _parse_scenario(contents, entry, files)
    for name, (table, references) in LINE_TABLES.items():
        if name in OPTIONAL_FILES and name not in files:
            contents.lines[name] = []
            continue
        rows, found = _parse_lines(name, files[name], table, references, contents.staff)
        contents.lines[name] = rows
        problems += found or _rows_problem(name, len(rows), manifest)
    problems += _parse_audit_records(contents, files)
    contents.claims, found = _parse_csv("claims.csv", files["claims.csv"], tables.CLAIM_COLUMNS)
    found = found or _cell_problems("claims.csv", contents.claims, CLAIM_CELLS)
    problems += found or _rows_problem("claims.csv", len(contents.claims), manifest)
    contents.scores, found = _parse_csv("scores.csv", files["scores.csv"], tables.SCORE_COLUMNS)
    found = found or _cell_problems("scores.csv", contents.scores, SCORE_CELLS)
    problems += found or _rows_problem("scores.csv", len(contents.scores), manifest)
    return problems


def _parse_audit_records(contents: Contents, files: dict[str, bytes]) -> list[str]:
    """The audit records (`audit_records`): in a staff archive, each file read as empty when
    the archive has none (written before they were carried); a public archive carries none."""
    problems = []
    for table, references in tables.AUDIT_TABLES:
        name = table.file
        contents.lines[name] = []
        if name not in files:
            continue
        if not contents.staff:
            problems.append(f"{name}: a public archive carries no audit records")
            continue
        rows, found = _parse_lines(name, files[name], table, tuple(references), staff=True,
                                   check=_audit_field_problem)
        contents.lines[name] = rows
        problems += found or _rows_problem(name, len(rows), contents.manifest)
    return problems


def _audit_field_problem(model: type, column: str, value: Any) -> str:
    return (_field_problem(model, column, value)
            or audit_records.field_problem(model, column, value))


def _check_release(contents: Contents) -> list[str]:
    """The snapshot and configuration belong to the manifest's release; in a staff archive
    their hashes are the publication's."""
    release = contents.manifest["release"]
    problems = []
    if not isinstance(contents.snapshot.get("release"), dict):
        problems.append("snapshot.json: release: not a JSON object")
    elif contents.snapshot["release"].get("code") != release["code"]:
        problems.append(f"snapshot.json: release.code is not {release['code']!r}")
    else:
        problems += _snapshot_shape(contents.snapshot)
    if contents.config.get("code") != release["code"]:
        problems.append(f"config.json: code is not {release['code']!r}")
    if contents.staff:
        if snapshot_hash(contents.snapshot) != release["snapshot_hash"]:
            problems.append("snapshot.json: its hash is not the manifest's snapshot_hash: the "
                            "snapshot is not the one that was published")
        if config_hash(contents.config) != release["config_hash"]:
            problems.append("config.json: its hash is not the manifest's config_hash")
    try:
        ReleaseConfig.model_validate(_stored_config(contents.config))
    except ValidationError as error:
        problems += [f"config.json: {field_path(item['loc']) or '(top)'}: {item['msg']}"
                     for item in error.errors()]
    return problems


def _snapshot_shape(snapshot: dict[str, Any]) -> list[str]:
    """The snapshot has the shape the pages read (`publication.snapshot_model`): a public
    archive's snapshot has no hash to check it by, and one out of shape would be imported
    only to fail on its pages."""
    try:
        snapshot_load(snapshot)
    except SnapshotError as error:
        return [f"snapshot.json: {line.removeprefix('snapshot.')}"
                for line in str(error).splitlines()[:20]]
    return []


def _stored_config(config: dict[str, Any]) -> dict[str, Any]:
    """The configuration as the release row keeps it: a public archive's count of withheld
    scenarios is part of the public view, not of the configuration."""
    return {key: value for key, value in config.items() if key != "held_out_scenarios"}


def _check_scoring(contents: Contents) -> list[str]:
    scoring = contents.scoring
    if scoring is None:
        return []
    try:
        digest = scoring_from_content(scoring["content"]).content_hash()
    except (KeyError, TypeError, ValidationError, ScoringFileError) as error:
        return [f"scoring_version.json: not a scoring version ({error})"]
    _, pinned = split_pin(contents.config.get("scoring_version"))
    if digest != scoring.get("content_hash") or digest != pinned:
        return ["scoring_version.json: its content's hash is not the one the release pinned"]
    return []


def _parse_scenario(contents: Contents, entry: Any, files: dict[str, bytes]) -> list[str]:
    if not isinstance(entry, dict) or not all(isinstance(entry.get(key), str) for key in
                                              ("slug", "file", "version_hash", "content_hash")):
        return ["manifest.json: scenarios: each needs slug, file, version_hash, content_hash"]
    name = entry["file"]
    if name not in files:
        return [f"{name}: named under the manifest's scenarios but not among its files"]
    try:
        text = files[name].decode("utf-8")
    except UnicodeDecodeError:
        return [f"{name}: not UTF-8"]
    data, problems = parse_yaml(text, name)
    if problems:
        return problems
    document, schema_problems = validate_scenario_document(data)
    if document is None or schema_problems:
        return [problem.line(name) for problem in schema_problems]
    digest = document.content_hash()
    if document.slug != entry["slug"]:
        return [f"{name}: slug: {document.slug!r}, the manifest says {entry['slug']!r}"]
    if digest != entry["content_hash"] or (not entry.get("redacted")
                                           and digest != entry["version_hash"]):
        return [f"{name}: its content's hash is not the one the manifest names"]
    contents.scenarios[document.slug] = document
    return []


def _parse_lines(name: str, content: bytes, table: tables.Table, references: tuple[str, ...],
                 staff: bool, check=None) -> tuple[list[dict[str, Any]], list[str]]:
    check = check or _field_problem
    required = ("id", *references, *table.columns(staff=staff))
    rows, problems = [], []
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], [f"{name}: not UTF-8 (byte {error.start})"]
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{name}: line {number}: not JSON ({error})")
            continue
        missing = [key for key in required if not isinstance(row, dict) or key not in row]
        if missing:
            problems.append(f"{name}: line {number}: missing {', '.join(missing)}")
            continue
        if not isinstance(row["id"], int) or isinstance(row["id"], bool):
            problems.append(f"{name}: line {number}: id: not a whole number")
            continue
        wrong = [f"{name}: line {number}: {column}: {found}"
                 for column in table.columns(staff=staff)
                 if (found := check(table.model, column, row[column]))]
        if wrong:
            problems += wrong
            continue
        rows.append(row)
    return rows, problems[:20]


def _field_problem(model: type, column: str, value: Any) -> str:
    """What is wrong with a JSON value for a model field ("" when nothing): the type the
    field stores, null only where the field allows it, dates in ISO 8601."""
    field = model._meta.get_field(column)
    if value is None:
        return "" if field.null else "null, but a value is required"
    if isinstance(field, models.JSONField):
        return ""
    if isinstance(field, models.BooleanField):
        return "" if isinstance(value, bool) else f"{value!r} is not true or false"
    if isinstance(field, models.IntegerField):
        return "" if isinstance(value, int) and not isinstance(value, bool) else (
            f"{value!r} is not a whole number")
    if isinstance(field, models.FloatField):
        return "" if isinstance(value, int | float) and not isinstance(value, bool) else (
            f"{value!r} is not a number")
    if isinstance(field, models.DateTimeField):
        if isinstance(value, str) and parse_datetime(value) is not None:
            return ""
        return f"{value!r} is not a date and time (ISO 8601)"
    if isinstance(field, models.CharField | models.TextField):
        return "" if isinstance(value, str) else f"{value!r} is not text"
    return ""


def _parse_csv(name: str, content: bytes,
               columns: tuple[str, ...]) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], [f"{name}: not UTF-8 (byte {error.start})"]
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        rows = [{key: tables.cell_in(value or "") for key, value in row.items()}
                for row in reader]
    except csv.Error as error:
        return [], [f"{name}: line {reader.line_num}: malformed CSV ({error})"]
    if tuple(reader.fieldnames or ()) != columns:
        return [], [f"{name}: columns {reader.fieldnames} are not {list(columns)}"]
    return rows, []


def _whole_cell(text: str) -> str:
    return "" if text.isdigit() else f"{text!r} is not a whole number"


def _number_cell(text: str) -> str:
    """Empty (no score) or a finite number."""
    if text == "":
        return ""
    try:
        return "" if math.isfinite(float(text)) else f"{text!r} is not a finite number"
    except ValueError:
        return f"{text!r} is not a number"


def _label_cell(text: str) -> str:
    return "" if text in Claim.Label.values else (
        f"{text!r} is not one of {', '.join(Claim.Label.values)}")


def _json_list_cell(text: str) -> str:
    try:
        return "" if isinstance(json.loads(text or "[]"), list) else f"{text!r} is not a list"
    except json.JSONDecodeError:
        return f"{text!r} is not JSON"


# What each CSV cell must be for its row to be written: read as text, a cell is checked
# here, so that a bad one is a line naming it and not an error halfway through the writes.
CLAIM_CELLS = {"position": _whole_cell, "label": _label_cell, "basis": _json_list_cell}
SCORE_CELLS = {"jurors_scored": _whole_cell,
               **{name: _number_cell for name in sorted(FLOAT_SCORES)}}


def _cell_problems(name: str, rows: list[dict[str, Any]],
                   checks: dict[str, Any]) -> list[str]:
    """One line per bad cell, `FILE: row N: column: why` (row 1 is the header)."""
    problems = [f"{name}: row {number}: {column}: {found}"
                for number, row in enumerate(rows, start=2)
                for column, check in checks.items() if (found := check(row[column]))]
    return problems[:20]


def _references(contents: Contents) -> list[str]:
    """Every row refers to something the archive holds."""
    problems = []
    models = {spec.get("id") for spec in contents.config.get("models", [])}
    slugs = set(contents.scenarios)
    texts = {row["id"] for row in contents.lines["texts.jsonl"]}
    verdicts = {row["id"] for row in contents.lines["verdicts.jsonl"]}
    pinned = {item.partition("@")[0] for item in contents.config.get("scenarios", [])}
    problems += [f"config.json: scenarios: {slug!r} has no scenario file"
                 for slug in sorted(pinned - slugs)]

    known = {"model": models, "juror": models, "judge": models, "scenario": slugs,
             "text": texts}
    for name, (_, references) in LINE_TABLES.items():
        for number, row in enumerate(contents.lines[name], start=1):
            for key in references:
                if row[key] is not None and (not isinstance(row[key], str | int)
                                             or row[key] not in known[key]):
                    problems.append(f"{name}: line {number}: {key}: {row[key]!r} is not in "
                                    f"the archive")
    for number, row in enumerate(contents.claims, start=2):
        if _whole(row["verdict"]) not in verdicts:
            problems.append(f"claims.csv: row {number}: verdict {row['verdict']!r} is not in "
                            f"verdicts.jsonl")
    for number, row in enumerate(contents.scores, start=2):
        if _whole(row["text"]) not in texts:
            problems.append(f"scores.csv: row {number}: text {row['text']!r} is not in "
                            f"texts.jsonl")
    problems += audit_records.reference_problems(
        contents.lines, {row["id"]: row for row in contents.lines["texts.jsonl"]}, slugs)
    shown = {text.get("id") for text in contents.snapshot.get("texts", [])
             if isinstance(text, dict)}
    problems += [f"snapshot.json: text {text_id} is not in texts.jsonl"
                 for text_id in sorted(shown - texts, key=str)[:20]]
    return problems[:50]


def _whole(value: str) -> int | None:
    return int(value) if value.isdigit() else None


# --- writing ------------------------------------------------------------------------------


def _already_here(contents: Contents) -> Release | None:
    """The release, when this archive's release is here already; an error when another
    release has its code."""
    release = Release.objects.filter(code=contents.code).first()
    if release is None:
        return None
    publication = Publication.objects.filter(release=release).first()
    if publication is not None and publication.snapshot_hash == contents.manifest["release"][
            "snapshot_hash"]:
        return release
    raise ArchiveError([f"release {contents.code}: another release with this code is here "
                        f"already ({release.get_status_display().lower()}); nothing was "
                        f"imported"])


def _write(contents: Contents, user) -> ImportResult:
    if contents.scoring is not None:
        ScoringVersion.objects.get_or_create(
            content_hash=contents.scoring["content_hash"],
            defaults={"name": contents.scoring.get("name") or "v1",
                      "content": contents.scoring["content"]})
    versions = _scenario_versions(contents)
    models = _models(contents.config)
    meta = contents.manifest["release"]
    release = Release.objects.create(
        code=contents.code, language=meta["language"], title=meta.get("title") or "",
        status=ReleaseStatus.SCORED, config=_stored_config(contents.config),
        config_hash=meta["config_hash"], frozen_at=meta.get("frozen_at") or meta["published_at"],
    )
    ReleaseScenario.objects.bulk_create(
        ReleaseScenario(release=release, scenario_version=version) for version in
        versions.values())
    text_ids = _texts(contents, release, models, versions)
    verdict_ids = _rows(contents.lines["verdicts.jsonl"], tables.VERDICTS, JurorVerdict,
                        lambda row: {"release": release, "generation_id": text_ids[row["text"]],
                                     "juror": models[row["juror"]]})
    Claim.objects.bulk_create(
        Claim(verdict_id=verdict_ids[_whole(row["verdict"])], position=int(row["position"]),
              quote=row["quote"], label=row["label"], basis=json.loads(row["basis"] or "[]"))
        for row in contents.claims)
    _rows(contents.lines["refusals.jsonl"], tables.REFUSALS, RefusalCheck,
          lambda row: {"release": release, "generation_id": text_ids[row["text"]],
                       "judge": models.get(row.get("judge"))})
    _rows(contents.lines["reader_responses.jsonl"], tables.READERS, ReaderResponse,
          lambda row: _response_references(row, release, versions, text_ids))
    _rows(contents.lines["transcripts.jsonl"], tables.TRANSCRIPTS, AgentRun,
          lambda row: {"release": release, "generation_id": text_ids[row["text"]]})
    _rows(contents.lines["crossexam.jsonl"], tables.CROSSEXAM, CrossExamTurn,
          lambda row: {"release": release, "generation_id": text_ids[row["text"]],
                       "judge": models.get(row.get("judge"))})
    TextScore.objects.bulk_create(
        TextScore(release=release, generation_id=text_ids[_whole(row["text"])],
                  **{name: _score_value(name, row[name]) for name in tables.SCORE_FIELDS})
        for row in contents.scores)
    audited = {}
    if any(table.file in contents.manifest["files"] for table, _ in tables.AUDIT_TABLES):
        audited = audit_records.audit_records_write(contents.lines, release, text_ids, _fields)
    Publication.objects.create(
        release=release, published_at=meta["published_at"], config_hash=meta["config_hash"],
        snapshot=contents.snapshot, snapshot_hash=meta["snapshot_hash"],
        gate_override_reason=meta.get("gate_override_reason") or "")
    provenance = _provenance(contents)
    ReleaseImport.objects.create(
        release=release, kind=contents.manifest["kind"], archive_sha256=contents.archive_sha256,
        manifest=contents.manifest, imported_by=user if getattr(user, "pk", None) else None,
        verified=provenance.verified, signing_key_id=provenance.key_id,
        unverified_reason=provenance.reason)
    ImportedText.objects.bulk_create(
        ImportedText(release=release, generation_id=new, snapshot_id=old)
        for old, new in text_ids.items())
    # Last: from here on everything under the release refuses to change.
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.PUBLISHED)
    release.refresh_from_db()
    counts = {"texts": len(text_ids), "verdicts": len(verdict_ids),
              "claims": len(contents.claims),
              "reader responses": len(contents.lines["reader_responses.jsonl"]),
              "agent runs": len(contents.lines["transcripts.jsonl"]),
              "cross-examination turns": len(contents.lines["crossexam.jsonl"]),
              "scores": len(contents.scores), **audited}
    return ImportResult(release, created=True, kind=contents.manifest["kind"], counts=counts,
                        provenance=provenance)


def _provenance(contents: Contents) -> Provenance:
    """The signature's verdict, unless the archive says its release was imported unverified
    where it was signed: a trusted key vouches for what it exported, and that instance did not
    vouch for these figures."""
    verdict = contents.signature
    earlier = contents.manifest.get("provenance") or {}
    if earlier.get("imported") and earlier.get("verified") is not True:
        said = str(earlier.get("reason") or "no reason given")[:500]
        return Provenance(imported=True, verified=False, key_id=verdict.key_id,
                          reason=f"{verdict.reason or 'the archive is signed by a trusted key'}"
                                 f", but the instance that exported it had imported the "
                                 f"release unverified ({said})")
    return Provenance(imported=True, verified=verdict.verified, key_id=verdict.key_id,
                      reason=verdict.reason)


def _scenario_versions(contents: Contents) -> dict[str, ScenarioVersion]:
    """Per slug, the version the release pins here: the very version when this instance has
    it, else a new version of the scenario (its working copy left as it is), else a new
    scenario. A scenario known here only from a public archive's redacted file is retired:
    its confidential facts are a note, not facts to show a writer."""
    versions = {}
    for entry in contents.manifest["scenarios"]:
        document = contents.scenarios[entry["slug"]]
        digest = document.content_hash()
        scenario = Scenario.objects.filter(slug=document.slug).first()
        if scenario is None:
            other = Scenario.objects.filter(canary=document.canary).first()
            if other is not None:
                raise ArchiveError([f"{entry['file']}: canary: scenario {other.slug!r} here "
                                    f"has the same canary"])
            scenario, _ = scenario_apply(document=document)
            if entry.get("redacted"):
                Scenario.objects.filter(pk=scenario.pk).update(status=ScenarioStatus.RETIRED)
        version = (scenario.versions.filter(content_hash=entry["version_hash"]).first()
                   or scenario.versions.filter(content_hash=digest).first())
        if version is None:
            last = scenario.versions.order_by("-number").values_list("number", flat=True).first()
            version = ScenarioVersion.objects.create(
                scenario=scenario, number=(last or 0) + 1, content_hash=digest,
                content=document.canonical())
        versions[document.slug] = version
    return versions


def _models(config: dict[str, Any]) -> dict[str, LlmModel]:
    """The release's models, registered here if they are not (a model here keeps its own
    name and family: the snapshot names models on every page)."""
    writers, jurors = set(config.get("writers", [])), set(config.get("jurors", []))
    readers = {config.get("reader"), config.get("journalist")}
    models = {}
    for spec in config.get("models", []):
        models[spec["id"]], _ = LlmModel.objects.get_or_create(
            openrouter_id=spec["id"],
            defaults={"family": spec.get("family", ""), "display_name": spec.get("name", ""),
                      "can_write": spec["id"] in writers, "can_judge": spec["id"] in jurors,
                      "can_read": spec["id"] in readers})
    return models


def _fields(row: dict[str, Any], table: tables.Table) -> dict[str, Any]:
    """The table's columns present in the row (a public archive has no staff columns)."""
    values = {}
    for name in table.columns(staff=True):
        if name in row:
            value = row[name]
            if name == "finished_at" and value is not None:
                value = datetime.fromisoformat(value)
            values[name] = value
    return values


def _texts(contents: Contents, release: Release, models: dict[str, LlmModel],
           versions: dict[str, ScenarioVersion]) -> dict[int, int]:
    rows = contents.lines["texts.jsonl"]
    # With each text's words key (`Generation.words_key`), which `bulk_create` does not
    # compute: an imported text with a held text's words is held like it.
    created = Generation.objects.bulk_create(
        Generation(release=release, model=models[row["model"]],
                   scenario_version=versions[row["scenario"]], **_fields(row, tables.TEXTS),
                   words_key=stored_words_key(row.get("text", "")))
        for row in rows)
    return {row["id"]: generation.pk for row, generation in zip(rows, created, strict=True)}


def _rows(rows: list[dict[str, Any]], table: tables.Table, model: type,
          references) -> dict[int, int]:
    created = model.objects.bulk_create(
        model(**{**_fields(row, table), **references(row)}) for row in rows)
    return {row["id"]: item.pk for row, item in zip(rows, created, strict=True)}


def _response_references(row: dict[str, Any], release: Release,
                         versions: dict[str, ScenarioVersion],
                         text_ids: dict[int, int]) -> dict[str, Any]:
    """A reader's answer to a generated text names it in its key too: renamed with it."""
    generation_id = text_ids[row["text"]] if row.get("text") is not None else None
    references = {"release": release, "scenario_version": versions[row["scenario"]],
                  "generation_id": generation_id}
    if row["stimulus"] == Stimulus.GENERATION and generation_id is not None:
        references["stimulus_key"] = str(generation_id)
    return references


def _score_value(name: str, text: str) -> Any:
    if name in FLOAT_SCORES:
        return float(text) if text != "" else None
    if name == "jurors_scored":
        return int(text)
    return text
