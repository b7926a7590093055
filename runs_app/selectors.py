"""Reads of runs_app: progress of a release's stages, and its run as an operator sees it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, F, Min, Q, Sum
from django.utils import timezone

from runs_app.models import (
    Drain,
    DrainState,
    Generation,
    Release,
    RunControl,
    StageRun,
    StageRunState,
    WorkStatus,
)
from runs_app.models.pipeline import DRAIN_DEAD_AFTER  # noqa: F401 (tasks read it here)
from runs_app.providers.served import served_as_asked
from runs_app.schemas import STAGE_NAMES
from runs_app.stages import get_stage
from runs_app.stages.base import claimable_rows

log = logging.getLogger("baitbench.runs")

# The pace of a stage is what it finished in this last stretch: a run paused overnight, or
# one that just gained workers, shows its pace now, not its average since it began.
RATE_WINDOW = dt.timedelta(minutes=5)
# A pace measured over less than this is too noisy to show (seconds).
MIN_RATE_SPAN = 5.0

# A queued ticket whose task has not started after this long counts as lost by the queue (a
# database restart or a broker outage while it was enqueued): the schedule, every minute,
# marks it so and enqueues a fresh one. Were it only waiting behind busy workers, its task
# finds the ticket taken when it comes and stops at once.
QUEUED_STALE = dt.timedelta(seconds=settings.BAITBENCH_QUEUED_STALE_SECONDS)


def live_drains(release: Release) -> int:
    """Drains of the release queued recently or running with a fresh heartbeat."""
    now = timezone.now()
    return Drain.objects.filter(release=release).filter(
        Q(state=DrainState.QUEUED, created_at__gte=now - QUEUED_STALE)
        | Q(state=DrainState.RUNNING, heartbeat_at__gte=now - DRAIN_DEAD_AFTER)
    ).count()


# What a row of any stage is (DESIGN section 5): scored (a score or an accepted text was
# written), refused (the writer refused: a result), unscored (its replies never validated),
# failed (no reply, or no text, within the attempts), pending or claimed. Only scored and
# refused rows are done.
ROW_STATES = ("scored", "refused", "unscored", "failed", "pending", "claimed")


def row_state_counts(stage) -> dict[str, Count]:
    """The aggregates that count a stage's rows by what they are."""
    filters = stage.state_filters() | {
        "failed": Q(status=WorkStatus.FAILED), "pending": Q(status=WorkStatus.PENDING),
        "claimed": Q(status=WorkStatus.CLAIMED)}
    return {state: Count("pk", filter=filters[state]) for state in ROW_STATES}


@dataclasses.dataclass(frozen=True)
class StageProgress:
    stage: str
    total: int
    done: int  # finished rows: scored, refused or unscored (see `scored`)
    pending: int
    claimed: int
    failed: int
    scored: int = 0
    refused: int = 0
    unscored: int = 0
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

    @property
    def gaps(self) -> int:
        """Rows that ended with nothing written: unscored or failed."""
        return self.unscored + self.failed


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
    stage = get_stage(stage_name)
    found = stage.rows(release).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=WorkStatus.DONE)),
        **row_state_counts(stage),
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


@dataclasses.dataclass(frozen=True)
class RowCounts:
    """One stage's rows that one model answered (`role` "juror", "reader", …) or whose text
    one writer wrote (`role` "writer"), counted by what they are."""

    stage: str
    role: str
    model: str
    scored: int = 0
    refused: int = 0
    unscored: int = 0
    failed: int = 0
    pending: int = 0
    claimed: int = 0

    @property
    def total(self) -> int:
        return sum(getattr(self, state) for state in ROW_STATES)

    @property
    def unscored_share(self) -> float:
        return self.unscored / self.total if self.total else 0.0

    def describe(self) -> str:
        """"12 scored, 3 unscored of 15", naming only the states it has."""
        parts = [f"{getattr(self, state):,} {state}" for state in ROW_STATES
                 if getattr(self, state)]
        return f"{', '.join(parts) or 'no rows'} of {self.total:,}"


def release_row_counts(release: Release) -> list[RowCounts]:
    """Every stage's rows per model that answered them and per writer whose texts they are
    (a stage whose rows one model answers, generate, is counted once), in chain order: a
    few grouped queries per stage."""
    config = release.parsed_config()
    found: list[RowCounts] = []
    for name in config.stages:
        stage = get_stage(name)
        groupings = [(stage.role, stage.answered_by)]
        if stage.writer_path and stage.writer_path != stage.answered_by:
            groupings.append(("writer", stage.writer_path))
        for role, path in groupings:
            found += _counts_by(release, stage, role, path,
                                getattr(config, stage.answered_by_config, "") or "")
    return found


def _counts_by(release: Release, stage, role: str, path: str | None,
               named: str) -> list[RowCounts]:
    counts = row_state_counts(stage)
    if path is None:  # the release names the one model that answers every row
        totals = stage.rows(release).aggregate(**counts)
        return [RowCounts(stage.name, role, named, **totals)] if any(totals.values()) else []
    rows = stage.rows(release).filter(**{f"{path}__isnull": False}).values(path) \
        .annotate(**counts).order_by(path)
    return [RowCounts(stage.name, role, row.pop(path), **row) for row in rows]


def release_row_problems(release: Release) -> list[str]:
    """Why the release's rows do not yet make a publishable whole, one line each: rows still
    pending, claimed or failed (whatever the release's status says), rows built on an
    earlier stage's rows that have changed since (`Stage.outdated`), and each writer, juror
    and reader whose share of unscored rows in a stage is above the release file's
    `gate.max_unscored_share` (DESIGN section 5). Texts another model wrote are warned of
    apart (`served_model_warnings`)."""
    limit = release.parsed_config().gate.max_unscored_share
    problems = []
    for progress in release_progress(release):
        unfinished = [f"{getattr(progress, state):,} {state}"
                      for state in ("pending", "claimed", "failed") if getattr(progress, state)]
        if unfinished:
            problems.append(f"stage {progress.stage}: {', '.join(unfinished)} of "
                            f"{progress.total:,} rows" + (
                                " (retry the failed ones)" if progress.failed else ""))
        outdated = get_stage(progress.stage).outdated(release)
        if outdated:
            problems.append(f"stage {progress.stage}: {outdated:,} rows built on rows that "
                            f"have changed since (run the stage again to bring them up to "
                            f"date)")
    for counts in release_row_counts(release):
        if counts.unscored and counts.unscored_share > limit:
            problems.append(
                f"stage {counts.stage}: {counts.role} {counts.model} has {counts.unscored:,} "
                f"of {counts.total:,} rows unscored ({counts.unscored_share:.1%}, above the "
                f"release's limit of {limit:.1%}; retry them)")
    return problems


# Texts named per writer before the rest are counted instead.
MAX_NAMED_TEXTS = 10


def served_model_warnings(release: Release) -> list[str]:
    """One line per writer with texts whose reply names another model than the one asked
    (`runs_app.providers.served.served_as_asked`): the leaderboard would attribute them to
    a writer that did not write them. It names the models served, the texts and how many
    of the writer's texts they are; a reply that names no model is not counted.

    A warning, shown where the operator and the publisher look (the run page,
    `release_status`, the publish page, `verify_release`), not a refusal to publish: what
    OpenRouter names a served model is not documented (a dated snapshot, words reordered,
    `deepseek-chat` answered as `deepseek-chat-v3-0324`), and a name the rule misreads
    must not leave a release that nothing can publish or write again."""
    texts = Generation.objects.filter(release=release, status=WorkStatus.DONE)
    # The run page polls this: only names that differ from the slug asked reach the rule.
    named_otherwise = texts.exclude(served_model="").exclude(
        served_model=F("model__openrouter_id"))
    others: dict[str, dict[str, list[int]]] = {}
    for pk, asked, served in named_otherwise.values_list("pk", "model__openrouter_id",
                                                         "served_model"):
        if not served_as_asked(asked, served):
            others.setdefault(asked, {}).setdefault(served, []).append(pk)
    if not others:
        return []
    written = dict(texts.filter(model__openrouter_id__in=others).values_list(
        "model__openrouter_id").annotate(count=Count("pk")))
    return [_served_line(asked, served, written[asked]) for asked, served in sorted(others.items())]


def _served_line(asked: str, served: dict[str, list[int]], written: int) -> str:
    ids = sorted(pk for pks in served.values() for pk in pks)
    named = ", ".join(map(str, ids[:MAX_NAMED_TEXTS])) + (
        f" and {len(ids) - MAX_NAMED_TEXTS:,} more" if len(ids) > MAX_NAMED_TEXTS else "")
    models = ", ".join(f"{name} ({len(pks):,})" for name, pks in sorted(served.items()))
    return (f"writer {asked}: {len(ids):,} of {written:,} texts were served by another model "
            f"({models}; texts {named}): published, they would be attributed to {asked}")


def release_has_gaps(release: Release) -> bool:
    """A row of the release ended unscored or failed: it is not every stage done."""
    return any(progress.gaps for progress in release_progress(release))


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return str(dt.timedelta(seconds=round(seconds)))


def release_active_scope(release: Release) -> list[str]:
    """The stages an operator started and has not paused or cancelled, in chain order."""
    active = set(StageRun.objects.filter(release=release, state=StageRunState.ACTIVE)
                 .values_list("stage", flat=True))
    return [name for name in STAGE_NAMES if name in active]


def scope_claimable(release: Release) -> int:
    """Rows of the active stages a worker could claim now: pending (and not waiting out a
    provider's Retry-After, `runs_app.stages.base.parked`), or held by a dead worker."""
    return sum(get_stage(name).rows(release).filter(claimable_rows()).count()
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
class ClusterAlive:
    """One `manage.py qcluster` with a current heartbeat."""

    name: str  # django-q2's words for the cluster's id ("sink-avocado-vermont-cat")
    host: str
    workers: int  # worker processes
    status: str  # django-q2's: Starting, Idle, Working, Stopping
    up_seconds: float


@dataclasses.dataclass(frozen=True)
class WorkersAlive:
    """The django-q2 clusters whose heartbeat is current, as this process can see them."""

    visible: bool  # False: the heartbeats are kept where this process cannot look
    clusters: int = 0
    workers: int = 0  # worker processes in those clusters
    alive: tuple[ClusterAlive, ...] = ()


def heartbeats_visible() -> bool:
    """Whether the clusters' heartbeats are kept where every process can read them: Redis
    (the broker or the cache), or the embedded database's heartbeat directory
    (`settings.Q_CLUSTER["cache"]`). A cache of this process alone holds only its own."""
    return bool("redis" in settings.Q_CLUSTER or settings.CACHE_URL
                or "cache" in settings.Q_CLUSTER)


def workers_alive() -> WorkersAlive:
    """Each running cluster's sentinel saves its status every half second, expiring in three
    (django-q2's `Stat`), on the Redis broker or else in the cache django-q2 is given. Where
    no other process can look (`heartbeats_visible`) none are visible, which is not the same
    as none being alive. The one place that reads the workers' heartbeat (the run pages, the
    recovery notes)."""
    from django_q.brokers import get_broker
    from django_q.conf import Conf
    from django_q.humanhash import humanize
    from django_q.status import Stat

    if not heartbeats_visible():
        return WorkersAlive(visible=False)
    try:
        stats = Stat.get_all(broker=get_broker())
    except Exception:  # the broker or the cache is down: nothing can be said
        log.warning("cluster heartbeats unreadable", exc_info=True)
        return WorkersAlive(visible=False)
    alive = tuple(
        ClusterAlive(name=humanize(stat.cluster_id.hex), host=stat.host,
                     workers=len(stat.workers), status=str(stat.status),
                     up_seconds=stat.uptime() if stat.tob else 0.0)
        for stat in stats if stat.status != Conf.STOPPED)
    return WorkersAlive(visible=True, clusters=len(alive),
                        workers=sum(cluster.workers for cluster in alive), alive=alive)


@dataclasses.dataclass(frozen=True)
class ReleaseRun:
    release: Release
    stages: list[StageStatus]
    budget_usd: Decimal | None
    spent_usd: float
    drains_running: int  # drain tasks with a live heartbeat
    drains_queued: int  # drain tasks no worker has started yet
    oldest_queued_at: dt.datetime | None
    claimed: int = 0  # rows of the release some worker holds now
    workers: WorkersAlive | None = None

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.spent_usd >= float(self.budget_usd)

    @property
    def started(self) -> bool:
        return any(status.state for status in self.stages)


def release_run(release: Release) -> ReleaseRun:
    """Everything the operator's page shows of a run, in a dozen queries whatever its size."""
    states = dict(StageRun.objects.filter(release=release).values_list("stage", "state"))
    control = RunControl.objects.filter(release=release).first()
    now = timezone.now()
    drains = Drain.objects.filter(release=release).aggregate(
        running=Count("pk", filter=Q(state=DrainState.RUNNING,
                                     heartbeat_at__gte=now - DRAIN_DEAD_AFTER)),
        queued=Count("pk", filter=Q(state=DrainState.QUEUED,
                                    created_at__gte=now - QUEUED_STALE)),
        oldest=Min("created_at", filter=Q(state=DrainState.QUEUED,
                                          created_at__gte=now - QUEUED_STALE)),
    )
    stages = [StageStatus(progress, states.get(progress.stage, ""))
              for progress in release_progress(release)]
    return ReleaseRun(
        release=release,
        stages=stages,
        budget_usd=control.budget_usd if control else None,
        spent_usd=control.spent_usd if control else 0.0,
        drains_running=drains["running"], drains_queued=drains["queued"],
        oldest_queued_at=drains["oldest"], claimed=sum(
            status.progress.claimed for status in stages),
        workers=workers_alive(),
    )


def releases_with_runs():
    """Every release with its run's control, its stages' states and its texts written (two
    queries), newest first: the operator's list."""
    return (Release.objects.select_related("run").prefetch_related("stage_runs")
            .annotate(texts_total=Count("generations", distinct=True),
                      texts_done=Count("generations", distinct=True,
                                       filter=Q(generations__status=WorkStatus.DONE)))
            .order_by("-created_at"))
