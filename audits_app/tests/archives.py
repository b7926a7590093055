"""Helpers for tests of release archives: reading, rewriting and forging them the way
someone with the file (and no key) could, and loading them into another instance (an empty
database, `manage.py` in a process of its own). The release they start from is the `published`
fixture (audits_app/tests/conftest.py)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.db import connection

from audits_app.archive import tables
from audits_app.archive.load import ArchiveError, release_import
from audits_app.archive.signing import SIGNATURE_FILE, signature_file
from audits_app.publication.services import snapshot_hash
from runs_app.services import config_hash
from tests.scratch import commits_unwaited

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


@contextmanager
def empty_instance(tmp_path: Path, migrated: str, *,
                   trusting: str = "") -> Iterator[dict[str, str]]:
    """The environment of another instance: a copy of the `migrated` empty database, which
    trusts the archive key `trusting` (a public key line)."""
    if connection.vendor == "sqlite":
        path = tmp_path / "other.sqlite3"
        shutil.copyfile(migrated.removeprefix("sqlite:///"), path)
        url, cleanup = f"sqlite:///{path}", None
    else:
        url, cleanup = _postgres_database(template=migrated.rsplit("/", 1)[1])
    env = {**os.environ, "DATABASE_URL": url, "BAITBENCH_DEV": "1",
           "BAITBENCH_ARCHIVE_TRUSTED_KEYS": trusting}
    try:
        yield env
    finally:
        if cleanup:
            cleanup()


def _postgres_database(template: str = ""):
    import psycopg

    params = connection.settings_dict
    name = f"{params['NAME']}_other_{uuid.uuid4().hex[:8]}"
    server = (f"postgres://{params['USER']}:{params['PASSWORD'] or ''}@{params['HOST']}:"
              f"{params['PORT'] or 5432}")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template
                                                      else ""))
        commits_unwaited(admin.execute, name)

    def drop():
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return f"{server}/{name}", drop


def manage(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR,
                            env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def refused_lines(archive: bytes) -> list[str]:
    with pytest.raises(ArchiveError) as error:
        release_import(data=archive, source="a.zip")
    return error.value.lines
