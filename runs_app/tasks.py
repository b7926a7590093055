"""Queue entry points (django-q2): thin wrappers around the drains of a release.

The queue delivers at least once and a task may be lost with its worker; neither matters,
because the work tables decide what still needs doing (DESIGN section 5). Every drain task has
a `Drain` ticket: a second delivery finds it taken and stops, and counting live tickets lets a
release keep one drain per free worker (up to `BAITBENCH_DRAINS_PER_RELEASE`) without filling
the queue with idle copies.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import time

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task

from runs_app.models import (
    Drain,
    DrainState,
    Release,
    ReleaseStatus,
    RunControl,
)
from runs_app.selectors import release_active_scope, scope_claimable
from runs_app.services import release_complete, release_settle, scope_complete
from runs_app.stages.base import DrainHooks, drain_release, worker_name

log = logging.getLogger("baitbench.tasks")
TASK_PATH = "runs_app.tasks.drain_release_task"
# A queued ticket whose task has not started after this long was lost by the queue.
QUEUED_STALE = dt.timedelta(minutes=10)
# A drain asks for more drains, when its results planned work, at most this often (seconds).
FAN_OUT_EVERY = 2.0


def live_drains(release: Release) -> int:
    """Drains of the release queued recently or running with a fresh heartbeat."""
    now = timezone.now()
    lease = dt.timedelta(seconds=settings.BAITBENCH_LEASE_SECONDS)
    return Drain.objects.filter(release=release).filter(
        Q(state=DrainState.QUEUED, created_at__gte=now - QUEUED_STALE)
        | Q(state=DrainState.RUNNING, heartbeat_at__gte=now - lease)
    ).count()


def drains_enqueue(release: Release, *, at_least: int = 0) -> int:
    """Enqueue drain tasks until as many are queued or running as could help: one per
    `BAITBENCH_CONCURRENCY` claimable rows, at most `BAITBENCH_DRAINS_PER_RELEASE`.

    Returns how many were enqueued. Nothing is enqueued for a release whose run is stopped
    (published, nothing active, or over its budget).
    """
    if release.is_published or not release_active_scope(release):
        return 0
    control = RunControl.objects.filter(release=release).first()
    if control is not None and control.over_budget:
        return 0
    claimable = scope_claimable(release)
    wanted = min(settings.BAITBENCH_DRAINS_PER_RELEASE,
                 max(at_least, math.ceil(claimable / settings.BAITBENCH_CONCURRENCY)))
    missing = wanted - live_drains(release)
    for _ in range(max(0, missing)):
        ticket = Drain.objects.create(release=release)
        transaction.on_commit(lambda ticket=ticket: async_task(
            TASK_PATH, ticket.pk, task_name=f"drain {release.code} #{ticket.pk}",
            group=f"release:{release.code}"))
    return max(0, missing)


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
    every text's scores and mark the release scored."""
    if not release_complete(release):
        return False
    release_settle(release=release)
    Release.objects.filter(pk=release.pk, status=ReleaseStatus.RUNNING).update(
        status=ReleaseStatus.SCORED)
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
    """A running ticket whose heartbeat stopped belongs to a dead worker: its rows' leases
    expire and are claimed again; the ticket no longer counts as a live drain."""
    lease = dt.timedelta(seconds=settings.BAITBENCH_LEASE_SECONDS)
    Drain.objects.filter(release=release, state=DrainState.RUNNING,
                         heartbeat_at__lt=timezone.now() - lease).update(
        state=DrainState.FINISHED, finished_at=timezone.now(), note="lost (no heartbeat)")


def ensure_schedule() -> None:
    Schedule.objects.get_or_create(
        func="runs_app.tasks.reenqueue_stalled",
        defaults={"name": "re-enqueue stalled work", "schedule_type": Schedule.MINUTES,
                  "minutes": 2, "repeats": -1},
    )
