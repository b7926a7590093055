"""Helpers for tests of release archives: reading, rewriting and forging them the way
someone with the file (and no key) could. The release they start from is the `published`
fixture (audits_app/tests/conftest.py)."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audits_app.archive import tables
from audits_app.archive.signing import SIGNATURE_FILE, signature_file
from audits_app.publication.services import snapshot_hash
from runs_app.services import config_hash

HELD_OUT = "redmoor-doping-cover"
PUBLIC = "greenvale-listeria"


def files_of(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rezip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def forge(data: bytes, **changes: bytes) -> bytes:
    """The archive with some files replaced and a manifest that matches them (a signature,
    if it had one, is kept as it was)."""
    files = files_of(data)
    files.update({name.replace("__", "/").replace("_dot_", "."): content
                  for name, content in changes.items()})
    manifest = json.loads(files["manifest.json"])
    for name, content in files.items():
        if name not in ("manifest.json", SIGNATURE_FILE):
            rows = manifest["files"].get(name, {}).get("rows", 1)
            manifest["files"][name] = {"sha256": tables.sha256(content), "bytes": len(content),
                                       "rows": rows}
    files["manifest.json"] = json.dumps(manifest).encode()
    return rezip(files)


def recoded(data: bytes, code: str) -> dict[str, bytes]:
    """A staff archive's files as the archive of the same release under another code, every
    hash made to match (and no signature): a release this instance does not have yet."""
    files = {name: content for name, content in files_of(data).items()
             if name != SIGNATURE_FILE}
    old = json.loads(files["manifest.json"])["release"]["code"]
    for name in ("snapshot.json", "config.json", "manifest.json"):
        files[name] = files[name].replace(f'"{old}"'.encode(), f'"{code}"'.encode())
    manifest = json.loads(files["manifest.json"])
    manifest["release"].update(snapshot_hash=snapshot_hash(json.loads(files["snapshot.json"])),
                               config_hash=config_hash(json.loads(files["config.json"])))
    files["manifest.json"] = json.dumps(manifest).encode()
    return files_of(forge(rezip(files)))


@dataclass(frozen=True)
class ArchiveKey:
    """A signing key made by `archive_key`: its file, public line, key id and private key."""

    path: Path
    line: str
    key_id: str
    private: Ed25519PrivateKey


def signed(files: dict[str, bytes], key: Ed25519PrivateKey) -> bytes:
    """The archive with `key`'s signature of its manifest, as an instance holding that key
    exports it."""
    return rezip({"manifest.json": files["manifest.json"],
                  SIGNATURE_FILE: signature_file(files["manifest.json"], key),
                  **{name: content for name, content in files.items()
                     if name not in ("manifest.json", SIGNATURE_FILE)}})
