"""Reads of runs_app: progress of a release's stages, and its run as an operator sees it."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Min, Q, Sum
from django.utils import timezone

from runs_app.models import (
    Drain,
    DrainState,
    Release,
    RunControl,
    StageRun,
    StageRunState,
    WorkStatus,
)
from runs_app.stages import STAGE_ORDER, get_stage

# The pace of a stage is what it finished in this last stretch: a run paused overnight, or
# one that just gained workers, shows its pace now, not its average since it began.
RATE_WINDOW = dt.timedelta(minutes=5)
# A pace measured over less than this is too noisy to show (seconds).
MIN_RATE_SPAN = 5.0


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
    rate_per_minute: float = 0.0  # rows finished per minute over the last RATE_WINDOW

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.pending == 0 and self.claimed == 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens + self.reasoning_tokens


def _rate(recent: int, first_recent: dt.datetime | None, now: dt.datetime) -> float:
    """Rows finished per minute, over the window, from the first of them to now."""
    if not recent or first_recent is None:
        return 0.0
    span = max((now - first_recent).total_seconds(), MIN_RATE_SPAN)
    return recent * 60.0 / span


def stage_progress(release: Release, stage_name: str) -> StageProgress:
    """Counts, usage and pace of one stage, in one query. Time left is the rows still to do
    at the pace of the last few minutes (None when nothing finished lately)."""
    now = timezone.now()
    recent = Q(finished_at__gte=now - RATE_WINDOW)
    found = get_stage(stage_name).rows(release).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=WorkStatus.DONE)),
        pending=Count("pk", filter=Q(status=WorkStatus.PENDING)),
        claimed=Count("pk", filter=Q(status=WorkStatus.CLAIMED)),
        failed=Count("pk", filter=Q(status=WorkStatus.FAILED)),
        prompt_tokens=Sum("prompt_tokens"), completion_tokens=Sum("completion_tokens"),
        reasoning_tokens=Sum("reasoning_tokens"), cost_usd=Sum("cost_usd"),
        recent=Count("pk", filter=recent), first_recent=Min("finished_at", filter=recent),
    )
    rate = _rate(found.pop("recent"), found.pop("first_recent"), now)
    found = {key: value or 0 for key, value in found.items()}
    remaining = found["pending"] + found["claimed"]
    eta = remaining * 60.0 / rate if remaining and rate else None
    return StageProgress(stage=stage_name, **found, eta_seconds=eta, rate_per_minute=rate)


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


# ---------------------------------------------------------------------------------------
# A release's run as its operator sees it
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StageStatus:
    """One stage of the stage set: its progress and what the operator last asked of it."""

    progress: StageProgress
    state: str  # a StageRunState value, or "" for a stage never started

    @property
    def stage(self) -> str:
        return self.progress.stage

    @property
    def state_label(self) -> str:
        return StageRunState(self.state).label if self.state else "Not started"


@dataclasses.dataclass(frozen=True)
class ReleaseRun:
    release: Release
    stages: list[StageStatus]
    budget_usd: Decimal | None
    spent_usd: float
    drains_running: int  # drain tasks with a live heartbeat
    drains_queued: int  # drain tasks no worker has started yet
    oldest_queued_at: dt.datetime | None

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.spent_usd >= float(self.budget_usd)

    @property
    def started(self) -> bool:
        return any(status.state for status in self.stages)


def release_run(release: Release) -> ReleaseRun:
    """Everything the operator's page shows of a run, in a dozen queries whatever its size."""
    from runs_app.tasks import QUEUED_STALE

    states = dict(StageRun.objects.filter(release=release).values_list("stage", "state"))
    control = RunControl.objects.filter(release=release).first()
    now = timezone.now()
    lease = dt.timedelta(seconds=settings.BAITBENCH_LEASE_SECONDS)
    drains = Drain.objects.filter(release=release).aggregate(
        running=Count("pk", filter=Q(state=DrainState.RUNNING, heartbeat_at__gte=now - lease)),
        queued=Count("pk", filter=Q(state=DrainState.QUEUED,
                                    created_at__gte=now - QUEUED_STALE)),
        oldest=Min("created_at", filter=Q(state=DrainState.QUEUED,
                                          created_at__gte=now - QUEUED_STALE)),
    )
    return ReleaseRun(
        release=release,
        stages=[StageStatus(progress, states.get(progress.stage, ""))
                for progress in release_progress(release)],
        budget_usd=control.budget_usd if control else None,
        spent_usd=control.spent_usd if control else 0.0,
        drains_running=drains["running"], drains_queued=drains["queued"],
        oldest_queued_at=drains["oldest"],
    )


def releases_with_runs():
    """Every release with its run's control, its stages' states and its texts written (two
    queries), newest first: the operator's list."""
    return (Release.objects.select_related("run").prefetch_related("stage_runs")
            .annotate(texts_total=Count("generations", distinct=True),
                      texts_done=Count("generations", distinct=True,
                                       filter=Q(generations__status=WorkStatus.DONE)))
            .order_by("-created_at"))
