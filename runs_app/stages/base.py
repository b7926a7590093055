"""How every stage drains its work table (DESIGN section 5).

A stage plans rows (idempotent: unique keys, `ignore_conflicts`), then workers claim batches
atomically with a lease, run the model calls concurrently, and write results only while
they still hold the claim. A killed worker's claims expire and are drained again; a finished
row is never claimed again, so nothing that finished is ever paid for twice.

One drain works on every stage of its scope at once (`drain_release`): when a row is written,
the text it belongs to is planned for the stages that read it next (and, for a stage that
`plans_itself`, for its own next row: the cross-examination's next turn), and the drain claims
the newest stages first, so a text moves through the chain as soon as its own previous stage is
done instead of waiting for the whole stage (DESIGN section 5). Before every claim the drain
asks the release's `RunGate` which stages it may claim from: an operator's pause, a cancelled
stage or a spent budget stop new claims, while the calls already made are still written.

The same machinery drains work that belongs to no release: a stage's `rows(subject)` may be
keyed by any row (a reader trial, a contamination check). Such rows add to no release's
recorded spend, and only a `Release` subject is refused once published.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import concurrent.futures
import dataclasses
import datetime as dt
import functools
import itertools
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable
from typing import Any, ClassVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q, UniqueConstraint
from django.utils import timezone

from runs_app.models import (
    Drain,
    DrainState,
    ImmutableError,
    Release,
    ReleaseStatus,
    RunControl,
    StageRun,
    StageRunState,
    WorkItem,
    WorkStatus,
)
from runs_app.models.pipeline import DRAIN_DEAD_AFTER
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import STAGE_NEEDS, ReleaseConfig

log = logging.getLogger("baitbench.stages")

# A row claimed this many times in a row without a written result is failed: its worker
# keeps dying on it.
MAX_CLAIMS = 6
# A stage that had nothing to claim is asked again after this long (seconds), unless this
# drain planned rows for it meanwhile: an empty claim still takes the write lock on SQLite.
IDLE_RECHECK = 0.5
# A drain with nothing to do while other workers still hold rows of its release waits for
# their results (which plan new work) this long between looks.
WAIT_POLL = 0.5
# ... and plans its whole scope again at most this often meanwhile (seconds).
FULL_PLAN_EVERY = 5.0
# Finished texts are planned for their next stages together: at this many texts, or this
# long (seconds) after the first of them finished, or when the drain runs short of work.
PLAN_BATCH = 25
PLAN_EVERY = 0.25
# What a database restart, a dropped connection or a deadlock raises: the same statement on
# a fresh connection succeeds moments later. A drain waits that out (backing off up to
# DATABASE_BACKOFF_MAX seconds between tries) for at most a third of a lease, the time it
# has before its claims would need renewing, rather than give up the calls it has made.
TRANSIENT_DATABASE_ERRORS = (OperationalError, InterfaceError)
DATABASE_BACKOFF_MAX = 2.0


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def database_patience() -> float:
    """Seconds a drain keeps retrying a database that went away."""
    return settings.BAITBENCH_LEASE_SECONDS / 3


def retry_database(action: Callable[[], Any], *, what: str,
                   patience: float | None = None) -> Any:
    """Run `action` (one transaction or one statement), again on a fresh connection while the
    database is unreachable or picked it as a deadlock's victim, for up to `patience`
    seconds. Inside an outer transaction (a test's) nothing can be retried: it is aborted."""
    deadline = time.monotonic() + (database_patience() if patience is None else patience)
    delay = 0.1
    while True:
        try:
            return action()
        except TRANSIENT_DATABASE_ERRORS as error:
            if connection.in_atomic_block or time.monotonic() + delay > deadline:
                raise
            log.warning("%s: database error, retrying in %.1f s: %s", what, delay,
                        str(error).splitlines()[0] if str(error) else type(error).__name__)
            connection.close()  # the next query connects again
            time.sleep(delay)
            delay = min(delay * 2, DATABASE_BACKOFF_MAX)


class Stage(abc.ABC):
    """One link of the chain. Subclasses say what to plan, call and record."""

    name: ClassVar[str]
    work_model: ClassVar[type[WorkItem]]
    # Foreign keys `build` reads, fetched with the claimed rows in one query.
    claim_related: ClassVar[tuple[str, ...]] = ()
    # Large columns of those that `build` never reads (a text's prompt, say).
    claim_defer: ClassVar[tuple[str, ...]] = ()
    # A text's rows of this stage come one after another (the next turn of an interview is
    # planned only once the previous one is written): the drain then plans a written row's
    # text for this stage again, as it does for the stages that follow. `plan` must create
    # only the rows whose previous row is finished, so planning stays idempotent.
    plans_itself: ClassVar[bool] = False
    # Who answers a row (DESIGN section 5: every row says what it is, per writer, juror and
    # reader): the path to the answering model's id, or None when the release's config names
    # it (`answered_by_config`, e.g. "reader"); `role` is what that model is to the release.
    answered_by: ClassVar[str | None] = None
    answered_by_config: ClassVar[str] = ""
    role: ClassVar[str] = ""
    # The path to the id of the model that wrote the row's text (None: rows of no text).
    writer_path: ClassVar[str | None] = "generation__model__openrouter_id"

    def state_filters(self) -> dict[str, Q]:
        """What each finished row is, as filters on its table: `unscored` (its replies never
        validated) and `refused` (a result, not a gap); every other finished row is
        `scored`. Rows pending, claimed or failed say so by their status."""
        done = Q(status=WorkStatus.DONE)
        unscored = done & Q(outcome="unscored")
        refused = self.refused_filter()
        return {"scored": done & ~unscored & ~refused, "refused": refused,
                "unscored": unscored}

    def refused_filter(self) -> Q:
        """Finished rows that record a refusal; none for most stages."""
        return Q(pk__in=[])

    def outdated(self, release: Release) -> int:
        """Finished rows built on rows of an earlier stage that have changed since (a reveal
        told a jury that an operator's retry gave another verdict): `plan` asks them again
        or brings them up to date. None for most stages."""
        return 0

    @property
    def needs(self) -> tuple[str, ...]:
        """Stages whose rows this stage reads (`runs_app.schemas.STAGE_NEEDS`)."""
        return STAGE_NEEDS[self.name]

    def rows(self, release: Release):
        return self.work_model.objects.filter(release=release)

    def config(self, release_id: int) -> ReleaseConfig:
        """The release's configuration, parsed once per stage instance: `build` runs per row,
        and a frozen release's configuration cannot change while it drains."""
        cache: dict[int, ReleaseConfig] = self.__dict__.setdefault("_configs", {})
        if release_id not in cache:
            cache[release_id] = Release.objects.get(pk=release_id).parsed_config()
        return cache[release_id]

    @abc.abstractmethod
    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        """Create the pending rows that are possible now; return how many were new.

        `generation_ids` limits planning to those texts (their previous stage has just
        finished); None plans the whole release.
        """

    def create_rows(self, release: Release, rows: Iterable[Any],
                    generation_ids: Collection[int] | None = None) -> int:
        """Insert the rows whose keys are new (a unique key makes planning idempotent);
        return how many were new. Counting only the texts being planned keeps planning a
        few texts cheap in a large release."""
        rows = list(rows)
        if not rows:
            return 0
        existing = self.rows(release)
        if generation_ids is not None:
            existing = existing.filter(generation_id__in=generation_ids)
        # Rows whose key is already there would be ignored by the INSERT: leaving them out
        # here makes planning a planned scope again (every drain's last look) one SELECT,
        # not an INSERT of every row. The rest still goes through `ignore_conflicts`.
        # (A key holding NULL never conflicts in SQL, so it is never left out.)
        attnames = unique_key(self.work_model)
        found = list(existing.values_list(*attnames))
        keys = set(found)
        rows = [row for row in rows if (key := tuple(getattr(row, name) for name in attnames))
                not in keys or None in key]
        if not rows:
            return 0
        self.work_model.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        return existing.count() - len(found)

    @abc.abstractmethod
    def planned_calls(self, config: ReleaseConfig) -> int:
        """Model calls this stage makes for a release if every text complies and every reply
        validates at once (retries come on top): the plan behind cost estimates."""

    def texts_of(self, items: Iterable[Any]) -> set[int]:
        """The generations the finished rows belong to: the texts to plan further."""
        return {item.generation_id for item in items if getattr(item, "generation_id", None)}

    def prepare(self, items: list[Any]) -> None:
        """Before `build` runs for each row of a claimed batch: fetch what the rows share
        (a few queries for the batch instead of a few per row). Optional."""
        return None

    @abc.abstractmethod
    def build(self, item: Any) -> Any:
        """Gather, with the ORM, everything the call needs, as plain data."""

    @abc.abstractmethod
    async def execute(self, job: Any, providers: ProviderPool) -> Any:
        """Make the model call(s) for one job. No ORM here."""

    def settle(self, release: Release) -> None:
        """After a drain: derive what depends on many rows at once (e.g. per-text scores).

        Done once per drain rather than per row, off the hot path of writing results.
        """
        return None

    def retried(self, ids: list[int]) -> None:
        """After an operator's retry gave these rows a fresh attempt budget (`attempts` 0,
        in `runs_app.services.release_retry_failed`): what else of theirs counts from it."""
        return None

    def add_children(self, rows: Iterable[Any]) -> None:
        """From `record`: new child rows (claims, attempts) to insert with the batch's results,
        in the same transaction, one INSERT per model for the whole batch."""
        self.__dict__.setdefault("_children", []).extend(rows)

    @abc.abstractmethod
    def record(self, item: Any, outcome: Any) -> dict[str, Any]:
        """Turn an outcome into the fields to write on the row (status included).

        Child rows go through `add_children`; it runs inside the transaction that checks the
        claim. A row
        that made calls reports their cumulative cost in `cost_usd` (what it cost so far,
        earlier claims included): the difference is added to the release's recorded spend.
        """


@functools.cache
def unique_key(model: type[WorkItem]) -> tuple[str, ...]:
    """The columns (attnames) of a work table's first unique key: its planning key."""
    for constraint in model._meta.constraints:
        if isinstance(constraint, UniqueConstraint) and constraint.condition is None:
            return tuple(model._meta.get_field(name).attname for name in constraint.fields)
    for field in model._meta.concrete_fields:
        if field.unique and not field.primary_key:
            return (field.attname,)
    raise TypeError(f"{model.__name__}: a work table needs a unique key to plan idempotently")


# The `claim_token` of a pending row that waits out a provider's Retry-After (`parked`):
# its `lease_expires_at` is then the time before which nobody claims it.
WAITING = "waiting"


def claimable_rows(stage: Stage | None = None, release: Release | None = None) -> Q:
    """What a worker may claim: pending rows (a parked one once its wait is over), and
    claimed rows whose lease has run out."""
    return (Q(status=WorkStatus.PENDING) & ~Q(claim_token=WAITING)) | Q(
        status__in=(WorkStatus.PENDING, WorkStatus.CLAIMED), lease_expires_at__lt=timezone.now())


def given_back() -> dict[str, Any]:
    """The fields (for `Stage.record`) that give a row back at once: pending, unclaimed,
    claimable by any worker (a text's next attempt, an uptake row's frame judge)."""
    return {"status": WorkStatus.PENDING, "claim_token": "", "claimed_by": "",
            "lease_expires_at": None}


def parked(seconds: float, why: str) -> dict[str, Any]:
    """The fields (for `Stage.record`) that give a row back for later: pending, claimable by
    any worker once `seconds` have passed, not before. For a provider that said to wait
    longer than a call waits (`ProviderError.retry_after`): the row is not failed, which an
    operator would have to retry, nor asked again at once, which hammers the provider; the
    scheduled `reenqueue_stalled` drains the release again, and the wait costs nothing."""
    when = timezone.now() + dt.timedelta(seconds=max(0.0, seconds))
    return {"status": WorkStatus.PENDING, "claim_token": WAITING, "claimed_by": "",
            "lease_expires_at": when,
            "error": f"{why}; waiting until {when:%Y-%m-%d %H:%M:%S} UTC"}


def claimable_at_least(stage: Stage, release: Release, count: int) -> bool:
    """At least `count` rows of the stage are claimable: one query that stops counting
    there, however many rows are pending."""
    rows = stage.rows(release).filter(claimable_rows(stage, release))
    return rows.order_by().values("pk")[:count].count() >= count


def claim_batch(stage: Stage, release: Release, size: int, worker: str) -> list[Any]:
    """Claim up to `size` pending (or expired) rows; every claimed row is ours alone.

    PostgreSQL: `SELECT ... FOR UPDATE SKIP LOCKED` lets concurrent workers take disjoint
    rows without waiting. SQLite: the transaction begins IMMEDIATE (settings), so the
    select and the update run under the one write lock. The select reads the rows with what
    `build` needs, so a claim is one SELECT and one UPDATE.
    """
    token = uuid.uuid4().hex
    try:
        claimed = _mark_claimed(stage, release, size, worker, token)
    except TRANSIENT_DATABASE_ERRORS:
        # The connection may have dropped after the commit: the token tells what was
        # claimed, and rows claimed but never fetched would sit idle for a whole lease.
        if connection.in_atomic_block:
            raise
        log.warning("%s: database error while claiming; looking up what was claimed",
                    stage.name)
        claimed = retry_database(lambda: list(
            stage.work_model.objects.filter(claim_token=token)
            .select_related(*stage.claim_related).defer(*stage.claim_defer)),
            what=f"fetching claimed {stage.name} rows")
    return [item for item in claimed if not _fail_if_poisoned(stage, item)]


def _mark_claimed(stage: Stage, release: Release, size: int, worker: str,
                  token: str) -> list[Any]:
    now = timezone.now()
    lease = dt.timedelta(seconds=settings.BAITBENCH_LEASE_SECONDS)
    claimable = claimable_rows(stage, release)
    with transaction.atomic():
        # `of=("self",)`: lock the work rows only, never a row a subject's filter joins (the
        # release) or `claim_related` reads: every worker's claims and writes would then
        # queue on that one row.
        rows = list(
            stage.rows(release).filter(claimable).order_by("pk")
            .select_for_update(skip_locked=True, of=("self",))
            .select_related(*stage.claim_related).defer(*stage.claim_defer)[:size]
        )
        if not rows:
            return []
        fields = {"status": WorkStatus.CLAIMED, "claim_token": token, "claimed_by": worker,
                  "lease_expires_at": now + lease}
        stage.work_model.objects.filter(pk__in=[row.pk for row in rows]).update(
            claims=F("claims") + 1, **fields)
    # The rows as the UPDATE left them (locked, so nobody changed them in between).
    for row in rows:
        for name, value in fields.items():
            setattr(row, name, value)
        row.claims += 1
    return rows


def _fail_if_poisoned(stage: Stage, item: WorkItem) -> bool:
    if item.claims <= MAX_CLAIMS:
        return False
    stage.work_model.objects.filter(pk=item.pk, claim_token=item.claim_token).update(
        status=WorkStatus.FAILED, finished_at=timezone.now(),
        error=f"claimed {item.claims} times without finishing; its workers kept stopping",
    )
    return True


def _spent(item: WorkItem, fields: dict[str, Any]) -> float:
    """What the calls just recorded cost: the row's cost now minus what it counted before."""
    if "cost_usd" not in fields:
        return 0.0
    return (fields["cost_usd"] or 0.0) - (getattr(item, "cost_usd", None) or 0.0)


def write_outcomes(stage: Stage, finished: list[tuple[Any, Any]]) -> list[Any]:
    """Write the outcomes that arrived together, each only if we still hold its row's claim,
    in one transaction that also adds what they cost to the release's recorded spend (so the
    budget cap never misses a paid call); returns the rows written.

    The calls are paid for: a deadlock or a database that went away does not lose them. The
    transaction is tried again on a fresh connection (it checks the claims again, so a retry
    never writes a row twice) until the database answers or `database_patience` runs out.

    One query checks every claim and one statement per set of changed fields writes the
    rows: per-row queries cost more CPU than the model calls themselves (bench/calls.py).
    """
    return retry_database(lambda: _write_outcomes_once(stage, finished),
                          what=f"writing {len(finished)} {stage.name} results")


def _write_outcomes_once(stage: Stage, finished: list[tuple[Any, Any]]) -> list[Any]:
    model = stage.work_model
    written, spent = [], collections.Counter()
    changes: dict[tuple[str, ...], list[tuple[int, dict[str, Any]]]] = collections.defaultdict(
        list)
    stage.__dict__["_children"] = []
    with transaction.atomic():
        # Only the work rows (`of`), in key order: two writers that lock rows in different
        # orders, or lock a joined release row too, deadlock each other.
        held = set(model.objects.select_for_update(of=("self",)).filter(
            pk__in=[item.pk for item, _ in finished], status=WorkStatus.CLAIMED,
        ).order_by("pk").values_list("pk", "claim_token"))
        now = timezone.now()
        for item, outcome in finished:
            if (item.pk, item.claim_token) not in held:
                log.warning("%s %s: claim lost before the result was written", stage.name,
                            item.pk)
                continue
            fields = stage.record(item, outcome)
            if fields.get("status") in (WorkStatus.DONE, WorkStatus.FAILED):
                fields.setdefault("finished_at", now)
            # `claims` counts claims in a row that ended without a written result; a write
            # resets it.
            fields.setdefault("claims", 0)
            fields["updated_at"] = now
            changes[tuple(sorted(fields))].append((item.pk, fields))
            written.append(item)
            # A row of no release (a reader trial's reading) counts toward no release's budget.
            spent[getattr(item, "release_id", None)] += _spent(item, fields)
        for names, rows in changes.items():
            _update_rows(model, names, rows)
        _insert_children(stage.__dict__.pop("_children", []))
        for release_id, cost in spent.items():
            if cost and release_id is not None:
                RunControl.objects.filter(release_id=release_id).update(
                    spent_usd=F("spent_usd") + cost)
    return written


def _insert_children(rows: list[Any]) -> None:
    by_model: dict[type, list[Any]] = collections.defaultdict(list)
    for row in rows:
        by_model[type(row)].append(row)
    for child_model, children in by_model.items():
        child_model.objects.bulk_create(children, batch_size=500)


def _update_rows(model: type[WorkItem], names: tuple[str, ...],
                 rows: list[tuple[int, dict[str, Any]]]) -> None:
    """UPDATE the given fields of many rows with one prepared statement (executemany); the
    values are prepared by each field, as `QuerySet.update` would."""
    quote = connection.ops.quote_name
    fields = [model._meta.get_field(name) for name in names]
    sql = (f"UPDATE {quote(model._meta.db_table)} SET "
           + ", ".join(f"{quote(field.column)} = %s" for field in fields)
           + f" WHERE {quote(model._meta.pk.column)} = %s")
    params = [[field.get_db_prep_save(values[name], connection)
               for name, field in zip(names, fields, strict=True)] + [pk]
              for pk, values in rows]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


@dataclasses.dataclass
class DrainReport:
    stage: str
    planned: int = 0
    finished: int = 0
    lost: int = 0
    out_of_time: bool = False  # stopped claiming at its time budget; work may remain
    stopped: str = ""  # why it stopped claiming early: "paused", "budget", ...
    by_stage: collections.Counter = dataclasses.field(default_factory=collections.Counter)


class RunGate:
    """Which stages a drain may claim from now (DESIGN section 5; `StageRun`, `RunControl`).

    A controlled drain (a queued task) claims only from stages an operator started and has
    not paused or cancelled, and nothing once the recorded spend has reached the budget cap.
    An uncontrolled drain (a test, a benchmark, `drain(stage, release)`) claims from every
    stage it was given. Either way a published release is never drained.
    """

    def __init__(self, release: Release, scope: list[str], *, controlled: bool) -> None:
        self.release, self.scope, self.controlled = release, scope, controlled
        self.reason = ""

    def open_stages(self) -> set[str]:
        if not self.controlled:
            return set(self.scope)
        states = dict(StageRun.objects.filter(release=self.release, stage__in=self.scope)
                      .values_list("stage", "state"))
        control = RunControl.objects.filter(release=self.release).first()
        if control is not None and control.over_budget:
            self.reason = "budget"
            return set()
        open_names = {name for name in self.scope if states.get(name) == StageRunState.ACTIVE}
        self.reason = "" if open_names else "paused or cancelled"
        return open_names


@dataclasses.dataclass
class _Lane:
    """One stage within a drain."""

    stage: Stage
    next_claim: float = 0.0  # monotonic time before which an empty stage is not asked again
    followers: list[_Lane] = dataclasses.field(default_factory=list)


class _LoopThread:
    """An event loop on its own thread for the model calls; the ORM stays on the caller's.

    Jobs cross to the loop in batches (one wake-up per batch, not per call) and come back
    through a queue the caller blocks on: py-spy showed a thread hand-over per call, and a
    `concurrent.futures.wait` over every call in flight, costing more than the call itself.

    At most `limit` jobs run at once; the caller may hand over a few more, built ahead, which
    wait here and start on the loop the moment a running job finishes: a slot that frees up
    while the caller writes results or claims rows does not wait for the caller
    (bench/calls.py).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.loop = asyncio.new_event_loop()
        self.results: queue.SimpleQueue[tuple[int, asyncio.Task]] = queue.SimpleQueue()
        # The loop's own: jobs handed over and not started yet, and how many run.
        self.queued: collections.deque[tuple[int, Any]] = collections.deque()
        self.running = 0
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def start(self, jobs: list[tuple[int, Any]]) -> None:
        """Run each (key, coroutine) on the loop, as slots allow; its task comes back
        through `wait`."""
        if jobs:
            self.loop.call_soon_threadsafe(self._start_all, jobs)

    def _start_all(self, jobs: list[tuple[int, Any]]) -> None:
        self.queued.extend(jobs)
        self._fill()

    def _fill(self) -> None:
        while self.queued and self.running < self.limit:
            key, coroutine = self.queued.popleft()
            self.running += 1
            task = self.loop.create_task(coroutine)
            task.add_done_callback(functools.partial(self._finished, key))

    def _finished(self, key: int, task: asyncio.Task) -> None:
        self.running -= 1
        self.results.put((key, task))
        self._fill()

    def drop_queued(self) -> list[int]:
        """Take back the jobs not started yet (their calls are never made); their keys."""
        dropped: concurrent.futures.Future[list[int]] = concurrent.futures.Future()

        def drop() -> None:
            keys = []
            while self.queued:
                key, coroutine = self.queued.popleft()
                coroutine.close()
                keys.append(key)
            dropped.set_result(keys)

        self.loop.call_soon_threadsafe(drop)
        return dropped.result(timeout=30)

    def wait(self, timeout: float) -> list[tuple[int, asyncio.Task]]:
        """The calls that finished: blocks until one has (or `timeout`), then takes every
        other that finished meanwhile, so that they are written in one transaction."""
        try:
            finished = [self.results.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                finished.append(self.results.get_nowait())
            except queue.Empty:
                return finished

    def close(self, providers: ProviderPool) -> None:
        self.drop_queued()
        asyncio.run_coroutine_threadsafe(providers.aclose(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


def renew_leases(stage: Stage, tokens: set[str]) -> int:
    """Extend the lease of every row this worker still holds: a live worker never loses a
    row it is working on, while a dead worker's rows expire one lease after its last renewal."""
    lease = dt.timedelta(seconds=settings.BAITBENCH_LEASE_SECONDS)
    return stage.work_model.objects.filter(
        claim_token__in=tokens, status=WorkStatus.CLAIMED
    ).update(lease_expires_at=timezone.now() + lease)


def others_at_work(release: Release, stages: list[Stage]) -> bool:
    """Another worker holds a live claim on a row of these stages: its results may plan
    work for this drain (a text's next stage)."""
    now = timezone.now()
    return any(stage.rows(release).filter(status=WorkStatus.CLAIMED, lease_expires_at__gte=now)
               .exists() for stage in stages)


def running_drains(release: Release) -> int:
    """Drain tasks of the release running now (a fresh heartbeat): the drains that share
    its rows. Queued tickets do not count; they wait behind a running drain."""
    return Drain.objects.filter(
        release=release, state=DrainState.RUNNING,
        heartbeat_at__gte=timezone.now() - DRAIN_DEAD_AFTER).count()


@dataclasses.dataclass
class DrainHooks:
    """What a caller learns while a drain runs (all optional)."""

    on_finished: Callable[[], None] | None = None  # once per written row (a progress bar)
    on_planned: Callable[[int], None] | None = None  # new rows planned (there is more work)
    heartbeat: Callable[[], None] | None = None  # a live drain, every lease renewal or wait


class _Drain:
    """The loop of one drain over the lanes of its scope; see `drain_release`."""

    def __init__(self, release: Release, lanes: list[_Lane], gate: RunGate,
                 providers: ProviderPool, concurrency: int, worker: str, hooks: DrainHooks,
                 report: DrainReport, deadline: float | None, wait_for_others: float) -> None:
        self.release, self.lanes, self.gate = release, lanes, gate
        self.providers, self.concurrency, self.worker = providers, concurrency, worker
        self.hooks, self.report, self.deadline = hooks, report, deadline
        self.wait_for_others = wait_for_others
        # Beyond the calls in flight, a few built ahead wait on the loop for the next free
        # slot (`_LoopThread`): about what finishes while this thread writes or claims.
        self.capacity = concurrency + max(1, concurrency // 10)
        self.calls = _LoopThread(concurrency)
        self.keys = itertools.count()
        # Handed to the loop: running, or built and waiting there for a slot.
        self.in_flight: dict[int, tuple[_Lane, Any]] = {}
        # Results back from their calls whose transaction has not committed yet.
        self.unwritten: list[tuple[_Lane, Any, Any]] = []
        self.ready: collections.deque[tuple[_Lane, Any]] = collections.deque()
        # Claim ahead, half the concurrency: a slot that frees up starts its next call at
        # once. A new claim waits until half of that is used, so that a claim is one
        # transaction per batch of rows, not one per call.
        self.ahead = max(1, concurrency // 2)
        # Texts finished here whose next stages are not planned yet, per following lane.
        self.to_plan: dict[int, set[int]] = collections.defaultdict(set)
        self.plan_due: float | None = None
        self.renew_every = settings.BAITBENCH_LEASE_SECONDS / 3
        # The heartbeat says the drain is alive, far more often than leases are renewed:
        # a silent drain is taken for dead within a minute (runs_app.tasks).
        self.beat_every = settings.BAITBENCH_DRAIN_HEARTBEAT_SECONDS
        self.renewed = self.planned_at = self.beaten = time.monotonic()
        # Other drains may claim from the same rows (a queued drain task): then claiming
        # ahead is held back near the end (`_plenty`).
        self.shared = gate.controlled and isinstance(release, Release)

    def run(self) -> None:
        try:
            self._loop()
        except BaseException:
            # Whatever stopped the drain, the calls it made are paid for: write them.
            self._write_in_flight()
            raise
        finally:
            self.calls.close(self.providers)

    def _loop(self) -> None:
        idle_since: float | None = None
        outage: float | None = None  # when the database stopped answering, if it has
        while True:
            try:
                if self._step_busy():
                    idle_since = outage = None
                    continue
                if not self._more_work():
                    return
                outage = None
            except TRANSIENT_DATABASE_ERRORS as error:
                outage = self._database_lost(error, outage)
                continue
            if self.ready:
                continue
            # Nothing to claim yet, but other workers hold rows of this scope whose
            # results plan the next stages of their texts: wait for them a while.
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > self.wait_for_others:
                return
            try:
                self._beat()
            except TRANSIENT_DATABASE_ERRORS as error:
                outage = self._database_lost(error, outage)
            time.sleep(WAIT_POLL)

    def _step_busy(self) -> bool:
        """Claim, start calls and write what finished; False when nothing is in flight."""
        if self.unwritten:
            self._write_unwritten()
        if self._out_of_time():
            self.report.out_of_time = True
        self._claim(force=False)
        self._start_calls()
        if not self.in_flight:
            return False
        self._collect()
        return True

    def _database_lost(self, error: Exception, since: float | None) -> float:
        """A claim, a plan or a heartbeat failed on the database: the calls in flight go on,
        and the drain tries again after a pause, until `database_patience` has passed since
        the database first failed (then it gives up, writing what it can)."""
        now = time.monotonic()
        since = since if since is not None else now
        if connection.in_atomic_block or now - since > database_patience():
            raise error
        log.warning("drain %s: database error, trying again: %s", self.release,
                    str(error).splitlines()[0] if str(error) else type(error).__name__)
        connection.close()
        time.sleep(min(DATABASE_BACKOFF_MAX, 0.1 + (now - since) / 4))
        return since

    def _write_in_flight(self) -> None:
        """The drain is stopping on an error: wait for the calls already made (up to a
        third of a lease) and write the results that came, so none of them is paid for and
        lost. A call that itself failed stays claimed and is made again after its lease."""
        # The calls not started yet are not made: their rows stay claimed, as rows claimed
        # ahead do, and are claimed again after their lease.
        for key in self.calls.drop_queued():
            self.in_flight.pop(key, None)
        deadline = time.monotonic() + database_patience()
        while self.in_flight and time.monotonic() < deadline:
            for key, task in self.calls.wait(min(1.0, self.renew_every)):
                lane, item = self.in_flight.pop(key)
                if not task.cancelled() and task.exception() is None:
                    self.unwritten.append((lane, item, task.result()))
        try:
            self._write_unwritten()
        except Exception:
            log.exception("drain %s: %d results paid for and not written (their rows are "
                          "claimed again after the lease)", self.release, len(self.unwritten))

    def _out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def _stopping(self) -> bool:
        return self.report.out_of_time or bool(self.report.stopped)

    def _claim(self, *, force: bool) -> None:
        """Fill the ready queue from the open stages, the last stage of the chain first."""
        if self._stopping() or (self._waiting() > self.ahead // 2 and not force):
            return
        open_names = self.gate.open_stages()
        if not open_names:
            self.report.stopped = self.gate.reason or "stopped"
            return
        now = time.monotonic()
        free = self.concurrency - len(self.in_flight) - len(self.ready)
        wanted = free + self.ahead
        for lane in reversed(self.lanes):
            if wanted <= 0:
                break
            if lane.stage.name not in open_names or (lane.next_claim > now and not force):
                continue
            size = wanted if self._plenty(lane) else min(wanted, free)
            if size <= 0:
                continue
            batch = claim_batch(lane.stage, self.release, size, self.worker)
            if not batch:
                lane.next_claim = now + IDLE_RECHECK
                continue
            # The rows are ours now: a database that drops the connection here must not
            # lose them (they would sit claimed, by nobody, until their lease ran out).
            retry_database(lambda lane=lane, batch=batch: lane.stage.prepare(batch),
                           what=f"preparing claimed {lane.stage.name} rows")
            self.ready.extend((lane, item) for item in batch)
            wanted -= len(batch)

    def _waiting(self) -> int:
        """Rows held and not calling yet: claimed ahead, or built and waiting on the loop
        for a slot (about; the loop starts them on its own)."""
        return len(self.ready) + max(0, len(self.in_flight) - self.concurrency)

    def _plenty(self, lane: _Lane) -> bool:
        """Claim ahead from this lane? Rows claimed ahead wait for a slot of this drain: at
        the end of a stage, while other drains have free slots, they would make the last
        calls start a whole call later (bench/scaleout.py). So a drain that shares its
        release with others claims ahead only while the lane holds at least two rounds of
        calls for every drain; near the end it claims only what it can start now."""
        if not self.shared:
            return True
        drains = running_drains(self.release)
        if drains <= 1:
            return True
        return claimable_at_least(lane.stage, self.release, 2 * self.concurrency * drains)

    def _start_calls(self) -> None:
        jobs = []
        try:
            while self.ready and len(self.in_flight) < self.capacity:
                lane, item = self.ready[0]
                # `build` reads the database: if that fails, the row stays ready for later.
                job = lane.stage.build(item)
                self.ready.popleft()
                key = next(self.keys)
                self.in_flight[key] = (lane, item)
                jobs.append((key, lane.stage.execute(job, self.providers)))
        finally:
            self.calls.start(jobs)

    def _collect(self) -> None:
        failure: BaseException | None = None
        for key, task in self.calls.wait(self._wait_timeout()):
            lane, item = self.in_flight.pop(key)
            if task.exception() is not None:
                # An unexpected exception is a bug: it surfaces once the other results are
                # written (its row's claim then expires).
                failure = failure or task.exception()
                continue
            self.unwritten.append((lane, item, task.result()))
        # The freed slots start their next calls (claimed ahead) before anything is written:
        # a slot waits only for a build, never for the database.
        try:
            self._start_calls()
        finally:
            self._write_unwritten()
        if failure is not None:
            raise failure
        self._plan_followers(force=False)
        if time.monotonic() - self.renewed >= self.renew_every:
            self._renew()
        elif time.monotonic() - self.beaten >= self.beat_every:
            self._beat()

    def _write_unwritten(self) -> None:
        """Write every result not written yet, one transaction per stage. A result stays in
        `unwritten` until its transaction commits: a write that fails is tried again with
        the next results, never dropped."""
        by_lane: dict[int, tuple[_Lane, list[tuple[Any, Any]]]] = {}
        for lane, item, outcome in self.unwritten:
            by_lane.setdefault(id(lane), (lane, []))[1].append((item, outcome))
        for lane, finished in by_lane.values():
            written = write_outcomes(lane.stage, finished)
            self.unwritten = [entry for entry in self.unwritten if entry[0] is not lane]
            self.report.finished += len(written)
            self.report.by_stage[lane.stage.name] += len(written)
            self.report.lost += len(finished) - len(written)
            for _ in range(len(written) if self.hooks.on_finished else 0):
                self.hooks.on_finished()
            self._queue_followers(lane, written)

    def _wait_timeout(self) -> float:
        timeout = min(self.renew_every, self.beat_every)
        if self.plan_due is not None:
            timeout = min(timeout, max(0.0, self.plan_due - time.monotonic()))
        return timeout

    def _queue_followers(self, lane: _Lane, written: list[Any]) -> None:
        if not written or not lane.followers:
            return
        texts = lane.stage.texts_of(written)
        for follower in lane.followers:
            self.to_plan[id(follower)] |= texts
        if self.plan_due is None:
            self.plan_due = time.monotonic() + PLAN_EVERY

    def _plan_followers(self, *, force: bool) -> None:
        """The texts finished here move on to the next stages of the scope. Planned in
        batches (every PLAN_EVERY seconds, at PLAN_BATCH texts, or when the drain would
        otherwise wait): planning a stage is a few queries, whatever the number of texts."""
        if not self.to_plan:
            return
        waiting = sum(len(texts) for texts in self.to_plan.values())
        due = self.plan_due is not None and time.monotonic() >= self.plan_due
        if not (force or due or waiting >= PLAN_BATCH or self._waiting() < self.ahead // 2):
            return
        planned = 0
        for lane in self.lanes:
            texts = self.to_plan.pop(id(lane), None)
            if texts:
                new = lane.stage.plan(self.release, generation_ids=texts)
                if new:
                    lane.next_claim = 0.0
                    planned += new
        self.to_plan.clear()
        self.plan_due = None
        self.report.planned += planned
        if planned and self.hooks.on_planned:
            self.hooks.on_planned(planned)

    def _more_work(self) -> bool:
        """Nothing is in flight: claim once more from every open stage, then plan the whole
        scope again (a lost worker may have finished rows without planning their texts'
        next stage). False when there is nothing left that this drain could do."""
        self._plan_followers(force=True)
        if self._stopping():
            return False
        self._claim(force=True)
        if self.ready or self._stopping():
            return bool(self.ready)
        waiting = self.wait_for_others > 0 and others_at_work(
            self.release, [lane.stage for lane in self.lanes])
        # Planning the whole scope costs a few queries per stage: while other workers are
        # busy, their own results plan their texts, so look only now and then.
        if not waiting or time.monotonic() - self.planned_at >= FULL_PLAN_EVERY:
            planned = self._plan_all()
            if planned:
                self.report.planned += planned
                for lane in self.lanes:
                    lane.next_claim = 0.0
                return True
        return waiting

    def _plan_all(self) -> int:
        self.planned_at = time.monotonic()
        return sum(lane.stage.plan(self.release) for lane in self.lanes)

    def _renew(self) -> None:
        held = [*self.in_flight.values(), *self.ready]
        for lane in self.lanes:
            tokens = {item.claim_token for owner, item in held if owner is lane}
            if tokens:
                renew_leases(lane.stage, tokens)
        self.renewed = time.monotonic()
        self._beat()

    def _beat(self) -> None:
        self.beaten = time.monotonic()
        if self.hooks.heartbeat:
            self.hooks.heartbeat()


def drain_release(
    release: Release, stage_names: list[str], *, concurrency: int | None = None,
    worker: str | None = None, providers: ProviderPool | None = None,
    time_budget: float | None = None, controlled: bool = True,
    wait_for_others: float = 0.0, hooks: DrainHooks | None = None,
) -> DrainReport:
    """Drain every stage of `stage_names` of one release at once, a text moving on to its
    next stage as soon as its own previous stage is done.

    Plans the whole scope first, then claims (the last stage of the chain first), calls and
    writes until nothing is left, the gate closes (pause, cancel, budget) or `time_budget`
    seconds have passed; the rows it holds are then still finished and written. With
    `wait_for_others` > 0 a drain that runs out of work while other workers still hold rows
    of the scope waits up to that long for the work their results will plan.
    """
    from runs_app.stages import get_stage

    if Release.objects.filter(pk=release.pk, status=ReleaseStatus.PUBLISHED).exists():
        raise ImmutableError(f"release {release.code} is published: nothing under it runs")
    lanes = [_Lane(get_stage(name)) for name in stage_names]
    for lane in lanes:
        lane.followers = [other for other in lanes if lane.stage.name in other.stage.needs
                          or (other is lane and lane.stage.plans_itself)]
    report = DrainReport(stage=",".join(stage_names))
    report.planned = sum(lane.stage.plan(release) for lane in lanes)
    hooks = hooks or DrainHooks()
    if report.planned and hooks.on_planned:
        hooks.on_planned(report.planned)
    pool = providers or ProviderPool()
    deadline = time.monotonic() + time_budget if time_budget is not None else None
    gate = RunGate(release, list(stage_names), controlled=controlled)
    _Drain(release, lanes, gate, pool, concurrency or settings.BAITBENCH_CONCURRENCY,
           worker or worker_name(), hooks, report, deadline,
           wait_for_others).run()
    settled = set()
    for lane in lanes:
        settle = type(lane.stage).settle
        if report.by_stage[lane.stage.name] and settle not in settled:
            settled.add(settle)
            lane.stage.settle(release)
    return report


def drain(
    stage: Stage, release: Any, *, concurrency: int | None = None, worker: str | None = None,
    on_finished: Callable[[], None] | None = None, providers: ProviderPool | None = None,
    time_budget: float | None = None,
) -> DrainReport:
    """Plan, then drain one stage of one release until none of its rows are left, or until
    `time_budget` seconds have passed (then the rows it holds are still finished). Claims
    regardless of the release's run controls: for tests, benchmarks and operators' tools.

    `release` may be another subject whose rows the stage keys (a reader trial, a
    contamination check): the same claims, leases and single writes hold for them."""
    if isinstance(release, Release) and Release.objects.filter(
            pk=release.pk, status=ReleaseStatus.PUBLISHED).exists():
        raise ImmutableError(f"release {release.code} is published: nothing under it runs")
    report = DrainReport(stage=stage.name, planned=stage.plan(release))
    lane = _Lane(stage)
    if stage.plans_itself:
        lane.followers = [lane]
    deadline = time.monotonic() + time_budget if time_budget is not None else None
    gate = RunGate(release, [stage.name], controlled=False)
    _Drain(release, [lane], gate, providers or ProviderPool(),
           concurrency or settings.BAITBENCH_CONCURRENCY, worker or worker_name(),
           DrainHooks(on_finished=on_finished), report, deadline, 0.0).run()
    stage.settle(release)
    return report
