"""A release that is not published yet, as staff see it: the snapshot computed from the rows now.

Staff open `/releases/CODE/` of a draft to see what publishing would freeze. Nothing is
frozen, so the figures are computed on request (`release_snapshot`, as publishing does) and
labelled with the moment they were computed. Computing takes seconds for a large release, so
a result is kept per process while the rows it came from look unchanged: the fingerprint
counts and dates the rows a snapshot reads, and an entry lives at most DRAFT_TTL_SECONDS in
case something the fingerprint does not see (a spot-check correction, say) has changed.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Q
from django.utils import timezone

from audits_app.models import HumanReaderResult, OutOfBandAudit, SpotCheck
from audits_app.publication.services import release_publish_problems
from audits_app.publication.snapshot import release_snapshot
from audits_app.publication.snapshot_model import ReleaseSnapshot, snapshot_load
from runs_app.models import Generation, ReaderResponse, Release, TextScore, WorkStatus

DRAFT_TTL_SECONDS = 300
DRAFT_CACHE_SIZE = 4


@dataclass(frozen=True)
class Draft:
    """What a draft's page shows besides the figures."""

    release: Release
    computed_at: datetime
    gate: dict[str, Any]  # GateCheck.as_dict() of the computed snapshot
    problems: list[str]  # why it cannot be published now, apart from the gate


_drafts: OrderedDict[int, tuple[tuple, float, ReleaseSnapshot, datetime]] = OrderedDict()
_drafts_lock = threading.Lock()


def draft_fingerprint(release: Release) -> tuple:
    """Counts and latest dates of every row family a snapshot is computed from."""
    generations = Generation.objects.filter(release=release).aggregate(
        done=Count("pk", filter=Q(status=WorkStatus.DONE)), latest=Max("updated_at"))
    scores = TextScore.objects.filter(release=release).aggregate(
        count=Count("pk"), latest=Max("computed_at"))
    readers = ReaderResponse.objects.filter(release=release).aggregate(
        done=Count("pk", filter=Q(status=WorkStatus.DONE)), latest=Max("updated_at"))
    checks = SpotCheck.objects.filter(release=release).aggregate(
        count=Count("pk"), latest=Max("completed_at"))
    return (
        release.created_at, release.status, release.config_hash,
        tuple(generations.values()), tuple(scores.values()), tuple(readers.values()),
        tuple(checks.values()),
        OutOfBandAudit.objects.filter(release=release).count(),
        HumanReaderResult.objects.filter(release=release).count(),
    )


def draft_snapshot(release: Release) -> tuple[ReleaseSnapshot, datetime]:
    """The snapshot publishing would freeze now, and when it was computed (never mutate it:
    it is shared between requests)."""
    fingerprint = draft_fingerprint(release)
    with _drafts_lock:
        kept = _drafts.get(release.pk)
        if kept and kept[0] == fingerprint and time.monotonic() - kept[1] < DRAFT_TTL_SECONDS:
            _drafts.move_to_end(release.pk)
            return kept[2], kept[3]
    snapshot, computed_at = snapshot_load(release_snapshot(release)), timezone.now()
    with _drafts_lock:
        _drafts[release.pk] = (fingerprint, time.monotonic(), snapshot, computed_at)
        _drafts.move_to_end(release.pk)
        while len(_drafts) > DRAFT_CACHE_SIZE:
            _drafts.popitem(last=False)
    return snapshot, computed_at


def draft_get(release: Release) -> tuple[ReleaseSnapshot, Draft]:
    snapshot, computed_at = draft_snapshot(release)
    return snapshot, Draft(release=release, computed_at=computed_at,
                           gate=snapshot.gate.as_data(),
                           problems=release_publish_problems(release))
