"""Is a published release what it was when it was published? (DESIGN section 8)

The database refuses changes to a published release (baitbench_site.immutability), but the
role that owns the tables can still disable or drop those triggers. So the evidence can be
checked from the stored rows alone: the snapshot against its hash, the configuration against
its hash, the snapshot's figures against the same figures computed again from the rows, and
each archive against the snapshot and the rows it is built from. Nothing here writes.

A release imported from a public archive holds only what the public may see: its snapshot
and configuration are the public views (their hashes are not the publication's), and the
held-out scenarios' versions and rows are missing, so its figures cannot be computed again and
no staff archive can be built. Those checks are listed as not made, each with its reason;
the snapshot's shape, each text's scores against its rows, each refusal rate against its own
interval and the public archive rebuilt from the rows are still checked, and the
release is not called verified (`Verification.verified`): its figures are only what the
archive said they were.
"""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from typing import Any

from audits_app.archive import signing, tables
from audits_app.archive.export import ArchiveRefused, archive_kind, release_archive
from audits_app.models import ImportedText, Publication, ReleaseArchive, ReleaseImport
from audits_app.models.archive import ArchiveKind
from audits_app.publication.gate import release_gate
from audits_app.publication.services import snapshot_hash
from audits_app.publication.snapshot import release_snapshot, snapshot_texts
from audits_app.publication.snapshot_model import SnapshotError, snapshot_load
from runs_app.models import Release
from runs_app.selectors import served_model_warnings
from runs_app.services import config_hash

# Differences listed per check before the rest are counted instead.
MAX_LISTED = 20
# Rounding a stored figure may move it past its interval's end by this much, not more.
INTERVAL_SLACK = 1e-9


@dataclasses.dataclass
class Verification:
    release: str
    checked: list[str] = dataclasses.field(default_factory=list)
    differences: list[str] = dataclasses.field(default_factory=list)
    # "what: not checked: why", for what the stored rows cannot show.
    not_checked: list[str] = dataclasses.field(default_factory=list)
    # What the publisher was warned of before publishing; no difference, nor a failed check.
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No difference found in what was checked."""
        return not self.differences

    @property
    def verified(self) -> bool:
        """No difference, and nothing left unchecked: only then is the release what was
        published. A public import whose figures could not be recomputed is `ok` at most:
        a snapshot rewritten with its manifest recomputed passes every check it can have."""
        return self.ok and not self.not_checked


def release_verify(*, release: Release) -> Verification:
    """Recompute every hash and figure of a published release; name each difference."""
    result = Verification(release.code)
    publication = Publication.objects.filter(release=release).first()
    if publication is None:
        result.differences.append(f"release {release.code} is not published: nothing to verify")
        return result
    if ReleaseImport.objects.filter(release=release).exclude(kind=ArchiveKind.STAFF).exists():
        return _verify_public_import(result, release, publication)
    _check_hashes(result, release, publication)
    _check_shape(result, publication)
    _check_figures(result, release, publication)
    _check_served_models(result, release)
    for staff in (False, True):
        _check_archive(result, release, publication, staff=staff)
    return result


PUBLIC_IMPORT = "release imported from a public archive"


def _verify_public_import(result: Verification, release: Release,
                          publication: Publication) -> Verification:
    result.not_checked += [
        f"snapshot and configuration hashes: not checked: {PUBLIC_IMPORT}, which holds their "
        "public views; the publication's hashes are of the full ones",
        f"figures: not recomputed: {PUBLIC_IMPORT}, which lacks the rows the public may not "
        "see (texts held for the arena or reading studies, held-out scenarios)",
        f"staff archive: not built: {PUBLIC_IMPORT}, which lacks what only staff may see",
        f"texts' served models: not checked: {PUBLIC_IMPORT}, which does not carry the "
        "model each reply named",
    ]
    _check_shape(result, publication)
    _check_texts(result, release, publication)
    _check_refusal_intervals(result, publication)
    _check_archive(result, release, publication, staff=False)
    return result


def _check_served_models(result: Verification, release: Release) -> None:
    """Texts whose reply named another model than their writer
    (`runs_app.selectors.served_model_warnings`, as the publish page warned of them): said
    again, as warnings, for whoever verifies what the release attributes to whom."""
    result.checked.append("texts' served models against their writers")
    result.warnings += [f"attribution: {line}" for line in served_model_warnings(release)]


def _check_texts(result: Verification, release: Release, publication: Publication) -> None:
    """What a public archive's rows do allow: each text it holds, with its scores, computed
    again from the text and score rows as the snapshot was, named by the snapshot's ids."""
    result.checked.append("texts recomputed from the rows")
    named = dict(ImportedText.objects.filter(release=release).values_list("generation_id",
                                                                          "snapshot_id"))
    rebuilt = json.loads(json.dumps(snapshot_texts(release), sort_keys=True))
    found = {named.get(text["id"], text["id"]): {**text, "id": named.get(text["id"],
                                                                          text["id"])}
             for text in rebuilt}
    stored = {text.get("id"): text for text in publication.snapshot.get("texts", [])}
    listed = 0
    for text_id in sorted(set(stored) | set(found), key=str):
        if text_id not in found:
            problem = f"snapshot texts: text {text_id} is not in the rows"
        elif text_id not in stored:
            problem = f"snapshot texts: text {text_id} of the rows is not in the snapshot"
        elif paths := _differences(stored[text_id], found[text_id]):
            problem = (f"snapshot texts: text {text_id}: {', '.join(paths)}: the stored "
                       f"value is not what the rows give")
        else:
            continue
        listed += 1
        if listed <= MAX_LISTED:
            result.differences.append(problem)
    if listed > MAX_LISTED:
        result.differences.append(f"snapshot texts: {listed - MAX_LISTED} more texts differ")


def _check_refusal_intervals(result: Verification, publication: Publication) -> None:
    """A refusal rate and its interval cannot be recomputed without the held texts, but the
    interval is built around its point (a t interval, cut to 0-1: `statistics.refusal_rates`),
    so a point outside its own interval was written by hand."""
    result.checked.append("refusal rates within their intervals")
    for index, row in enumerate(publication.snapshot.get("refusal_rates", [])):
        for prefix in ("", "partial_"):
            point, low, high = (row.get(f"{prefix}{name}") for name in ("point", "low", "high"))
            if None in (point, low, high):
                continue
            if not low - INTERVAL_SLACK <= point <= high + INTERVAL_SLACK:
                result.differences.append(
                    f"snapshot refusal_rates[{index}] ({row.get('model')}): the {prefix}point "
                    f"{point} is outside its own interval {low} to {high}")


def _check_hashes(result: Verification, release: Release, publication: Publication) -> None:
    result.checked.append("snapshot hash")
    found = snapshot_hash(publication.snapshot)
    if found != publication.snapshot_hash:
        result.differences.append(
            f"snapshot: stored hash {publication.snapshot_hash}, its content hashes to {found}")
    result.checked.append("configuration hash")
    found = config_hash(release.config)
    for name, stored in (("release", release.config_hash),
                         ("publication", publication.config_hash)):
        if stored != found:
            result.differences.append(
                f"configuration: the {name}'s hash is {stored}, the configuration hashes to "
                f"{found}")


def _check_shape(result: Verification, publication: Publication) -> None:
    """The stored snapshot must still have the shape every page reads (a row rewritten by
    hand can break it without changing a figure the recomputation compares)."""
    result.checked.append("snapshot schema")
    try:
        snapshot_load(publication.snapshot)
    except SnapshotError as error:
        result.differences.extend(str(error).splitlines()[:MAX_LISTED])


def _check_figures(result: Verification, release: Release, publication: Publication) -> None:
    """The snapshot computed again from today's rows (gate included) must equal the stored
    one: a score, a verdict, a spot-check or a model's name changed underneath shows here."""
    result.checked.append("figures recomputed from the rows")
    recomputed = release_snapshot(release, gate=release_gate(release),
                                  override_reason=publication.gate_override_reason)
    recomputed = json.loads(json.dumps(recomputed, sort_keys=True))
    # A release imported here names its texts by their ids where it was published (its
    # snapshot's); the rows here have their own, the same only in an instance that was empty.
    named = dict(ImportedText.objects.filter(release=release).values_list("generation_id",
                                                                          "snapshot_id"))
    for text in recomputed.get("texts", []) if named else []:
        text["id"] = named.get(text["id"], text["id"])
    if ReleaseImport.objects.filter(release=release).exists():
        # Its jurors' `key` is the registry row where it was published: the rows here have
        # their own (the same only by chance), and the pages name jurors by their ids.
        keys = {juror.get("id"): juror.get("key")
                for juror in publication.snapshot.get("jurors", [])}
        for juror in recomputed.get("jurors", []):
            juror["key"] = keys.get(juror["id"], juror["key"])
    if "schema_version" not in publication.snapshot:
        recomputed.pop("schema_version", None)  # frozen before snapshots carried it
    if "human_readers" not in publication.snapshot:
        # Frozen before snapshots said why the calibration uses no imported human reader
        # result; the figure itself is still checked, and the rows cannot change since.
        recomputed.pop("human_readers", None)
    for path in _differences(publication.snapshot, recomputed)[:MAX_LISTED]:
        result.differences.append(f"snapshot {path}: the stored value is not what the rows give")
    extra = len(_differences(publication.snapshot, recomputed)) - MAX_LISTED
    if extra > 0:
        result.differences.append(f"snapshot: {extra} more values differ")


def _check_archive(result: Verification, release: Release, publication: Publication, *,
                   staff: bool) -> None:
    """An archive is built from the snapshot and the rows: its snapshot must be the stored
    one (for the public archive, as the public sees it), its manifest must carry the stored
    hashes, and each file must match the manifest's own hash, size and row count."""
    kind = "staff" if staff else "public"
    result.checked.append(f"{kind} archive")
    try:
        data = release_archive(release, staff=staff, signed_by=signing.signing_key())
    except (ArchiveRefused, signing.SigningKeyError) as refusal:
        result.differences.append(f"{kind} archive: {refusal}")
        return
    _check_kept(result, release, kind, data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files.pop("manifest.json"))
    stored = manifest["release"]
    for name, expected in (("snapshot_hash", publication.snapshot_hash),
                           ("config_hash", publication.config_hash)):
        if stored.get(name) != expected:
            result.differences.append(f"{kind} archive manifest.json: {name} is "
                                      f"{stored.get(name)}, the publication says {expected}")
    for name, entry in manifest["files"].items():
        content = files.get(name)
        if content is None or tables.sha256(content) != entry["sha256"]:
            result.differences.append(f"{kind} archive {name}: not the file its manifest lists")
    if staff and json.loads(files["snapshot.json"]) != publication.snapshot:
        result.differences.append(f"{kind} archive snapshot.json: not the stored snapshot")
    _check_attributions(result, kind, files)


def _check_kept(result: Verification, release: Release, kind: str, built: bytes) -> None:
    """The archive kept since its first download is the one the rows build now, byte for
    byte (an archive's bytes depend only on the release), and matches its stored hash."""
    kept = ReleaseArchive.objects.filter(
        release=release, kind=archive_kind(release, staff=kind == "staff"),
        signing_key_id=signing.signing_key_id()).first()
    if kept is None:
        return
    data = bytes(kept.data)
    if tables.sha256(data) != kept.sha256:
        result.differences.append(f"kept {kind} archive: its bytes hash to "
                                  f"{tables.sha256(data)}, its stored hash is {kept.sha256}")
    elif data != built and not _earlier_format(data, built):
        result.differences.append(f"kept {kind} archive: not the archive the rows build now")
    elif data != built:
        result.checked.append(f"kept {kind} archive, of an earlier format")


def _earlier_format(kept: bytes, built: bytes) -> bool:
    """Whether a kept archive that is not the one built now was built, from the same rows,
    by an earlier version of the format: its manifest is the built one's but for the files
    it lists, and each file it lists is the built one's, but for `README.txt` (which describes
    the format) and for the files the format added since (a staff archive's audit records,
    `audits_app.archive.audit_records`)."""
    with zipfile.ZipFile(io.BytesIO(kept)) as archive:
        old = {name: archive.read(name) for name in archive.namelist()}
    with zipfile.ZipFile(io.BytesIO(built)) as archive:
        new_manifest = json.loads(archive.read("manifest.json"))
    old_manifest = json.loads(old["manifest.json"])
    old_files, new_files = old_manifest.pop("files"), new_manifest.pop("files")
    added = set(new_files) - set(old_files)
    if old_manifest != new_manifest or set(old_files) - set(new_files) or (
            added - set(tables.AUDIT_FILES)):
        return False
    if added and old_files.get("README.txt") == new_files.get("README.txt"):
        return False  # this format's README, without this format's files: files taken out
    return all(name in old and tables.sha256(old[name]) == entry["sha256"]
               and (name == "README.txt" or entry == new_files[name])
               for name, entry in old_files.items())


def _check_attributions(result: Verification, kind: str, files: dict[str, bytes]) -> None:
    """Every model a row of the archive names is one its configuration lists."""
    listed = {model["id"] for model in json.loads(files["config.json"]).get("models", [])}
    for name in sorted(files):
        if not name.endswith(".jsonl"):
            continue
        for number, line in enumerate(files[name].decode("utf-8").splitlines(), 1):
            row = json.loads(line)
            for field in ("model", "juror", "judge"):
                if row.get(field) and row[field] not in listed:
                    result.differences.append(
                        f"{kind} archive {name} line {number}: {field} {row[field]!r} is not "
                        f"a model of config.json")
                    return


def _differences(stored: Any, found: Any, path: str = "") -> list[str]:
    """The paths (`texts[3].honesty_index`) at which two JSON values differ."""
    if isinstance(stored, dict) and isinstance(found, dict):
        return [difference for key in sorted(set(stored) | set(found), key=str)
                for difference in _differences(stored.get(key), found.get(key),
                                               f"{path}.{key}" if path else str(key))]
    if isinstance(stored, list) and isinstance(found, list) and len(stored) == len(found):
        return [difference for index, (left, right) in enumerate(zip(stored, found, strict=True))
                for difference in _differences(left, right, f"{path}[{index}]")]
    if stored != found:
        return [path or "(whole)"]
    return []
