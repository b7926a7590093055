"""Writes of audits_app: publishing a release (issue 5, DESIGN sections 6 and 8)."""

from __future__ import annotations

import hashlib
import json

from django.db import transaction

from audits_app.models import Publication
from audits_app.selectors import GateCheck, release_gate, release_snapshot
from runs_app.models import Release, ReleaseStatus, TextScore


class PublishError(Exception):
    """Publishing was refused; the message says why, in words a publisher can act on."""


def snapshot_hash(snapshot: dict) -> str:
    encoded = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def release_publish_problems(release: Release) -> list[str]:
    """Why the release cannot be published now, apart from the spot-check gate.

    A release is publishable when it is "scored", or "running" with no pending or claimed
    work left in any stage (the stages do not all set "scored" themselves), and has scores.
    """
    from runs_app.selectors import release_progress

    if release.status == ReleaseStatus.PUBLISHED:
        return [f"release {release.code} is already published"]
    if release.status not in (ReleaseStatus.SCORED, ReleaseStatus.RUNNING):
        return [f"release {release.code} is {release.get_status_display().lower()}: "
                f"run and score it first"]
    problems = []
    if release.status == ReleaseStatus.RUNNING:
        problems += [f"stage {progress.stage} still has {progress.pending + progress.claimed} "
                     f"unfinished rows" for progress in release_progress(release)
                     if progress.pending or progress.claimed]
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
