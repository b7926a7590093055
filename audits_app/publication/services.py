"""Writes of audits_app: publishing a release (DESIGN sections 6 and 8)."""

from __future__ import annotations

import hashlib
import json

from django.db import transaction

from audits_app.models import Publication
from audits_app.publication.gate import GateCheck, release_gate
from audits_app.publication.snapshot import release_snapshot
from runs_app.models import Release, ReleaseStatus, TextScore
from runs_app.selectors import release_row_problems


class PublishError(Exception):
    """Publishing was refused; the message says why, in words a publisher can act on."""


def snapshot_hash(snapshot: dict) -> str:
    encoded = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


# A release in one of these has run (or runs): the rows themselves say whether it can be
# published.
PUBLISHABLE_STATUSES = (ReleaseStatus.SCORED, ReleaseStatus.INCOMPLETE, ReleaseStatus.RUNNING)


def release_publish_problems(release: Release) -> list[str]:
    """Why the release cannot be published now, apart from the spot-check gate.

    Whatever its status says, a release is publishable only with no row pending, claimed or
    failed in any stage, no writer, juror or reader above the release's share of unscored
    rows (`gate.max_unscored_share`, `runs_app.selectors.release_row_problems`), and scores.
    Texts whose reply names another model than their writer are warned of on the publish
    page (`served_model_warnings`), not refused.
    """
    if release.status == ReleaseStatus.PUBLISHED:
        return [f"release {release.code} is already published"]
    if release.status not in PUBLISHABLE_STATUSES:
        return [f"release {release.code} is {release.get_status_display().lower()}: "
                f"run and score it first"]
    problems = release_row_problems(release)
    if not TextScore.objects.filter(release=release).exists():
        problems.append(f"release {release.code} has no scored texts")
    return problems


def release_publish(*, release: Release, user=None, override_reason: str = "") -> Publication:
    """Freeze the release's statistics into a Publication and mark the release published.

    Refused (PublishError) when the release is not ready or already published, and when the
    spot-check gate is not met unless `override_reason` says why (kept and shown publicly).
    """
    override_reason = override_reason.strip()
    with transaction.atomic():
        # The row lock makes two publishers queue; the second then finds it published.
        locked = Release.objects.select_for_update().get(pk=release.pk)
        problems = release_publish_problems(locked)
        if problems:
            raise PublishError("; ".join(problems))
        gate = release_gate(locked)
        _check_gate(gate, override_reason)
        snapshot = release_snapshot(
            locked, gate=gate, override_reason="" if gate.passed else override_reason
        )
        publication = Publication.objects.create(
            release=locked, published_by=user, config_hash=locked.config_hash,
            snapshot=snapshot, snapshot_hash=snapshot_hash(snapshot),
            gate_override_reason="" if gate.passed else override_reason,
        )
        # Last: once the status is published, PublishedGuard refuses every change below it.
        locked.status = ReleaseStatus.PUBLISHED
        locked.save(update_fields=["status"])
    release.refresh_from_db()
    return publication


def _check_gate(gate: GateCheck, override_reason: str) -> None:
    if gate.passed or override_reason:
        return
    raise PublishError(
        "the spot-check gate is not met: " + "; ".join(gate.reasons)
        + ". Give a reason to publish anyway (it is shown publicly)."
    )
