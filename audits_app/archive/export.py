"""Writing a published release as an archive (format: `audits_app.archive`).

The archive is made from the release's rows and its publication, which never change after
publishing, and its entries carry the publication's date: the same release exports to the
same bytes every time, for each signing key (`audits_app.archive.signing`: Ed25519 signs
deterministically). An archive of a release imported here carries the import's provenance in
its manifest, so an instance that loads it again knows whether anyone verified it.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.contrib.auth.models import AnonymousUser
from django.db import IntegrityError, transaction
from django.db.models import F

import audits_app.archive as archive_format
from audits_app import csv_files
from audits_app.archive import FORMAT, FORMAT_VERSION, signing, tables
from audits_app.archive.audit_records import audit_rows
from audits_app.models import Publication
from audits_app.models.archive import (
    ArchiveKind,
    ImportedText,
    ReleaseArchive,
    release_provenance,
)
from audits_app.pages.viewer import (
    load_snapshot,
    publication_get,
    revealed_holders,
    snapshot_for_viewer,
)
from audits_app.publication.held_cells import Cell, Holder, withheld_cells, withheld_holders
from audits_app.publication.snapshot_model import ReleaseSnapshot, SnapshotError
from runs_app.models import (
    AgentRun,
    Claim,
    CrossExamTurn,
    Generation,
    JurorVerdict,
    ReaderResponse,
    RefusalCheck,
    Release,
    ScoringVersion,
    TextScore,
)
from runs_app.scoring_versions import split_pin
from scenarios_app.files import dump_scenario
from scenarios_app.models import Visibility
from scenarios_app.schemas import ScenarioFile

WITHHELD_NOTE = "Withheld from the public archive: confidential facts are for staff only."
README = (archive_format.__doc__ or "").strip() + "\n"


def readme(*, signed: bool) -> str:
    """README.txt: the format's table, listing `manifest.sig` only when the archive has one."""
    if signed:
        return README
    return "".join(line for line in README.splitlines(keepends=True)
                   if not line.startswith(f"| `{signing.SIGNATURE_FILE}` |"))


class ArchiveRefused(Exception):
    """The release cannot be exported (it is not published)."""


@dataclass
class ArchiveBuilder:
    """The archive's files in the order they are written; the manifest comes first."""

    files: dict[str, bytes] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, data: bytes, rows: int) -> None:
        self.files[name] = data
        self.rows[name] = rows

    def add_json(self, name: str, value: Any) -> None:
        # Keys in their stored order: the pages and the API answer in that order, and so
        # must an instance that imports the archive.
        text = json.dumps(value, ensure_ascii=False, indent=1, allow_nan=False, default=str)
        self.add(name, (text + "\n").encode("utf-8"), 1)

    def add_lines(self, name: str, rows: list[dict[str, Any]]) -> None:
        self.add(name, "".join(tables.json_line(row) + "\n" for row in rows).encode("utf-8"),
                 len(rows))

    def add_csv(self, name: str, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
        encoded = [{key: tables.cell_out(value) for key, value in row.items()} for row in rows]
        self.add(name, csv_files.csv_text(encoded, columns).encode("utf-8"), len(rows))

    def manifest_files(self) -> dict[str, dict[str, Any]]:
        return {name: {"sha256": tables.sha256(data), "bytes": len(data),
                       "rows": self.rows[name]} for name, data in self.files.items()}


def release_archive(release: Release, *, staff: bool,
                    signed_by: Ed25519PrivateKey | None = None) -> bytes:
    """The ZIP of a published release; `staff=False` leaves out what the public may not see
    (see `audits_app.archive`). With `signed_by` (this instance's `signing.signing_key()`)
    it carries that key's signature of its manifest."""
    publication = Publication.objects.filter(release=release).first()
    if publication is None:
        raise ArchiveRefused(f"release {release.code} is not published: only a published "
                             f"release is archived")
    revealed = revealed_holders(release.pk)
    # Staff get the snapshot as stored; the public the viewer's typed copy, as frozen.
    visible = None if staff else snapshot_for_viewer(
        _typed_snapshot(publication), AnonymousUser(), revealed=revealed)
    public_slugs = None if visible is None else {s.slug for s in visible.scenarios}
    held = set() if visible is None else withheld_cells(visible, revealed)
    builder = ArchiveBuilder()
    builder.add("README.txt", readme(signed=signed_by is not None).encode("utf-8"), 1)
    builder.add_json("snapshot.json", publication.snapshot if visible is None
                     else visible.as_data())
    builder.add_json("config.json", release.config if visible is None
                     else visible.release.config)
    scoring = _scoring_version(release)
    if scoring is not None:
        builder.add_json("scoring_version.json", scoring)
    scenarios = _scenario_files(release, builder, public_slugs)
    texts = _rows(tables.TEXTS, _generations(release, public_slugs, held), staff)
    text_ids = {row["id"] for row in texts}
    named = _snapshot_ids(release)
    builder.add_lines("texts.jsonl", _renamed(texts, named, "id"))
    builder.add_lines("refusals.jsonl", _renamed(_rows(tables.REFUSALS, RefusalCheck.objects.filter(
        release=release, generation_id__in=text_ids).annotate(
        text=F("generation_id"), judge_model=F("judge__openrouter_id")), staff), named))
    verdicts = JurorVerdict.objects.filter(release=release, generation_id__in=text_ids).annotate(
        text=F("generation_id"), juror_model=F("juror__openrouter_id"))
    verdict_rows = _rows(tables.VERDICTS, verdicts, staff)
    builder.add_lines("verdicts.jsonl", _renamed(verdict_rows, named))
    builder.add_csv("claims.csv", _claims({row["id"] for row in verdict_rows}),
                    tables.CLAIM_COLUMNS)
    builder.add_lines("reader_responses.jsonl", _renamed(_rows(tables.READERS, _responses(
        release, public_slugs, text_ids), staff), named))
    builder.add_lines("transcripts.jsonl", _renamed(_transcripts(release, text_ids, staff),
                                                    named))
    builder.add_lines("crossexam.jsonl", _renamed(_rows(
        tables.CROSSEXAM, CrossExamTurn.objects.filter(
            release=release, generation_id__in=text_ids).annotate(
            text=F("generation_id"), judge_model=F("judge__openrouter_id")), staff), named))
    builder.add_csv("scores.csv", _renamed(_scores(release, text_ids), named),
                    tables.SCORE_COLUMNS)
    if staff:  # a public archive carries none (`audit_records` says why)
        for name, rows in audit_rows(release, named).items():
            builder.add_lines(name, rows)
    manifest = _manifest(release, publication, builder, scenarios, scoring, staff=staff)
    return _zip(manifest, builder, publication, signed_by)


def _snapshot_ids(release: Release) -> dict[int, int]:
    """The ids a release imported here gives its texts in its snapshot (`ImportedText`), by
    the rows they became here; none for a release produced here, whose ids are its own."""
    return dict(ImportedText.objects.filter(release=release).values_list(
        "generation_id", "snapshot_id"))


def _renamed(rows: list[dict[str, Any]], named: dict[int, int],
             key: str = "text") -> list[dict[str, Any]]:
    """Rows naming texts by the ids the snapshot uses, so that the archive's files and its
    snapshot name each text alike."""
    if not named:
        return rows
    return [{**row, key: named.get(row[key], row[key])} if row.get(key) is not None else row
            for row in rows]


def _scoring_version(release: Release) -> dict[str, Any] | None:
    name, digest = split_pin(release.config.get("scoring_version"))
    stored = ScoringVersion.objects.filter(content_hash=digest).first()
    if stored is None:
        return None
    return {"name": stored.name, "content_hash": stored.content_hash, "content": stored.content}


def _scenario_files(release: Release, builder: ArchiveBuilder,
                    public_slugs: set[str] | None) -> list[dict[str, Any]]:
    """Each pinned version as a scenario file; in a public archive, public ones only and
    with their confidential facts replaced by a note."""
    entries = []
    versions = release.scenario_versions.select_related("scenario").order_by("scenario__slug")
    for version in versions:
        slug = version.scenario.slug
        if public_slugs is not None and (slug not in public_slugs or version.content.get(
                "visibility") != Visibility.PUBLIC):
            continue
        document = ScenarioFile.model_validate(version.content)
        redacted = public_slugs is not None
        if redacted:
            document = document.model_copy(update={"confidential": [
                item.model_copy(update={"text": WITHHELD_NOTE})
                for item in document.confidential]})
        name = f"scenarios/{slug}.yaml"
        builder.add(name, dump_scenario(document).encode("utf-8"), 1)
        entries.append({"slug": slug, "file": name, "version_hash": version.content_hash,
                        "content_hash": document.content_hash(), "redacted": redacted})
    return entries


def _generations(release: Release, public_slugs: set[str] | None, held: set[Cell]):
    """The texts an archive holds: a public one leaves out held-out scenarios and the cells
    held for the arena or reading studies (until revealed); everything it holds about a text
    follows these."""
    rows = Generation.objects.filter(release=release).annotate(
        model_id_text=F("model__openrouter_id"), scenario=F("scenario_version__scenario__slug"))
    for slug, task, condition, variant in held:
        rows = rows.exclude(scenario_version__scenario__slug=slug, task=task,
                            condition=condition, variant=variant)
    return rows if public_slugs is None else rows.filter(
        scenario_version__scenario__slug__in=public_slugs)


def _responses(release: Release, public_slugs: set[str] | None, text_ids: set[int]):
    rows = ReaderResponse.objects.filter(release=release).annotate(
        text=F("generation_id"), scenario=F("scenario_version__scenario__slug"))
    if public_slugs is not None:
        rows = rows.filter(scenario_version__scenario__slug__in=public_slugs)
    return [row for row in rows.order_by("pk") if row.text is None or row.text in text_ids]


def _rows(table: tables.Table, queryset, staff: bool) -> list[dict[str, Any]]:
    """One dict per row: its id, its references by name, and the table's columns."""
    rows = []
    items = queryset.order_by("pk") if hasattr(queryset, "order_by") else queryset
    for item in items:
        row: dict[str, Any] = {"id": item.pk}
        for name, attribute in (("text", "text"), ("model", "model_id_text"),
                                ("scenario", "scenario"), ("juror", "juror_model"),
                                ("judge", "judge_model")):
            if hasattr(item, attribute):
                row[name] = getattr(item, attribute)
        for column in table.columns(staff=staff):
            value = getattr(item, column)
            row[column] = value.isoformat() if hasattr(value, "isoformat") else value
        rows.append(row)
    return rows


def _claims(verdict_ids: set[int]) -> list[dict[str, Any]]:
    return [{"verdict": claim.verdict_id, "position": claim.position, "quote": claim.quote,
             "label": claim.label, "basis": json.dumps(claim.basis, ensure_ascii=False)}
            for claim in Claim.objects.filter(verdict_id__in=verdict_ids).order_by("pk")]


def _transcripts(release: Release, text_ids: set[int], staff: bool) -> list[dict[str, Any]]:
    runs = AgentRun.objects.filter(release=release, generation_id__in=text_ids).annotate(
        text=F("generation_id"))
    rows = _rows(tables.TRANSCRIPTS, runs, staff)
    if not staff:
        for row in rows:
            row["transcript"] = [message for message in row["transcript"]
                                 if not (isinstance(message, dict)
                                         and message.get("role") in tables.PROMPT_ROLES)]
    return rows


def _scores(release: Release, text_ids: set[int]) -> list[dict[str, Any]]:
    return [{"text": score.generation_id,
             **{name: getattr(score, name) for name in tables.SCORE_FIELDS}}
            for score in TextScore.objects.filter(release=release, generation_id__in=text_ids)
            .order_by("generation_id")]


def _manifest(release: Release, publication: Publication, builder: ArchiveBuilder,
              scenarios: list[dict[str, Any]], scoring: dict[str, Any] | None, *,
              staff: bool) -> dict[str, Any]:
    withheld = [] if staff else [
        "held-out scenarios, their texts, answers and scores",
        "confidential facts (replaced by a note in each scenario file)",
        "prompts and raw model replies",
        "prompts in agent transcripts (the agents' answers are kept)",
    ]
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": "staff" if staff else "public",
        "release": {
            "code": release.code, "title": release.title, "language": release.language,
            "published_at": publication.published_at.isoformat(),
            "frozen_at": release.frozen_at.isoformat() if release.frozen_at else None,
            "config_hash": publication.config_hash,
            "snapshot_hash": publication.snapshot_hash,
            "gate_override_reason": publication.gate_override_reason,
        },
        "scoring_version": None if scoring is None else {
            "name": scoring["name"], "content_hash": scoring["content_hash"]},
        "scenarios": scenarios,
        "withheld": withheld,
        "files": builder.manifest_files(),
    }
    provenance = release_provenance(release)
    if provenance.imported:
        # Signed here or not, the figures were not produced here: say whether anyone
        # verified them, as every page of the release does.
        manifest["provenance"] = provenance.as_dict()
    return manifest


def _zip(manifest: dict[str, Any], builder: ArchiveBuilder, publication: Publication,
         signed_by: Ed25519PrivateKey | None) -> bytes:
    """Entries dated with the publication, in a fixed order: the same bytes every time. The
    signature, when there is one, covers the manifest's bytes exactly as they are written."""
    stamp = publication.published_at.utctimetuple()[:6]
    manifest_bytes = (json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=1)
                      + "\n").encode("utf-8")
    signature = [] if signed_by is None else [
        (signing.SIGNATURE_FILE, signing.signature_file(manifest_bytes, signed_by))]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        entries = [("manifest.json", manifest_bytes), *signature, *builder.files.items()]
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def archive_name(release: Release, *, staff: bool) -> str:
    return f"{release.code}{'-staff' if staff else ''}.zip"


# The public archive a download gets, by the holders whose texts are still withheld: each
# is built once and kept, and the next one is built when a holder reveals its texts.
PUBLIC_KINDS = {
    (): ArchiveKind.PUBLIC,
    (Holder.ARENA,): ArchiveKind.PUBLIC_WITHOUT_ARENA,
    (Holder.READING_STUDIES,): ArchiveKind.PUBLIC_WITHOUT_STUDIES,
    (Holder.ARENA, Holder.READING_STUDIES): ArchiveKind.PUBLIC_WITHOUT_BOTH,
}


def archive_kind(release: Release, *, staff: bool) -> str:
    """Which archive a download gets now: the staff one, the public one, or, while the
    release's arena or reading studies hold texts, the public one without them (the full
    public archive is built once every holder has revealed its texts)."""
    if staff:
        return ArchiveKind.STAFF
    publication = publication_get(release.code)
    if publication is None:
        return ArchiveKind.PUBLIC
    return PUBLIC_KINDS[tuple(withheld_holders(_typed_snapshot(publication),
                                               revealed_holders(release.pk)))]


def without_audit_records(data: bytes) -> bool:
    """Whether a staff archive was built before staff archives carried the audit records
    (its file names alone are read)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return tables.SPOTCHECKS.file not in archive.namelist()


def _typed_snapshot(publication: Publication) -> ReleaseSnapshot:
    """The publication's snapshot as the public pages read it; refused when it has not
    that shape, since no public view of it can then be built."""
    try:
        return load_snapshot(publication)
    except SnapshotError as error:
        raise ArchiveRefused(f"release {publication.release.code}: its snapshot does not have "
                             f"the shape the public pages read, so no public view of it is "
                             f"built ({str(error).splitlines()[0]})") from None


def release_archive_kept(release: Release, *, staff: bool) -> ReleaseArchive:
    """The release's archive as first built, kept with its hash: built on the first
    download, read on every other (a published release, and so its archive, never changes).
    One is kept per signing key, signed as it is built. Two processes building it at once
    keep the first; both serve the same bytes."""
    kind = archive_kind(release, staff=staff)
    key = signing.signing_key()
    key_id = "" if key is None else signing.key_id(key.public_key())
    kept = ReleaseArchive.objects.filter(release=release, kind=kind,
                                         signing_key_id=key_id).first()
    if kept is not None and not (staff and without_audit_records(bytes(kept.data))):
        return kept
    data = release_archive(release, staff=staff, signed_by=key)
    if kept is not None:
        # Kept before staff archives carried the audit records: one loaded elsewhere could
        # not be verified there. The kept row cannot change; staff downloads are few, and
        # each gets the archive built now.
        return ReleaseArchive(release=release, kind=kind, signing_key_id=key_id,
                              sha256=tables.sha256(data), data=data)
    try:
        with transaction.atomic():
            return ReleaseArchive.objects.create(release=release, kind=kind,
                                                 signing_key_id=key_id,
                                                 sha256=tables.sha256(data), data=data)
    except IntegrityError:
        return ReleaseArchive.objects.get(release=release, kind=kind, signing_key_id=key_id)
