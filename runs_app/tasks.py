"""Queue entry points (django-q2): thin wrappers around the drains of a release.

The queue delivers at least once and a task may be lost with its worker; neither matters,
because the work tables decide what still needs doing (DESIGN section 5). Every drain task has
a `Drain` ticket: a second delivery finds it taken and stops, and counting live tickets lets a
release keep one drain per free worker (up to `BAITBENCH_DRAINS_PER_RELEASE`) without filling
the queue with idle copies.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection

from django.conf import settings
from django.utils import timezone

from runs_app.drains import drains_enqueue
from runs_app.models import (
    Drain,
    DrainState,
    Release,
    ReleaseStatus,
    WorkStatus,
)
from runs_app.selectors import (
    DRAIN_DEAD_AFTER,
    QUEUED_STALE,
    live_drains,
    release_active_scope,
    release_has_gaps,
)
from runs_app.services import release_complete, release_settle, scope_complete
from runs_app.stages import available_stages, get_stage
from runs_app.stages.base import DrainHooks, drain_release, worker_name

log = logging.getLogger("baitbench.tasks")
# A drain asks for more drains, when its results planned work, at most this often (seconds).
FAN_OUT_EVERY = 2.0


def preload_for_drains() -> None:
    """What every worker's first drain would load while its first calls wait, loaded by the
    cluster's parent before it forks its workers (`manage.py qcluster`): each stage's module
    and the provider's client stack. About 65 ms of CPU per worker, which all the workers
    otherwise pay at once, on two cores, just as a run starts."""
    from runs_app.providers import openrouter

    for name in available_stages():
        get_stage(name)
    openrouter.preload()


def drain_release_task(ticket_id: int) -> dict:
    """Drain the active stages of the ticket's release until its scope is done, its gate
    closes, or the task's time is up (then a fresh task continues)."""
    now = timezone.now()
    taken = Drain.objects.filter(pk=ticket_id, state=DrainState.QUEUED).update(
        state=DrainState.RUNNING, started_at=now, heartbeat_at=now, worker=worker_name())
    if not taken:
        return {"skipped": "this drain was already run (a repeated delivery)"}
    ticket = Drain.objects.select_related("release").get(pk=ticket_id)
    release = ticket.release
    scope = release_active_scope(release)
    if not scope or release.is_published:
        _finish(ticket_id, 0, "nothing to run")
        return {"finished": 0}
    fanned = [-FAN_OUT_EVERY]

    def on_planned(count: int) -> None:
        # New work for later stages: let free workers help with it.
        if time.monotonic() - fanned[0] >= FAN_OUT_EVERY:
            fanned[0] = time.monotonic()
            drains_enqueue(release)

    def heartbeat() -> None:
        Drain.objects.filter(pk=ticket_id).update(heartbeat_at=timezone.now())

    report = drain_release(
        release, scope, time_budget=settings.BAITBENCH_DRAIN_SECONDS, controlled=True,
        wait_for_others=settings.BAITBENCH_DRAIN_WAIT,
        hooks=DrainHooks(on_planned=on_planned, heartbeat=heartbeat),
    )
    note = "out of time" if report.out_of_time else report.stopped or "done"
    _finish(ticket_id, report.finished, note)
    log.info("drained %s (%s): %s finished, %s lost, %s", release.code, ",".join(scope),
             report.finished, report.lost, note)
    if report.out_of_time:
        drains_enqueue(release, at_least=1)
    elif not report.stopped:
        mark_scored(release)
    return {"finished": report.finished, "lost": report.lost, "note": note}


def _finish(ticket_id: int, finished: int, note: str) -> None:
    Drain.objects.filter(pk=ticket_id).update(
        state=DrainState.FINISHED, finished_at=timezone.now(), finished=finished, note=note)


def mark_scored(release: Release) -> bool:
    """When every stage of the release's stage set has run and has no work left, settle
    every text's scores and mark the release scored, or, when some row ended unscored or
    failed, "incomplete": scored means every row has its score. True once the run ended."""
    if not release_complete(release):
        return False
    release_settle(release=release)
    ended = ReleaseStatus.INCOMPLETE if release_has_gaps(release) else ReleaseStatus.SCORED
    Release.objects.filter(pk=release.pk, status=ReleaseStatus.RUNNING).update(status=ended)
    release.refresh_from_db(fields=["status"])
    return True


def reenqueue_stalled() -> int:
    """Scheduled: drain again what a lost task or a killed worker left behind, and settle
    releases whose last drain ended without doing so. Keeps to each release's active scope:
    a stage nobody started is never planned or paid for here. Returns how many drains were
    enqueued."""
    enqueued = 0
    for release in Release.objects.filter(status=ReleaseStatus.RUNNING):
        scope = release_active_scope(release)
        if not scope:
            continue
        _forget_dead_drains(release)
        if live_drains(release) or mark_scored(release):
            continue
        if not scope_complete(release, scope):
            enqueued += drains_enqueue(release, at_least=1)
    return enqueued


def _forget_dead_drains(release: Release) -> None:
    """A running ticket whose heartbeat stopped belongs to a dead worker: the rows its worker
    holds are released now (idle workers take them in seconds, not after the lease), and the
    ticket no longer counts as a live drain. A queued ticket no worker started in time was
    lost by the queue: marked so, a late delivery of its task stops at once."""
    now = timezone.now()
    dead = Drain.objects.filter(release=release, state=DrainState.RUNNING,
                                heartbeat_at__lt=now - DRAIN_DEAD_AFTER)
    for worker in set(dead.exclude(worker="").values_list("worker", flat=True)):
        release_claims(release, worker)
    dead.update(state=DrainState.FINISHED, finished_at=now, note="lost (no heartbeat)")
    Drain.objects.filter(release=release, state=DrainState.QUEUED,
                         created_at__lt=now - QUEUED_STALE).update(
        state=DrainState.FINISHED, finished_at=now, note="lost in the queue (never started)")


def workers_stopped(workers: Collection[str]) -> int:
    """Workers that are surely gone (their cluster ended them: `manage.py qcluster` on
    SIGTERM): the rows they held go to the other workers at once instead of after their
    lease, their drains are finished, and each release they drained gets a queued drain for
    the next free worker. Returns how many rows were handed back."""
    now = timezone.now()
    tickets = Drain.objects.filter(state=DrainState.RUNNING, worker__in=list(workers))
    releases = list(Release.objects.filter(drains__in=tickets).distinct())
    released = sum(release_claims(release, worker)
                   for release in releases for worker in workers)
    tickets.update(state=DrainState.FINISHED, finished_at=now, note="stopped with its worker")
    for release in releases:
        drains_enqueue(release, at_least=1)
    return released


def release_claims(release: Release, worker: str) -> int:
    """Let other workers claim at once the rows of `release` that `worker` holds; returns
    how many. A result that worker still writes later finds its claim gone (DESIGN 5)."""

    now = timezone.now()
    return sum(get_stage(name).rows(release).filter(
        status=WorkStatus.CLAIMED, claimed_by=worker, lease_expires_at__gt=now,
    ).update(lease_expires_at=now) for name in available_stages())
