"""Drain tickets: how many drain tasks a release gets, and the schedule that brings lost work
back (DESIGN section 5).

Every drain task has a `Drain` ticket: a second delivery of the task finds it taken and stops,
and counting live tickets lets a release keep one drain per free worker (up to
`BAITBENCH_DRAINS_PER_RELEASE`) without filling the queue with idle copies. The tasks
themselves are `runs_app.tasks`.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.db import transaction
from django_q.models import Schedule
from django_q.tasks import async_task

from runs_app.models import Drain, Release, RunControl
from runs_app.selectors import live_drains, release_active_scope, scope_claimable

TASK_PATH = "runs_app.tasks.drain_release_task"


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


def ensure_schedule() -> None:
    # Every minute: lost work is back in the queue within a minute or two of its loss.
    Schedule.objects.update_or_create(
        func="runs_app.tasks.reenqueue_stalled",
        defaults={"name": "re-enqueue stalled work", "schedule_type": Schedule.MINUTES,
                  "minutes": 1, "repeats": -1},
    )
