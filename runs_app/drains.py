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
    `BAITBENCH_CONCURRENCY` rows claimable or about to be planned, at most
    `BAITBENCH_DRAINS_PER_RELEASE`.

    Returns how many were enqueued. Nothing is enqueued for a release whose run is stopped
    (published, nothing active, or over its budget).
    """
    scope = release_active_scope(release)
    if release.is_published or not scope:
        return 0
    control = RunControl.objects.filter(release=release).first()
    if control is not None and control.over_budget:
        return 0
    work = scope_claimable(release) + unplanned_calls(release, scope)
    wanted = min(settings.BAITBENCH_DRAINS_PER_RELEASE,
                 max(at_least, math.ceil(work / settings.BAITBENCH_CONCURRENCY)))
    missing = max(0, wanted - live_drains(release))
    if not missing:
        return 0
    # One transaction for the tickets and one for their tasks: a commit per row (an fsync
    # each on PostgreSQL) made queueing a run's drains take most of a second, while the
    # workers waited for their tasks.
    with transaction.atomic():
        tickets = Drain.objects.bulk_create(Drain(release=release) for _ in range(missing))
        transaction.on_commit(lambda: _enqueue_tasks(release, tickets))
    return missing


def _enqueue_tasks(release: Release, tickets: list[Drain]) -> None:
    with transaction.atomic():
        for ticket in tickets:
            async_task(TASK_PATH, ticket.pk, task_name=f"drain {release.code} #{ticket.pk}",
                       group=f"release:{release.code}")


def unplanned_calls(release: Release, scope: list[str]) -> int:
    """The calls of the scope's stages that have no rows yet and read no stage of the scope
    (the first stage of a run, or a stage started after the stages it reads): their rows
    are planned by the first drain that starts, so the drains for them are queued with it
    rather than one after another once it has planned. An estimate from the configuration
    (`Stage.planned_calls`); a stage whose inputs are missing plans nothing, and its drains
    end at once."""
    from runs_app.stages import get_stage

    config = None
    calls = 0
    for name in scope:
        stage = get_stage(name)
        if set(stage.needs) & set(scope) or stage.rows(release).exists():
            continue
        config = config or release.parsed_config()
        calls += stage.planned_calls(config)
    return calls


def ensure_schedule() -> None:
    # Every minute: lost work is back in the queue within a minute or two of its loss.
    Schedule.objects.update_or_create(
        func="runs_app.tasks.reenqueue_stalled",
        defaults={"name": "re-enqueue stalled work", "schedule_type": Schedule.MINUTES,
                  "minutes": 1, "repeats": -1},
    )
