"""Signatures on release archives: who vouches for an archive's figures.

An instance with a signing key (`BAITBENCH_ARCHIVE_SIGNING_KEY`: the path of a PEM file
holding an Ed25519 private key, made by `manage.py archive_key`) signs every archive it
exports. `manifest.sig` holds a detached Ed25519 signature over the exact bytes of
`manifest.json`; the manifest holds every other file's SHA-256, so one signature covers the
whole archive. Ed25519 signatures are deterministic: the same release still exports to the
same bytes.

Public keys travel as OpenSSH lines (`ssh-ed25519 AAAA… name`) and a key is named by its
OpenSSH fingerprint (`SHA256:…`, what `ssh-keygen -lf` prints), its *key id*. An importing
instance trusts the keys listed in `BAITBENCH_ARCHIVE_TRUSTED_KEYS` (OpenSSH lines separated
by commas or new lines). Importing, an archive is:

- *verified* when a trusted key's signature matches its manifest;
- *unverified* when it is unsigned or signed by a key this instance does not trust: anyone
  can write such an archive, so it is loaded but marked wherever the release is shown;
- refused when it names a trusted key but the signature does not match: it was changed
  after that instance signed it.

The private key is read from its file only to sign and is never written to a log, a message
or an error: errors name the setting and the file's path, never its content.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from django.conf import settings

SIGNATURE_FILE = "manifest.sig"
ALGORITHM = "ed25519"
MAX_SIGNATURE_BYTES = 4096
SIGNING_SETTING = "BAITBENCH_ARCHIVE_SIGNING_KEY"
TRUSTED_SETTING = "BAITBENCH_ARCHIVE_TRUSTED_KEYS"
UNSIGNED = "the archive is not signed"


class SigningKeyError(Exception):
    """A key setting that cannot be used; the message names the setting, never a key."""


class SignatureRefused(Exception):
    """An archive whose signature rules it out (a trusted key's signature that does not
    match, or a signature file that is not one); the message is one line."""


@dataclass(frozen=True)
class TrustedKey:
    key_id: str
    public_key: Ed25519PublicKey
    name: str  # the comment of its OpenSSH line: whose key it is, in its owner's words


@dataclass(frozen=True)
class SignatureVerdict:
    verified: bool
    key_id: str  # the key that signed the manifest ("" when unsigned)
    reason: str  # why it is not verified ("" when it is)


def public_key_line(public_key: Ed25519PublicKey, name: str = "") -> str:
    line = public_key.public_bytes(serialization.Encoding.OpenSSH,
                                   serialization.PublicFormat.OpenSSH).decode("ascii")
    return f"{line} {name}".strip()


def key_id(public_key: Ed25519PublicKey) -> str:
    """The OpenSSH fingerprint: SHA-256 of the key's wire form, base64 without padding."""
    blob = base64.b64decode(public_key_line(public_key).split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def key_pair_create(path: Path, name: str = "") -> str:
    """Write a new private key to `path` (created, readable by its owner only; an existing
    file is never overwritten) and return its public key line."""
    private_key = Ed25519PrivateKey.generate()
    pem = private_key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    return public_key_line(private_key.public_key(), name)


def signing_key() -> Ed25519PrivateKey | None:
    """This instance's signing key, or None when it has none."""
    path = settings.ARCHIVE_SIGNING_KEY_FILE
    if not path:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise SigningKeyError(f"{SIGNING_SETTING}: {path}: cannot be read "
                              f"({error.strerror})") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        key = None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{SIGNING_SETTING}: {path}: not an unencrypted Ed25519 private "
                              f"key in PEM (make one with manage.py archive_key)")
    return key


def signing_key_id() -> str:
    """The key id this instance signs with now ("" when it signs nothing)."""
    key = signing_key()
    return "" if key is None else key_id(key.public_key())


def signature_file(manifest: bytes, private_key: Ed25519PrivateKey) -> bytes:
    """`manifest.sig`: the signature over the manifest's exact bytes, and whose it is."""
    document = {"algorithm": ALGORITHM, "key_id": key_id(private_key.public_key()),
                "public_key": public_key_line(private_key.public_key()),
                "signature": base64.b64encode(private_key.sign(manifest)).decode("ascii")}
    return (json.dumps(document, sort_keys=True, indent=1) + "\n").encode("utf-8")


def trusted_keys() -> dict[str, TrustedKey]:
    """The keys whose archives this instance takes as verified, by key id."""
    keys = {}
    entries = [entry.strip() for entry in re.split(r"[,\n]", settings.ARCHIVE_TRUSTED_KEYS)]
    for number, entry in enumerate((entry for entry in entries if entry), start=1):
        kind, _, rest = entry.partition(" ")
        encoded, _, name = rest.strip().partition(" ")
        try:
            key = serialization.load_ssh_public_key(f"{kind} {encoded}".encode("ascii"))
        except (ValueError, UnsupportedAlgorithm, UnicodeEncodeError):
            key = None
        if not isinstance(key, Ed25519PublicKey):
            raise SigningKeyError(f"{TRUSTED_SETTING}: entry {number} is not an ssh-ed25519 "
                                  f"public key line")
        keys[key_id(key)] = TrustedKey(key_id(key), key, name.strip())
    return keys


def signature_verdict(manifest: bytes, signature: bytes | None) -> SignatureVerdict:
    """Whether the manifest (and so the archive) is vouched for by a trusted key."""
    if signature is None:
        return SignatureVerdict(verified=False, key_id="", reason=UNSIGNED)
    document = _signature_document(signature)
    trusted = trusted_keys().get(document["key_id"])
    if trusted is None:
        return SignatureVerdict(
            verified=False, key_id=document["key_id"],
            reason=f"the archive is signed by key {document['key_id']}, which this instance "
                   f"does not trust")
    try:
        trusted.public_key.verify(document["signature"], manifest)
    except InvalidSignature:
        raise SignatureRefused(
            f"{SIGNATURE_FILE}: the signature of trusted key {trusted.key_id} does not match "
            f"manifest.json: the archive was changed after it was signed") from None
    return SignatureVerdict(verified=True, key_id=trusted.key_id, reason="")


def _signature_document(signature: bytes) -> dict:
    """The signature file, parsed: algorithm, key id and the signature's 64 bytes."""
    try:
        document = json.loads(signature.decode("utf-8"))
        if not isinstance(document, dict) or document.get("algorithm") != ALGORITHM:
            raise ValueError(f"algorithm is not {ALGORITHM!r}")
        if not isinstance(document.get("key_id"), str) or not document["key_id"]:
            raise ValueError("no key_id")
        raw = base64.b64decode(str(document.get("signature")), validate=True)
        if len(raw) != 64:
            raise ValueError("signature is not 64 bytes")
    except (UnicodeDecodeError, ValueError, binascii.Error) as error:
        raise SignatureRefused(f"{SIGNATURE_FILE}: not an archive signature ({error})") from None
    return {"key_id": document["key_id"], "signature": raw}


def key_settings_problems() -> list[str]:
    """What is wrong with the key settings, one line each, naming the setting and never a
    key: the system check (`audits_app.archive.checks`) reports them at start-up and on
    `manage.py check`, before a download could fail on them."""
    problems = []
    for read in (signing_key, trusted_keys):
        try:
            read()
        except SigningKeyError as error:
            problems.append(str(error))
    return problems
