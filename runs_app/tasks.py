"""Queue entry points (django-q2): thin wrappers that drain one stage of one release.

The queue delivers at least once and a task may be lost with its worker; neither matters,
because the work tables decide what still needs doing (DESIGN section 5).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django_q.models import Schedule
from django_q.tasks import async_task

from runs_app.honesty import text_scores_update_honesty
from runs_app.models import Release, ReleaseStatus
from runs_app.public_scores import text_scores_update_public
from runs_app.selectors import stage_progress, stalled_work
from runs_app.stages import available_stages, get_stage
from runs_app.stages.base import drain

log = logging.getLogger("baitbench.tasks")
TASK_PATH = "runs_app.tasks.drain_stage"


def enqueue_stage(code: str, stage: str, chain: bool = True) -> str:
    """`chain=False` drains this stage only: the next stage is not enqueued after it."""
    return async_task(TASK_PATH, code, stage, chain, task_name=f"drain {code} {stage}",
                      group=f"release:{code}")


def drain_stage(code: str, stage: str, chain: bool = True) -> dict:
    """Drain one stage; when it is complete, hand over to the next stage of the chain."""
    release = Release.objects.get(code=code)
    # Stop claiming well before django-q's timeout kills the task: calls in flight then
    # finish and are written, and the stage continues in a fresh task.
    report = drain(get_stage(stage), release, time_budget=settings.BAITBENCH_DRAIN_SECONDS)
    log.info("drained %s %s: %s finished, %s lost", code, stage, report.finished, report.lost)
    progress = stage_progress(release, stage)
    if report.out_of_time and progress.pending:
        enqueue_stage(code, stage, chain)
    elif chain and progress.pending == 0 and progress.claimed == 0:
        following = next_stage(stage)
        if following:
            enqueue_stage(code, following)
        else:
            mark_scored(release)
    return {"finished": report.finished, "lost": report.lost}


def next_stage(stage: str) -> str | None:
    names = available_stages()
    index = names.index(stage)
    return names[index + 1] if index + 1 < len(names) else None


def mark_scored(release: Release) -> bool:
    """When no stage has work left, settle every text's scores and mark the release scored."""
    progress = [stage_progress(release, name) for name in available_stages()]
    if any(row.pending or row.claimed for row in progress):
        return False
    text_scores_update_honesty(release=release)
    text_scores_update_public(release=release)
    Release.objects.filter(pk=release.pk, status=ReleaseStatus.RUNNING).update(
        status=ReleaseStatus.SCORED
    )
    return True


def reenqueue_stalled() -> int:
    """Scheduled: drain again what a lost task or a killed worker left behind, and settle
    releases whose last hand-over was lost."""
    stalled = stalled_work()
    for code, stage in stalled:
        enqueue_stage(code, stage)
    for release in Release.objects.filter(status=ReleaseStatus.RUNNING):
        if not any(code == release.code for code, _ in stalled):
            mark_scored(release)
    return len(stalled)


def ensure_schedule() -> None:
    Schedule.objects.get_or_create(
        func="runs_app.tasks.reenqueue_stalled",
        defaults={"name": "re-enqueue stalled work", "schedule_type": Schedule.MINUTES,
                  "minutes": 2, "repeats": -1},
    )
