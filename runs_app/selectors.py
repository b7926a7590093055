"""Reads of runs_app: progress of a release's stages."""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.db.models import Count, Max, Min, Q, Sum
from django.utils import timezone

from runs_app.models import Generation, Release, WorkStatus
from runs_app.stages import available_stages, get_stage


@dataclasses.dataclass(frozen=True)
class StageProgress:
    stage: str
    total: int
    done: int
    pending: int
    claimed: int
    failed: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    eta_seconds: float | None = None

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.pending == 0 and self.claimed == 0


def _eta(rows, done: int, remaining: int) -> float | None:
    """Time left at the pace of this stage so far (first to last finished row)."""
    if not remaining or done < 2:
        return None
    span = rows.filter(status=WorkStatus.DONE).aggregate(
        first=Min("finished_at"), last=Max("finished_at")
    )
    if not span["first"] or not span["last"]:
        return None
    elapsed = max((span["last"] - span["first"]).total_seconds(), 1.0)
    pace = elapsed / (done - 1)
    return remaining * pace


def stage_progress(release: Release, stage_name: str) -> StageProgress:
    rows = get_stage(stage_name).rows(release)
    counts = rows.aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=WorkStatus.DONE)),
        pending=Count("pk", filter=Q(status=WorkStatus.PENDING)),
        claimed=Count("pk", filter=Q(status=WorkStatus.CLAIMED)),
        failed=Count("pk", filter=Q(status=WorkStatus.FAILED)),
    )
    usage: dict = {}
    if rows.model is Generation:
        usage = rows.aggregate(
            prompt_tokens=Sum("prompt_tokens"), completion_tokens=Sum("completion_tokens"),
            reasoning_tokens=Sum("reasoning_tokens"), cost_usd=Sum("cost_usd"),
        )
        usage = {key: value or 0 for key, value in usage.items()}
    eta = _eta(rows, counts["done"], counts["pending"] + counts["claimed"])
    return StageProgress(stage=stage_name, **counts, **usage, eta_seconds=eta)


def release_progress(release: Release) -> list[StageProgress]:
    return [stage_progress(release, name) for name in available_stages()]


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return str(dt.timedelta(seconds=round(seconds)))


def stalled_work(now: dt.datetime | None = None) -> list[tuple[str, str]]:
    """(release code, stage) pairs of running releases that need a drain nobody is doing.

    A stage needs one when its claims' leases ran out (a worker died), when it has pending
    rows and no live claim (its task was lost), or when it has no rows yet although every
    stage before it is finished (the hand-over to it was lost). A stage a live worker is
    draining holds live claims (renewed while it works) and is left alone, so the schedule
    does not pile up duplicate tasks.
    """
    now = now or timezone.now()
    found = []
    for release in Release.objects.filter(status="running"):
        for name in available_stages():
            rows = get_stage(name).rows(release)
            state = rows.aggregate(
                total=Count("pk"),
                pending=Count("pk", filter=Q(status=WorkStatus.PENDING)),
                live=Count("pk", filter=Q(status=WorkStatus.CLAIMED,
                                          lease_expires_at__gte=now)),
                expired=Count("pk", filter=Q(status=WorkStatus.CLAIMED,
                                             lease_expires_at__lt=now)),
            )
            if state["expired"] or (state["pending"] and not state["live"]):
                found.append((release.code, name))
            if state["total"] == 0 and not state["live"]:
                found.append((release.code, name))
            if state["total"] == 0 or state["pending"] or state["live"] or state["expired"]:
                break  # later stages wait for this one
    return found
