"""Reads of runs_app: progress of a release's stages."""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.db.models import Count, Max, Min, Q, Sum
from django.utils import timezone

from runs_app.models import Release, StageRun, StageRunState, WorkStatus
from runs_app.stages import STAGE_ORDER, get_stage


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
    usage = rows.aggregate(
        prompt_tokens=Sum("prompt_tokens"), completion_tokens=Sum("completion_tokens"),
        reasoning_tokens=Sum("reasoning_tokens"), cost_usd=Sum("cost_usd"),
    )
    usage = {key: value or 0 for key, value in usage.items()}
    eta = _eta(rows, counts["done"], counts["pending"] + counts["claimed"])
    return StageProgress(stage=stage_name, **counts, **usage, eta_seconds=eta)


def release_progress(release: Release) -> list[StageProgress]:
    """Progress of every stage the release's stage set names, in chain order."""
    return [stage_progress(release, name) for name in release.parsed_config().stages]


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return str(dt.timedelta(seconds=round(seconds)))


def release_active_scope(release: Release) -> list[str]:
    """The stages an operator started and has not paused or cancelled, in chain order."""
    active = set(StageRun.objects.filter(release=release, state=StageRunState.ACTIVE)
                 .values_list("stage", flat=True))
    return [name for name in STAGE_ORDER if name in active]


def scope_claimable(release: Release) -> int:
    """Rows of the active stages a worker could claim now: pending, or held by a dead worker."""
    now = timezone.now()
    claimable = Q(status=WorkStatus.PENDING) | Q(status=WorkStatus.CLAIMED,
                                                 lease_expires_at__lt=now)
    return sum(get_stage(name).rows(release).filter(claimable).count()
               for name in release_active_scope(release))
