"""Recruitment platforms' identifiers, kept only as keyed hashes (DESIGN section 10).

A platform (Prolific by default) sends its participant, study and session ids in the URL; the
names are settings (`STUDY_PLATFORM_PARAMETERS`, the participant's id first). Each value is
stored as HMAC-SHA256 under a key from the settings (`STUDY_ID_KEY`, else derived from
SECRET_KEY), with the study and the parameter in the message: the same person hashes
differently in two studies, and without the key a hash cannot be matched to an id by trying
ids. Nothing but these hashes is written, and no public page, CSV or archive holds them.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings

MAX_ID_LENGTH = 200


class PlatformIdError(ValueError):
    """A platform parameter that cannot be an id: the message names it."""


def _key() -> bytes:
    secret = settings.STUDY_ID_KEY or f"reading-study-ids|{settings.SECRET_KEY}"
    return hashlib.sha256(secret.encode()).digest()


def id_hash(study_id: int, parameter: str, value: str) -> str:
    message = f"{study_id}|{parameter}|{value}".encode()
    return hmac.new(_key(), message, hashlib.sha256).hexdigest()


def platform_ids(query) -> dict[str, str]:
    """The platform parameters present in a query (a QueryDict or dict), checked."""
    found = {}
    for parameter in settings.STUDY_PLATFORM_PARAMETERS:
        value = (query.get(parameter) or "").strip()
        if not value:
            continue
        if len(value) > MAX_ID_LENGTH or not value.isprintable():
            raise PlatformIdError(f"{parameter}: not an id (at most {MAX_ID_LENGTH} printable "
                                  f"characters)")
        found[parameter] = value
    return found


def platform_hashes(study_id: int, ids: dict[str, str]) -> dict[str, str]:
    """The participant's, study's and session's hashes, as StudyParticipant's fields."""
    names = list(settings.STUDY_PLATFORM_PARAMETERS) + ["", "", ""]
    fields = ("platform_id_hash", "platform_study_hash", "platform_session_hash")
    return {field: id_hash(study_id, name, ids[name]) if name in ids else ""
            for field, name in zip(fields, names[:3], strict=True)}
