"""Queue entry points of the arena (django-q2): thin, and safe to deliver twice."""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone

from audits_app.arena.models import SimulatedPairVote
from audits_app.arena.services import arena_prepare, simulate_mark
from audits_app.arena.simulation import simulation_drain
from runs_app.models import Release, WorkStatus

log = logging.getLogger("baitbench.arena")


def simulate_pairs(code: str) -> int:
    """Answer the pending simulated votes of a release's arena (every shown pair's twelve)."""
    # Cleared first: a pair shown while this runs queues a task of its own.
    cache.delete(simulate_mark(code))
    written = simulation_drain(Release.objects.get(code=code))
    log.info("arena %s: %s simulated votes written", code, written)
    return written


def simulate_pending() -> int:
    """Scheduled: drain every arena with pending rows, or claims whose lease ran out."""
    stalled = Q(status=WorkStatus.PENDING) | Q(status=WorkStatus.CLAIMED,
                                               lease_expires_at__lt=timezone.now())
    codes = list(SimulatedPairVote.objects.filter(stalled)
             .values_list("pair__release__code", flat=True).distinct())
    return sum(simulate_pairs(code) for code in codes)


def prepare_arena(code: str, user_id: int | None = None) -> int:
    """Train the writer classifier (once) and build the pairs; returns the pairs' count."""
    from django.contrib.auth import get_user_model

    release = Release.objects.get(code=code)
    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    arena_prepare(release=release, user=user)
    return release.arena_pairs.count()
