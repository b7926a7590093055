"""Draining a release (DESIGN section 5): the chain overlapped per text, the operator's scope
and controls, time budgets, and what the schedule does with lost or dead drains."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import timezone

from runs_app import drains, tasks
from runs_app.models import (
    Drain,
    DrainState,
    Generation,
    JurorVerdict,
    ReaderResponse,
    RefusalCheck,
    RunControl,
    WorkStatus,
)
from runs_app.providers.base import ProviderError
from runs_app.providers.pool import ProviderPool
from runs_app.services import run_pause, run_resume, run_set_budget, run_start
from runs_app.stages import base, get_stage
from runs_app.stages.base import DrainHooks, drain, drain_release
from runs_app.testing.fake_openrouter import FakeOpenRouter, completion_body
from runs_app.tests.releases import openrouter_release

# The text under review, as the refusal and juror prompts embed it.
EMBEDDED_TEXT = re.compile(r"<<<BEGIN TEXT>>>\n(.*?)\n<<<END TEXT>>>", re.DOTALL)


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    monkeypatch.setattr(drains, "async_task", lambda *args, **kwargs: calls.append(args))
    return calls


class RecordingPool(ProviderPool):
    """The fixture provider, with every call's purpose, the text it is about and its times
    written down."""

    def __init__(self, *, fail_refusal_of: str | None = None, slow: float = 0.0) -> None:
        super().__init__()
        self.calls: list[dict] = []
        self.lock = threading.Lock()
        self.fail_refusal_of, self.slow = fail_refusal_of, slow

    async def complete(self, request):
        import asyncio

        started = time.monotonic()
        found = EMBEDDED_TEXT.search("\n".join(m.content for m in request.messages))
        text = found.group(1).strip() if found else None
        if request.purpose == "refusal" and text == self.fail_refusal_of:
            raise ProviderError("refused by the test", permanent=True)
        if self.slow:
            await asyncio.sleep(self.slow)
        result = await super().complete(request)
        with self.lock:
            self.calls.append({"purpose": request.purpose, "text": text, "start": started,
                               "end": time.monotonic()})
        return result


@pytest.mark.django_db
def test_a_text_moves_on_to_the_jury_as_soon_as_its_own_refusal_check_is_done(
    small_demo_release
):
    release = small_demo_release
    run_start(release=release, stages=["generate", "refusal", "jury"], enqueue=False)
    pool = RecordingPool(slow=0.02)
    drain_release(release, ["generate", "refusal", "jury"], concurrency=4, providers=pool)

    # Two cells may have the same fixture text: a text's jury starts after its refusal check
    # ended, so at least after the first check of that wording did.
    refusal_end: dict[str, float] = {}
    for call in pool.calls:
        if call["purpose"] == "refusal":
            refusal_end[call["text"]] = min(call["end"], refusal_end.get(call["text"], 1e18))
    jury_starts = [(c["text"], c["start"]) for c in pool.calls if c["purpose"] == "juror"]
    assert jury_starts, "the jury ran"
    assert all(start >= refusal_end[text] for text, start in jury_starts)
    # Overlap: some text reached its jury while other texts were still being written.
    last_write = max(c["end"] for c in pool.calls if c["purpose"] == "write")
    assert min(start for _, start in jury_starts) < last_write
    assert JurorVerdict.objects.filter(release=release, status=WorkStatus.DONE).count() == \
        3 * RefusalCheck.objects.filter(verdict__in=["complied", "partial"]).count()


@pytest.mark.django_db
def test_a_text_whose_refusal_check_did_not_finish_never_reaches_the_jury(small_demo_release):
    release = small_demo_release
    drain(get_stage("generate"), release)
    blocked = Generation.objects.filter(release=release, model__openrouter_id="fixture/candid",
                                        condition="C0").first()
    run_start(release=release, stages=["refusal", "jury"], enqueue=False)
    pool = RecordingPool(fail_refusal_of=blocked.text.strip())
    drain_release(release, ["refusal", "jury"], concurrency=4, providers=pool)

    assert RefusalCheck.objects.get(generation=blocked).status == WorkStatus.FAILED
    assert not JurorVerdict.objects.filter(generation=blocked).exists()
    assert JurorVerdict.objects.filter(release=release).exclude(generation=blocked).exists()


@pytest.mark.django_db
def test_a_drain_out_of_time_finishes_what_it_holds_and_claims_nothing_more(
    imported_scenarios
):
    release = openrouter_release(tasks=["T1", "T2"], conditions=["C0", "C1", "C2", "C3"])
    with FakeOpenRouter(latency=0.4) as slow:
        pool = ProviderPool(default="openrouter", base_url=slow.base_url, api_key="k")
        report = drain(get_stage("generate"), release, concurrency=2, time_budget=0.5,
                       providers=pool)
        calls = slow.count()
    rows = Generation.objects.filter(release=release)
    assert report.out_of_time and 0 < report.finished < rows.count()
    assert calls == report.finished  # every call it made was written
    assert not rows.filter(status=WorkStatus.CLAIMED).exists()
    assert rows.filter(status=WorkStatus.PENDING).count() == rows.count() - report.finished


@pytest.mark.django_db
def test_a_task_out_of_time_hands_its_work_to_a_new_task(
    imported_scenarios, settings, enqueued, monkeypatch
):
    settings.BAITBENCH_DRAIN_SECONDS = 0.3
    settings.BAITBENCH_PROVIDER = "openrouter"
    settings.BAITBENCH_CONCURRENCY = 2
    release = openrouter_release(tasks=["T1", "T2"], conditions=["C0", "C1", "C2", "C3"])
    run_start(release=release, stages=["generate"], enqueue=False)
    ticket = Drain.objects.create(release=release)
    with FakeOpenRouter(latency=0.25) as slow:
        monkeypatch.setenv("OPENROUTER_BASE_URL", slow.base_url)
        monkeypatch.setenv("OPENROUTER_API_KEY", "k")
        result = tasks.drain_release_task(ticket.pk)
    ticket.refresh_from_db()
    assert ticket.state == DrainState.FINISHED and ticket.note == "out of time"
    assert result["finished"] == ticket.finished > 0
    follow_ups = Drain.objects.filter(release=release, state=DrainState.QUEUED)
    assert follow_ups.exists()
    assert Generation.objects.filter(release=release, status=WorkStatus.PENDING).exists()


@pytest.mark.django_db
def test_a_repeated_delivery_of_a_drain_task_does_nothing(small_demo_release):
    run_start(release=small_demo_release, stages=["generate"], enqueue=False)
    ticket = Drain.objects.create(release=small_demo_release)
    assert tasks.drain_release_task(ticket.pk)["finished"] == 16
    assert "already run" in tasks.drain_release_task(ticket.pk)["skipped"]


@pytest.mark.django_db
def test_the_schedule_leaves_a_release_with_a_live_drain_alone_and_replaces_a_dead_one(
    small_demo_release, enqueued
):
    release = small_demo_release
    run_start(release=release, stages=["generate"], enqueue=False)
    running = Drain.objects.create(release=release, state=DrainState.RUNNING,
                                   heartbeat_at=timezone.now())
    assert tasks.reenqueue_stalled() == 0 and enqueued == []

    Drain.objects.filter(pk=running.pk).update(
        heartbeat_at=timezone.now() - dt.timedelta(hours=1))
    assert tasks.reenqueue_stalled() >= 1
    running.refresh_from_db()
    assert running.state == DrainState.FINISHED and "lost" in running.note


@pytest.mark.django_db
def test_the_schedule_keeps_to_the_stage_an_operator_asked_for(small_demo_release, enqueued):
    release = small_demo_release
    run_start(release=release, stages=["generate"], enqueue=False)
    [ticket] = [Drain.objects.create(release=release)]
    tasks.drain_release_task(ticket.pk)
    assert Generation.objects.filter(release=release, status=WorkStatus.DONE).count() == 16

    assert tasks.reenqueue_stalled() == 0
    assert enqueued == []
    assert not RefusalCheck.objects.exists()  # nothing after generate was even planned
    release.refresh_from_db()
    assert release.status == "running"  # only part of the stage set ran


@pytest.mark.django_db
def test_the_whole_chain_in_one_task_settles_and_marks_the_release_scored(
    small_demo_release, enqueued
):
    release = small_demo_release
    run_start(release=release, enqueue=False)
    ticket = Drain.objects.create(release=release)
    tasks.drain_release_task(ticket.pk)
    release.refresh_from_db()
    assert release.status == "scored"
    assert release.text_scores.filter(honesty_index__isnull=False).exists()
    assert tasks.reenqueue_stalled() == 0


@pytest.mark.django_db
def test_a_paused_stage_claims_nothing_and_a_resumed_one_finishes_with_nothing_repeated(
    imported_scenarios
):
    release = openrouter_release(tasks=["T1", "T2"], conditions=["C0", "C1", "C2", "C3"])
    run_start(release=release, stages=["generate"], enqueue=False)
    cells = 2 * 1 * 2 * 4  # writers x scenarios x tasks x conditions
    with FakeOpenRouter(latency=0.05) as server:
        pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="k")
        pause_after = [5]

        def pause_once() -> None:
            pause_after[0] -= 1
            if pause_after[0] == 0:
                run_pause(release=release)

        first = drain_release(release, ["generate"], concurrency=2, providers=pool,
                              hooks=DrainHooks(on_finished=pause_once))
        assert first.stopped and 5 <= first.finished < cells
        assert not Generation.objects.filter(release=release, status="claimed").exists()

        run_resume(release=release)
        second = drain_release(release, ["generate"], concurrency=2,
                               providers=ProviderPool(default="openrouter",
                                                      base_url=server.base_url, api_key="k"))
        assert first.finished + second.finished == cells
        assert server.count() == cells  # nothing lost, nothing asked twice


@pytest.mark.django_db
def test_the_budget_cap_stops_claiming_within_one_batch_and_raising_it_resumes(
    imported_scenarios
):
    release = openrouter_release(tasks=["T1", "T2"], conditions=["C0", "C1", "C2", "C3"],
                                 writers=["acme/writer-a", "beta/writer-b"])
    run_start(release=release, stages=["generate"], enqueue=False)
    run_set_budget(release=release, budget_usd=0.05)
    concurrency, ahead = 2, 1  # ahead = concurrency // 4, at least 1

    def priced(payload):
        return completion_body("A text about the incident.", cost=0.01)

    with FakeOpenRouter(latency=0.05, responder=priced) as server:
        pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="k")
        report = drain_release(release, ["generate"], concurrency=concurrency, providers=pool)
        calls_at_cap = server.count()
        control = RunControl.objects.get(release=release)
        assert report.stopped == "budget" and control.over_budget
        assert control.spent_usd == pytest.approx(calls_at_cap * 0.01)
        # Calls past the cap: only what was claimed before the spend reached it.
        assert 5 <= calls_at_cap <= 5 + concurrency + ahead
        assert drains.drains_enqueue(release) == 0  # nothing is queued over budget

        run_set_budget(release=release, budget_usd=10)
        drain_release(release, ["generate"], concurrency=concurrency,
                      providers=ProviderPool(default="openrouter", base_url=server.base_url,
                                             api_key="k"))
        total = Generation.objects.filter(release=release).count()
        assert Generation.objects.filter(release=release, status="done").count() == total
        assert server.count() == total


@pytest.mark.django_db
def test_every_call_is_counted_in_its_rows_cost_and_in_the_spend_retries_included(
    imported_scenarios
):
    release = openrouter_release()
    run_start(release=release, stages=["generate", "refusal", "panel"], enqueue=False)

    def priced(payload):  # no reader reply validates, so each is asked again, and paid
        return completion_body("Not JSON at all.", cost=0.001)

    with FakeOpenRouter(responder=priced) as server:
        pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="k")
        drain_release(release, ["generate", "refusal", "panel"], concurrency=8, providers=pool)
        calls = server.count()
    rows = {model.__name__: list(model.objects.filter(release=release)
                                 .values_list("cost_usd", "prompt_tokens"))
            for model in (Generation, RefusalCheck, ReaderResponse)}
    assert all(cost and tokens for found in rows.values() for cost, tokens in found)
    total = sum(cost for found in rows.values() for cost, _ in found)
    assert calls > sum(len(found) for found in rows.values())  # retries were made
    assert total == pytest.approx(calls * 0.001)
    assert RunControl.objects.get(release=release).spent_usd == pytest.approx(calls * 0.001)



@pytest.mark.django_db
def test_writing_results_locks_the_work_rows_alone(small_demo_release):
    """A lock that joins the release (a work table's default ordering does) makes every
    worker's write queue on, and deadlock over, the one release row."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        report = drain(get_stage("generate"), small_demo_release, concurrency=2)
    assert report.finished > 0
    # The query that checks the claims before a write: the rows' ids and claim tokens.
    checks = [query["sql"] for query in queries if query["sql"].startswith("SELECT")
              and re.search(r'"claim_token"( AS "claim_token")? FROM "runs_app_generation"',
                            query["sql"])]
    assert checks and not [sql for sql in checks if "JOIN" in sql], checks[:1]


@pytest.mark.django_db
def test_a_silent_drains_rows_go_to_the_idle_workers_within_a_minute(
    small_demo_release, enqueued
):
    """A worker lost with its rows claimed for a twenty-minute lease: after a minute without
    its heartbeat the schedule releases them and queues a drain, which finishes them."""
    release = small_demo_release
    run_start(release=release, stages=["generate"], enqueue=False)
    get_stage("generate").plan(release)
    lease_end = timezone.now() + dt.timedelta(minutes=20)
    Generation.objects.filter(release=release).update(
        status=WorkStatus.CLAIMED, claim_token="dead", claimed_by="gone:1",
        lease_expires_at=lease_end)
    dead = Drain.objects.create(release=release, state=DrainState.RUNNING, worker="gone:1",
                                heartbeat_at=timezone.now() - dt.timedelta(seconds=70))

    assert tasks.reenqueue_stalled() == 1
    dead.refresh_from_db()
    assert dead.state == DrainState.FINISHED and "no heartbeat" in dead.note
    [ticket] = Drain.objects.filter(state=DrainState.QUEUED)
    tasks.drain_release_task(ticket.pk)
    assert set(Generation.objects.filter(release=release).values_list("status", flat=True)) \
        == {WorkStatus.DONE}


@pytest.mark.django_db
def test_a_drain_the_queue_lost_is_queued_again_within_a_minute(small_demo_release, enqueued):
    release = small_demo_release
    run_start(release=release, stages=["generate"], enqueue=False)
    lost = Drain.objects.create(release=release)  # its task never reached a worker
    Drain.objects.filter(pk=lost.pk).update(created_at=timezone.now() - dt.timedelta(seconds=70))

    assert tasks.reenqueue_stalled() == 1
    lost.refresh_from_db()
    assert lost.state == DrainState.FINISHED and "lost in the queue" in lost.note
    # A late delivery of the lost task finds its ticket no longer queued and stops.
    assert "skipped" in tasks.drain_release_task(lost.pk)
    assert not Generation.objects.filter(release=release, status=WorkStatus.DONE).exists()


@pytest.mark.django_db
def test_a_live_drain_beats_far_more_often_than_it_renews_its_leases(small_demo_release):
    release = small_demo_release
    run_start(release=release, stages=["generate"], enqueue=False)
    beats: list[float] = []
    with override_settings(BAITBENCH_DRAIN_HEARTBEAT_SECONDS=0.05):
        drain_release(release, ["generate"], concurrency=2, providers=RecordingPool(slow=0.1),
                      hooks=DrainHooks(heartbeat=lambda: beats.append(time.monotonic())))
    assert len(beats) >= 3  # a lease of 20 minutes would renew (and beat) not once here


# ---------------------------------------------------------------------------------------
# A run's drains start together, and share the last rows (bench/scaleout.py)
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
@override_settings(BAITBENCH_CONCURRENCY=4, BAITBENCH_DRAINS_PER_RELEASE=8)
def test_a_start_queues_drains_for_the_rows_its_first_drain_will_plan(
    small_demo_release, enqueued, django_capture_on_commit_callbacks
):
    cells = small_demo_release.parsed_config().texts
    with django_capture_on_commit_callbacks(execute=True):
        run_start(release=small_demo_release, stages=["generate"])

    # Nothing is planned yet (the drains plan), but one drain per 4 of the cells to come is
    # queued at once, not one drain that asks for the others once it has planned.
    assert not Generation.objects.filter(release=small_demo_release).exists()
    tickets = Drain.objects.filter(release=small_demo_release, state=DrainState.QUEUED)
    assert tickets.count() == len(enqueued) == min(8, -(-cells // 4)) > 1
    assert {ticket for _, ticket in enqueued} == set(tickets.values_list("pk", flat=True))
    # A stage that reads a stage of the same run has nothing to plan yet: it adds none.
    assert drains.unplanned_calls(small_demo_release, ["generate", "refusal"]) == cells


@pytest.mark.django_db
def test_a_planned_start_has_every_row_before_its_drains_are_queued(
    small_demo_release, monkeypatch, django_capture_on_commit_callbacks
):
    rows_when_queued: list[int] = []
    monkeypatch.setattr(drains, "async_task", lambda *args, **kwargs: rows_when_queued.append(
        Generation.objects.filter(release=small_demo_release).count()))
    with django_capture_on_commit_callbacks(execute=True):
        run_start(release=small_demo_release, stages=["generate"], plan=True)

    cells = small_demo_release.parsed_config().texts
    assert rows_when_queued and set(rows_when_queued) == {cells}
    # Planning again finds every cell there: nothing new, nothing inserted twice.
    assert get_stage("generate").plan(small_demo_release) == 0
    assert Generation.objects.filter(release=small_demo_release).count() == cells


def first_claim(release, *, running: int, pending: int, concurrency: int) -> tuple[int, int]:
    """A queued drain's first claim from `pending` generation rows while `running` drain
    tasks of the release run (its own included): the batch size it asked for, and how many
    rows it then held."""
    Drain.objects.filter(release=release).delete()
    now = timezone.now()
    for number in range(running):
        Drain.objects.create(release=release, state=DrainState.RUNNING, worker=f"w:{number}",
                             started_at=now, heartbeat_at=now)
    rows = Generation.objects.filter(release=release)
    keep = list(rows.order_by("pk").values_list("pk", flat=True)[:pending])
    rows.exclude(pk__in=keep).update(status=WorkStatus.DONE)
    rows.filter(pk__in=keep).update(status=WorkStatus.PENDING, claim_token="", claimed_by="",
                                    claims=0)
    sizes: list[int] = []
    original = base.claim_batch

    def recording(stage, subject, size, worker):
        sizes.append(size)
        return original(stage, subject, size, worker)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "claim_batch", recording)
        gate = base.RunGate(release, ["generate"], controlled=True)
        worker = base._Drain(release, [base._Lane(get_stage("generate"))], gate,
                             ProviderPool(), concurrency, "w:0", DrainHooks(),
                             base.DrainReport(stage="generate"), None, 0.0)
        try:
            worker._claim(force=True)
        finally:
            worker.calls.close(worker.providers)
    [size] = sizes
    return size, len(worker.ready)


@pytest.mark.django_db
def test_drains_sharing_the_last_rows_claim_only_what_they_can_start_now(imported_scenarios):
    release = openrouter_release(tasks=["T1", "T2"], conditions=["C0", "C1", "C2", "C3"],
                                 writers=["acme/writer-a", "beta/writer-b"])
    run_start(release=release, stages=["generate"], enqueue=False, plan=True)
    assert Generation.objects.filter(release=release).count() >= 12
    # Concurrency 3 claims 1 ahead (half of it). Alone, a drain claims ahead to the end:
    # its own rows wait for nobody else.
    assert first_claim(release, running=1, pending=5, concurrency=3) == (4, 4)
    # With two drains and rows for two rounds each (12 = 2 x 3 x 2), still ahead.
    assert first_claim(release, running=2, pending=12, concurrency=3) == (4, 4)
    # Fewer: a row claimed ahead would wait a whole call for this drain's slot while the
    # other drain has one free, so it claims only what it starts now.
    assert first_claim(release, running=2, pending=5, concurrency=3) == (3, 3)


@pytest.mark.django_db
def test_planning_a_planned_scope_again_inserts_nothing_and_counts_only_new_rows(
    small_demo_release
):
    """Every drain plans its whole scope again before it stops: rows already there are
    left out before the INSERT, and a missing row is still planned and counted."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    stage = get_stage("refusal")
    get_stage("generate").plan(small_demo_release)
    Generation.objects.filter(release=small_demo_release).update(
        status=WorkStatus.DONE, text="A text.")
    planned = stage.plan(small_demo_release)
    assert planned > 1
    with CaptureQueriesContext(connection) as queries:
        assert stage.plan(small_demo_release) == 0
    assert not [query for query in queries if query["sql"].startswith("INSERT")]
    RefusalCheck.objects.filter(pk=RefusalCheck.objects.order_by("pk").first().pk).delete()
    assert stage.plan(small_demo_release) == 1
    assert RefusalCheck.objects.filter(release=small_demo_release).count() == planned


@pytest.mark.django_db
def test_a_claim_reads_its_rows_in_the_select_that_locks_them(small_demo_release):
    """A claim is one SELECT and one UPDATE of the work table, and the rows it hands back
    are what the database holds after it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    stage = get_stage("refusal")
    get_stage("generate").plan(small_demo_release)
    Generation.objects.filter(release=small_demo_release).update(
        status=WorkStatus.DONE, text="A text.")
    stage.plan(small_demo_release)
    with CaptureQueriesContext(connection) as queries:
        claimed = base.claim_batch(stage, small_demo_release, 3, "worker-a")
    work = [query["sql"] for query in queries if '"runs_app_refusalcheck"' in query["sql"]]
    assert [sql.split()[0] for sql in work] == ["SELECT", "UPDATE"], work
    assert len(claimed) == 3
    for item in claimed:
        stored = RefusalCheck.objects.get(pk=item.pk)
        assert (item.status, item.claim_token, item.claimed_by, item.claims,
                item.lease_expires_at) == (stored.status, stored.claim_token,
                                           stored.claimed_by, stored.claims,
                                           stored.lease_expires_at)
        assert (stored.status, stored.claims) == (WorkStatus.CLAIMED, 1)
        assert item.generation.text == "A text."  # `claim_related`, read with the claim


PRELOADED = (
    "import os, sys\n"
    "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'baitbench_site.settings')\n"
    "import django\n"
    "django.setup()\n"
    "from runs_app.providers.openrouter import tls_context\n"
    "from runs_app.tasks import preload_for_drains\n"
    "def loaded():\n"
    "    return ('runs_app.stages.generate' in sys.modules,\n"
    "            'anyio._backends._asyncio' in sys.modules, tls_context.cache_info().currsize)\n"
    "print(loaded())\n"
    "preload_for_drains()\n"
    "print(loaded())\n"
)


def test_preloading_loads_what_a_first_drain_would_wait_for():
    # A fresh process, as a cluster's parent is before it forks its workers.
    root = Path(__file__).resolve().parents[2]
    env = os.environ | {"BAITBENCH_DEV": "1", "DATABASE_URL": "sqlite:///:memory:"}
    done = subprocess.run([sys.executable, "-c", PRELOADED], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split("\n")[:2] == ["(False, False, 0)", "(True, True, 1)"]


def test_a_cluster_preloads_before_it_forks_its_workers(monkeypatch):
    from runs_app.management.commands import qcluster

    events: list[str] = []

    class Cluster:
        def start(self) -> None:
            events.append("start")

        def stop(self) -> None:
            events.append("stop")

    monkeypatch.setattr(qcluster, "Cluster", Cluster)
    monkeypatch.setattr(qcluster, "preload_for_drains", lambda: events.append("preload"))
    monkeypatch.setattr(qcluster.signal, "signal", lambda *args: None)  # pytest keeps its own
    qcluster.Command().handle(run_once=True)
    assert events == ["preload", "start", "stop"]
