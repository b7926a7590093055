"""How every stage drains its work table (DESIGN section 5).

A stage plans rows (idempotent: unique keys, `ignore_conflicts`), then workers claim batches
atomically with a lease, run the model calls concurrently, and write results only while
they still hold the claim. A killed worker's claims expire and are drained again; a finished
row is never claimed again, so nothing that finished is ever paid for twice.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import dataclasses
import datetime as dt
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent import futures
from typing import Any, ClassVar

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from runs_app.models import ImmutableError, Release, ReleaseStatus, WorkItem, WorkStatus
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig

log = logging.getLogger("baitbench.stages")

# A row claimed this many times in a row without a written result is failed: its worker
# keeps dying on it.
MAX_CLAIMS = 6


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Stage(abc.ABC):
    """One link of the chain. Subclasses say what to plan, call and record."""

    name: ClassVar[str]
    work_model: ClassVar[type[WorkItem]]
    # Stages whose rows must all be finished before this stage can be complete.
    after: ClassVar[tuple[str, ...]] = ()
    # Foreign keys `build` reads, fetched with the claimed rows in one query.
    claim_related: ClassVar[tuple[str, ...]] = ("release",)

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
    def plan(self, release: Release) -> int:
        """Create the pending rows that are possible now; return how many were new."""

    def create_rows(self, release: Release, rows: Iterable[Any]) -> int:
        """Insert the rows whose keys are new (a unique key makes planning idempotent);
        return how many were new."""
        before = self.rows(release).count()
        self.work_model.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        return self.rows(release).count() - before

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

    @abc.abstractmethod
    def record(self, item: Any, outcome: Any) -> dict[str, Any]:
        """Turn an outcome into the fields to write on the row (status included).

        May write child rows; it runs inside the transaction that checks the claim.
        """


def claim_batch(stage: Stage, release: Release, size: int, worker: str) -> list[Any]:
    """Claim up to `size` pending (or expired) rows; every claimed row is ours alone.

    PostgreSQL: `SELECT ... FOR UPDATE SKIP LOCKED` lets concurrent workers take disjoint
    rows without waiting. SQLite: the transaction begins IMMEDIATE (settings), so the
    select and the update run under the one write lock.
    """
    now = timezone.now()
    lease = dt.timedelta(seconds=settings.BAITBENCH_LEASE_SECONDS)
    token = uuid.uuid4().hex
    claimable = Q(status=WorkStatus.PENDING) | Q(
        status=WorkStatus.CLAIMED, lease_expires_at__lt=now
    )
    with transaction.atomic():
        ids = list(
            stage.rows(release).filter(claimable).order_by("pk")
            .select_for_update(skip_locked=True).values_list("pk", flat=True)[:size]
        )
        if not ids:
            return []
        stage.work_model.objects.filter(pk__in=ids).update(
            status=WorkStatus.CLAIMED, claim_token=token, claimed_by=worker,
            lease_expires_at=now + lease, claims=F("claims") + 1,
        )
    claimed = list(
        stage.work_model.objects.filter(claim_token=token).select_related(*stage.claim_related)
    )
    return [item for item in claimed if not _fail_if_poisoned(stage, item)]


def _fail_if_poisoned(stage: Stage, item: WorkItem) -> bool:
    if item.claims <= MAX_CLAIMS:
        return False
    stage.work_model.objects.filter(pk=item.pk, claim_token=item.claim_token).update(
        status=WorkStatus.FAILED, finished_at=timezone.now(),
        error=f"claimed {item.claims} times without finishing; its workers kept stopping",
    )
    return True


def write_outcome(stage: Stage, item: WorkItem, outcome: Any) -> bool:
    """Write the outcome only if we still hold the claim; True when written."""
    held = stage.work_model.objects.select_for_update().filter(
        pk=item.pk, claim_token=item.claim_token, status=WorkStatus.CLAIMED
    ).exists()
    if not held:
        log.warning("%s %s: claim lost before the result was written", stage.name, item.pk)
        return False
    fields = stage.record(item, outcome)
    if fields.get("status") in (WorkStatus.DONE, WorkStatus.FAILED):
        fields.setdefault("finished_at", timezone.now())
    # `claims` counts claims in a row that ended without a written result; a write resets it.
    fields.setdefault("claims", 0)
    stage.work_model.objects.filter(pk=item.pk).update(**fields, updated_at=timezone.now())
    return True


def write_outcomes(stage: Stage, finished: list[tuple[Any, Any]]) -> int:
    """Write the outcomes that arrived together in one transaction; returns how many."""
    with transaction.atomic():
        return sum(write_outcome(stage, item, outcome) for item, outcome in finished)


@dataclasses.dataclass
class DrainReport:
    stage: str
    planned: int = 0
    finished: int = 0
    lost: int = 0
    out_of_time: bool = False  # stopped claiming at its time budget; work may remain


class _LoopThread:
    """An event loop on its own thread for the model calls; the ORM stays on the caller's."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def submit(self, coroutine) -> futures.Future:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def close(self, providers: ProviderPool) -> None:
        self.submit(providers.aclose()).result(timeout=30)
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


def _drain_rows(
    stage: Stage, release: Release, calls: _LoopThread, providers: ProviderPool,
    concurrency: int, worker: str, on_finished: Callable[[], None] | None, report: DrainReport,
    deadline: float | None = None,
) -> None:
    in_flight: dict[futures.Future, Any] = {}
    ready: collections.deque = collections.deque()
    # Claim ahead, a quarter of the concurrency at a time: a slot that frees up starts its
    # next call at once, and a claim is one transaction per batch, not one per call.
    ahead = max(1, concurrency // 4)
    renew_every = settings.BAITBENCH_LEASE_SECONDS / 3
    renewed = time.monotonic()
    exhausted = False
    while True:
        if deadline is not None and time.monotonic() > deadline and not report.out_of_time:
            report.out_of_time = exhausted = True  # claim nothing more; finish what we hold
        if not exhausted and len(ready) < ahead:
            wanted = concurrency + ahead - len(in_flight) - len(ready)
            batch = claim_batch(stage, release, wanted, worker)
            exhausted = not batch
            ready.extend(batch)
        while ready and len(in_flight) < concurrency:
            item = ready.popleft()
            in_flight[calls.submit(stage.execute(stage.build(item), providers))] = item
        if not in_flight:
            return
        done, _ = futures.wait(in_flight, timeout=renew_every,
                               return_when=futures.FIRST_COMPLETED)
        # An unexpected exception is a bug: let it surface (the claims then expire).
        finished = [(in_flight.pop(future), future.result()) for future in done]
        written = write_outcomes(stage, finished)
        report.finished += written
        report.lost += len(finished) - written
        for _ in range(written if on_finished else 0):
            on_finished()
        if time.monotonic() - renewed >= renew_every:
            renew_leases(stage, {item.claim_token for item in [*in_flight.values(), *ready]})
            renewed = time.monotonic()
        # Rows may have been freed or planned meanwhile: look again next time round.
        exhausted = report.out_of_time


def drain(
    stage: Stage, release: Release, *, concurrency: int | None = None, worker: str | None = None,
    on_finished: Callable[[], None] | None = None, providers: ProviderPool | None = None,
    time_budget: float | None = None,
) -> DrainReport:
    """Plan, then drain the stage's pending rows of one release until none are left, or
    until `time_budget` seconds have passed (then the rows it holds are still finished)."""
    if Release.objects.filter(pk=release.pk, status=ReleaseStatus.PUBLISHED).exists():
        raise ImmutableError(f"release {release.code} is published: nothing under it runs")
    report = DrainReport(stage=stage.name, planned=stage.plan(release))
    concurrency = concurrency or settings.BAITBENCH_CONCURRENCY
    pool = providers or ProviderPool()
    calls = _LoopThread()
    try:
        deadline = time.monotonic() + time_budget if time_budget is not None else None
        _drain_rows(stage, release, calls, pool, concurrency, worker or worker_name(),
                    on_finished, report, deadline)
    finally:
        calls.close(pool)
    stage.settle(release)
    return report
