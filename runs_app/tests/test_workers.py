"""Real worker processes against a real database file or server (DESIGN section 5).

These start `qcluster` and `run_release` as separate processes, so they use a database of
their own (a SQLite file, or a scratch PostgreSQL database when the suite runs on
PostgreSQL; each a copy of one migrated once a session, tests/scratch.py) and a fake
OpenRouter server with latency, slow enough to kill mid-run.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.testing.replies import valid_reply
from runs_app.tests.releases import RELEASE, kill, repeated_calls, start
from tests.scratch import Database, Shell, manage

pytestmark = pytest.mark.slow

ROOT = Path(settings.BASE_DIR)
CELLS = 2 * 2 * 3 * 4  # writers x scenarios x tasks x conditions
CONCURRENCY = 4
# What SIGKILL to a cluster of two workers can cost: each drain's calls in flight, and the
# replies it had just collected and was writing in that moment (a drain starts its next
# calls before it writes the last ones, so both can be CONCURRENCY at once). A drain that
# lost finished replies in bulk would show many more.
LOST_AT_A_KILL = 2 * (CONCURRENCY + CONCURRENCY)
# The lease of a cluster that is going to be killed, short so that the test need not wait
# long for its claims to expire, and long enough that a live drain on a loaded machine
# renews its claims (every third of a lease) before they run out under it.
SHORT_LEASE = 5
# A cluster that is going to be killed takes short leases and beats twice a second; the
# schedule run after the kill counts its drains dead after six silent beats (`DRAIN_DEAD_AFTER`)
# and a drain ticket queued before the kill as lost (the dead cluster had fetched its task:
# `runs_app.selectors.QUEUED_STALE`). By default each takes a minute, which a test need not
# wait out: what it tests is what the restart calls again, not how long the schedule waits.
HEARTBEAT = 0.5
DEAD_AFTER = 6 * HEARTBEAT
DOOMED = {"BAITBENCH_LEASE_SECONDS": str(SHORT_LEASE),
          "BAITBENCH_DRAIN_HEARTBEAT_SECONDS": str(HEARTBEAT)}
AFTER_THE_KILL = DOOMED | {"BAITBENCH_QUEUED_STALE_SECONDS": str(DEAD_AFTER)}
# The cluster started again beats as often: it starts before the schedule's check runs, and
# that check must not take a live drain of it, silent for six beats of its own, for dead.
RESTARTED = {"BAITBENCH_DRAIN_HEARTBEAT_SECONDS": str(HEARTBEAT)}


@pytest.fixture
def latency() -> float:
    """Seconds the fake provider takes per call. A tenth: a drain of CONCURRENCY calls always
    has some in flight, so a kill lands mid-call, and a run of a few hundred calls still
    lasts seconds. A test that stops a run of one small stage (kill.0: CELLS calls, about a
    second at this pace) after a few of its rows takes 0.3 s, so that the run is surely not
    over by then (`@pytest.mark.parametrize("latency", [0.3])`)."""
    return 0.1


@pytest.fixture
def world(tmp_path, scenarios_scratch, latency):
    """A copy of the session's migrated database with the scenarios imported, five releases'
    files and a fake OpenRouter server answering after `latency` seconds."""
    database = Database(tmp_path, template=scenarios_scratch)
    releases = tmp_path / "releases"
    releases.mkdir()
    for code in ("kill.0", "pair.0", "redis.0", "chain.0", "scope.0"):
        # The pair's run is longer, so both processes are surely under way at once; the
        # chain's is the whole chain, so fewer texts (its panel reads every scenario's
        # baselines too).
        variants = 3 if code == "pair.0" else 1
        tasks, conditions = (("[T1]", "[C0, C2]") if code == "chain.0"
                             else ("[T1, T2, T3]", "[C0, C1, C2, C3]"))
        (releases / f"{code}.yaml").write_text(RELEASE.format(
            code=code, variants=variants, tasks=tasks, conditions=conditions))
    with FakeOpenRouter(latency=latency, responder=valid_reply) as server:
        env = os.environ | {
            "DATABASE_URL": database.url, "BAITBENCH_PROVIDER": "openrouter",
            "OPENROUTER_BASE_URL": server.base_url, "OPENROUTER_API_KEY": "test-key",
            # Long enough that a live worker on a loaded machine renews its leases in time.
            "BAITBENCH_RELEASES_DIR": str(releases), "BAITBENCH_LEASE_SECONDS": "30",
            "BAITBENCH_Q_WORKERS": "2", "BAITBENCH_CONCURRENCY": str(CONCURRENCY),
        }
        env.pop("REDIS_URL", None)
        yield database, server, env
    database.drop()


def wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the workers")
        time.sleep(0.2)


def done_count(database: Database, code: str, table: str = "runs_app_generation") -> int:
    return database.rows(
        f"SELECT COUNT(*) FROM {table} g JOIN runs_app_release r "
        f"ON g.release_id = r.id WHERE r.code = '{code}' AND g.status = 'done'"
    )[0][0]


def release_status(database: Database, code: str) -> str:
    return database.rows(f"SELECT status FROM runs_app_release WHERE code = '{code}'")[0][0]


def restart_after_the_kill(env: dict, killed_at: float) -> subprocess.Popen:
    """The cluster started again at once, and what the schedule does every few minutes (drain
    again what was left behind) run once the killed cluster's drains count as dead and its
    queued tickets as lost (`AFTER_THE_KILL`). Both processes start while that time passes;
    the dead worker's leases (SHORT_LEASE) run out in it too, as its rows are handed back."""
    cluster = start("qcluster", env=env | RESTARTED)
    try:
        with Shell(env | AFTER_THE_KILL) as shell:
            shell.ask("answer = None")  # started: Django is loaded
            time.sleep(max(0.0, killed_at + DEAD_AFTER + 0.5 - time.monotonic()))
            shell.ask("from runs_app.tasks import reenqueue_stalled; "
                      "answer = reenqueue_stalled()")
    except BaseException:
        kill(cluster)
        raise
    return cluster


@pytest.mark.parametrize("latency", [0.3])
def test_a_killed_qcluster_restarted_finishes_with_no_duplicate_and_none_missing(world):
    database, server, env = world
    cluster = start("qcluster", env=env | DOOMED)  # starts while the run is queued
    try:
        manage("run_release", "kill.0", "--stage", "generate", env=env)
        wait_for(lambda: done_count(database, "kill.0") >= 10)
    finally:
        kill(cluster)
    killed_at = time.monotonic()
    calls_before_restart = server.count()
    assert done_count(database, "kill.0") < CELLS, "the run finished before the kill"

    cluster = restart_after_the_kill(env, killed_at)
    try:
        wait_for(lambda: done_count(database, "kill.0") == CELLS)
    finally:
        kill(cluster)

    rows = database.rows("SELECT status, text FROM runs_app_generation")
    assert len(rows) == CELLS and all(status == "done" and text for status, text in rows)
    calls = collections.Counter(
        (request.body["model"], str(request.body["messages"])) for request in server.requests
    )
    assert len(calls) == CELLS
    # Only calls in flight at the moment of the kill may have been made twice; nothing that
    # had been written was called again.
    repeated = sum(1 for count in calls.values() if count > 1)
    assert repeated <= LOST_AT_A_KILL
    assert calls_before_restart < server.count()


def test_two_workers_share_one_stage_and_never_call_the_same_cell_twice(world):
    database, server, env = world
    one_each = env | {"BAITBENCH_Q_WORKERS": "1"}
    clusters = [start("qcluster", env=one_each) for _ in range(2)]
    try:
        manage("run_release", "pair.0", "--stage", "generate", env=env)
        wait_for(lambda: done_count(database, "pair.0") == 3 * CELLS)
    finally:
        for cluster in clusters:
            kill(cluster)
    seen = collections.Counter(
        (request.body["model"], str(request.body["messages"]), request.body["seed"])
        for request in server.requests
    )
    assert len(seen) == 3 * CELLS
    assert max(seen.values()) == 1
    workers = database.rows("SELECT claimed_by, COUNT(*) FROM runs_app_generation "
                            "GROUP BY claimed_by")
    assert len(workers) == 2, "both workers should have taken part"
    assert all(count >= CELLS // 4 for _, count in workers), workers


def test_a_worker_killed_mid_pipeline_loses_and_repeats_only_its_calls_in_flight(world):
    database, server, env = world
    cluster = start("qcluster", env=env | DOOMED)  # starts while the run is queued
    try:
        manage("run_release", "chain.0", env=env)
        # Killed while the chain is well under way: some texts already past their jury.
        wait_for(lambda: done_count(database, "chain.0", "runs_app_jurorverdict") >= 6)
    finally:
        kill(cluster)
    killed_at = time.monotonic()
    assert release_status(database, "chain.0") == "running"
    cluster = restart_after_the_kill(env, killed_at)
    try:
        wait_for(lambda: release_status(database, "chain.0") == "scored", timeout=240)
    finally:
        kill(cluster)
    # Every unit of every stage once; a repeated call only for a unit that was in flight.
    assert repeated_calls(server) <= LOST_AT_A_KILL
    for table in ("runs_app_generation", "runs_app_refusalcheck", "runs_app_jurorverdict",
                  "runs_app_readerresponse", "runs_app_agentrun"):
        statuses = database.rows(f"SELECT DISTINCT status FROM {table}")
        assert statuses == [("done",)], (table, statuses)


def test_the_real_schedule_resumes_only_the_stage_an_operator_asked_for(world):
    database, server, env = world
    cluster = start("qcluster", env=env)
    try:
        manage("run_release", "scope.0", "--stage", "generate", env=env)
        wait_for(lambda: done_count(database, "scope.0") == CELLS)
        # The schedule is due now; run django-q2's scheduler, as the cluster does every 30 s,
        # and the cluster then runs the stalled-work check it enqueues.
        manage("shell", "-c", "from django_q.models import Schedule; from django.utils import "
               "timezone; from django_q.scheduler import scheduler; from django_q.brokers "
               "import get_broker; Schedule.objects.update(next_run=timezone.now()); "
               "scheduler(broker=get_broker())", env=env)
        wait_for(lambda: database.rows(
            "SELECT COUNT(*) FROM django_q_task WHERE func = "
            "'runs_app.tasks.reenqueue_stalled'")[0][0] >= 1, timeout=90)
        time.sleep(2)
    finally:
        kill(cluster)
    assert server.count() == CELLS  # generation only: nothing after it was paid for
    assert database.rows("SELECT COUNT(*) FROM runs_app_refusalcheck")[0][0] == 0


def test_the_queue_also_runs_on_redis(world, redis_url):
    database, server, env = world
    env = env | {"REDIS_URL": redis_url,
                 "BAITBENCH_Q_NAME": f"bb-test-{uuid.uuid4().hex[:8]}"}
    cluster = start("qcluster", env=env)  # starts while the run is queued
    try:
        manage("run_release", "redis.0", "--stage", "generate", env=env)
        wait_for(lambda: done_count(database, "redis.0") == CELLS)
    finally:
        kill(cluster)
    assert server.count() == CELLS


T4_RELEASE = """
code: {code}
language: nl
models:
  - {{id: acme/writer-a, family: acme, name: Writer A}}
  - {{id: beta/writer-b, family: beta, name: Writer B}}
  - {{id: gamma/judge, family: gamma, name: Judge G}}
  - {{id: delta/judge, family: delta, name: Judge D}}
  - {{id: epsilon/judge, family: epsilon, name: Judge E}}
writers: [acme/writer-a, beta/writer-b]
jurors: [gamma/judge, delta/judge, epsilon/judge]
reader: gamma/judge
journalist: gamma/judge
scenarios: [waterschap-dijkverzakking, holtmare-risicoscan-bijstand]
tasks: [T4]
conditions: [C0, C1, C2, C3]
stages: [generate, refusal, crossexam]
"""
T4_TEXTS = 2 * 2 * 4
FOLLOW_UPS = 5


def _role(body: dict) -> str:
    """Which call of the cross-examination a request to the fake server is."""
    prompt = "\n".join(str(message.get("content", "")) for message in body["messages"])
    if "response_format" not in body:
        return "write" if len(body["messages"]) > 1 else "generate"
    if '"answers"' in prompt:
        return "labels"
    return "question" if '"question"' in prompt else "refusal"


def test_a_cluster_killed_mid_interview_resumes_at_the_next_turn(world):
    """SIGKILL after some interviews reached turn three: the restarted cluster asks each turn
    that was not written exactly once more, and no written turn again."""
    database, server, env = world
    (Path(env["BAITBENCH_RELEASES_DIR"]) / "t4kill.0.yaml").write_text(
        T4_RELEASE.format(code="t4kill.0"))
    turns = "runs_app_crossexamturn"
    # One drain per worker; the cluster starts while the run is queued.
    cluster = start("qcluster", env=env | DOOMED | {"BAITBENCH_DRAINS_PER_RELEASE": "2"})
    try:
        manage("run_release", "t4kill.0", env=env)
        wait_for(lambda: database.rows(
            f"SELECT COUNT(*) FROM {turns} WHERE number = 3 AND status = 'done'")[0][0] >= 4)
    finally:
        kill(cluster)
    killed_at = time.monotonic()
    written = {row for row in database.rows(
        f"SELECT generation_id, number, answer FROM {turns} WHERE status = 'done'")}
    follow_ups_written = sum(1 for _, number, _ in written if number < 7)
    labels_written = sum(1 for _, number, _ in written if number == 7)
    # Turns whose question was written before the kill, their answer not: only the answer
    # is asked after the restart (each call is a claim of its own).
    [(questions_kept,)] = database.rows(
        f"SELECT COUNT(*) FROM {turns} WHERE number < 7 AND status <> 'done' "
        f"AND question <> ''")
    assert labels_written < T4_TEXTS, "every interview finished before the kill"
    before = server.count()

    cluster = restart_after_the_kill(env, killed_at)
    try:
        wait_for(lambda: release_status(database, "t4kill.0") == "scored", timeout=240)
    finally:
        kill(cluster)

    after = collections.Counter(_role(request.body) for request in server.requests[before:])
    # Each turn not written at the kill is asked once after the restart, a turn written
    # before it never again: the kill cost at most the turns that were in flight.
    assert after["write"] == T4_TEXTS * FOLLOW_UPS - follow_ups_written
    assert after["question"] == after["write"] - questions_kept
    assert after["labels"] == T4_TEXTS - labels_written
    answers_before = {answer for _, _, answer in written}
    assert not any(valid_reply(request.body) in answers_before
                   for request in server.requests[before:] if _role(request.body) == "write")
    assert repeated_calls(server) <= 2 * 2 * CONCURRENCY  # two workers; a turn is two calls
    # Six answers per transcript: the T4 text and five follow-ups, then six labels.
    rows = database.rows(f"SELECT generation_id, number, status, labels FROM {turns}")
    by_text = collections.defaultdict(dict)
    for generation_id, number, status, labels in rows:
        by_text[generation_id][number] = (status, labels)
    assert len(by_text) == T4_TEXTS
    for steps in by_text.values():
        assert sorted(steps) == [2, 3, 4, 5, 6, 7]
        assert {status for status, _ in steps.values()} == {"done"}
        labels = steps[7][1]
        assert len(json.loads(labels) if isinstance(labels, str) else labels) == 6
    print(f"\nkill test: {follow_ups_written} follow-up turns and {labels_written} labels "
          f"written before the kill ({questions_kept} more questions); after the restart "
          f"{after['question']} questions, "
          f"{after['write']} answers and {after['labels']} labels; "
          f"{repeated_calls(server)} calls repeated in all")


FAULTS_RELEASE = """
code: faults.0
language: en
models:
  - {id: acme/writer-a, family: acme, name: Writer A}
  - {id: beta/writer-b, family: beta, name: Writer B}
  - {id: gamma/judge, family: gamma, name: Judge G}
  - {id: delta/judge, family: delta, name: Judge D}
  - {id: epsilon/judge, family: epsilon, name: Judge E}
writers: [acme/writer-a, beta/writer-b]
jurors: [gamma/judge, delta/judge, epsilon/judge]
reader: gamma/judge
journalist: gamma/judge
scenarios: [greenvale-listeria, cobaltcloud-breach]
tasks: [T1, T2, T3]
conditions: [C0, C1, C2, C3]
variants: 2
stages: [generate, refusal]
"""


class ConnectionKiller(threading.Thread):
    """Terminates every connection to the workers' database, `times` times, `every` seconds
    apart: what a database restart does to the workers, at whatever they were doing."""

    def __init__(self, database: Database, *, times: int, every: float) -> None:
        super().__init__(daemon=True)
        self.database, self.times, self.every = database, times, every
        self.terminated = 0

    def run(self) -> None:
        for _ in range(self.times):
            time.sleep(self.every)
            self.terminated += len(self.database.rows(
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                f"'{self.database.name}' AND pid <> pg_backend_pid()"))


@pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                    reason="row locks and dropped connections are PostgreSQL's (make test-pg)")
def test_three_workers_with_dropped_connections_record_every_call_they_paid_for(
        tmp_path, scenarios_scratch):
    """Three drains of one release on PostgreSQL, their connections terminated again and
    again mid-run: every call the provider answered (and charged for) is recorded once, no
    cell is called twice, and the workers finish by themselves."""
    database = Database(tmp_path, template=scenarios_scratch)
    releases = tmp_path / "releases"
    releases.mkdir()
    (releases / "faults.0.yaml").write_text(FAULTS_RELEASE)
    try:
        with FakeOpenRouter(latency=0.8, responder=valid_reply) as server:
            env = os.environ | {
                "DATABASE_URL": database.url, "BAITBENCH_PROVIDER": "openrouter",
                "OPENROUTER_BASE_URL": server.base_url, "OPENROUTER_API_KEY": "test-key",
                "BAITBENCH_RELEASES_DIR": str(releases), "BAITBENCH_LEASE_SECONDS": "30",
                "BAITBENCH_CONCURRENCY": str(CONCURRENCY),
            }
            manage("run_release", "faults.0", env=env)  # queued for nobody: starts the run
            workers = [subprocess.Popen(
                [sys.executable, "manage.py", "run_release", "faults.0", "--sync"], cwd=ROOT,
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                start_new_session=True) for _ in range(3)]
            try:
                wait_for(lambda: done_count(database, "faults.0") >= 8)
                killer = ConnectionKiller(database, times=5, every=1.5)
                killer.start()
                killer.join()
                results = [worker.communicate(timeout=240) for worker in workers]
            finally:
                for worker in workers:
                    if worker.poll() is None:
                        kill(worker)
            paid = {f"gen-{number:06d}" for number in range(1, server.count() + 1)}
            requests = server.requests
    finally:
        rows = database.rows
        generations = rows("SELECT status, provider_generation_id, cost_usd "
                           "FROM runs_app_generation")
        attempts = rows("SELECT provider_generation_id FROM runs_app_generationattempt")
        refusals = rows("SELECT status, cost_usd FROM runs_app_refusalcheck")
        database.drop()
    assert killer.terminated >= 3, "the faults never reached the workers"
    assert [worker.returncode for worker in workers] == [0, 0, 0], [
        stderr[-2000:] for _, stderr in results]
    cells = 2 * CELLS
    assert len(generations) == cells and {status for status, _, _ in generations} == {"done"}
    assert len(refusals) == cells and {status for status, _ in refusals} == {"done"}
    # Paid = recorded: every answer the provider sent is an attempt row of its text, once.
    writes = [request for request in requests if "response_format" not in request.body]
    recorded = [generation_id for (generation_id,) in attempts]
    assert len(recorded) == len(set(recorded)) == len(writes) == cells
    assert {generation_id for _, generation_id, _ in generations} <= paid
    # ... and its cost is in the rows: the fake server charges 0.0001 per answer.
    spent = sum(cost for _, _, cost in generations) + sum(cost for _, cost in refusals)
    assert spent == pytest.approx(0.0001 * len(requests))
    assert len(requests) == 2 * cells and repeated_calls(server) == 0


def test_the_run_page_reads_a_live_clusters_heartbeat_and_misses_a_killed_one(world, redis_url):
    """`workers_alive`, from another process than the cluster's: what the run page shows."""
    database, server, env = world
    env = env | {"REDIS_URL": redis_url, "BAITBENCH_Q_NAME": f"bb-test-{uuid.uuid4().hex[:8]}"}

    with Shell(env) as shell:
        def clusters_alive() -> int:
            visible, clusters = shell.ask(
                "from runs_app.selectors import workers_alive; seen = workers_alive(); "
                "answer = [seen.visible, seen.clusters]")
            assert visible is True
            return clusters

        assert clusters_alive() == 0
        cluster = start("qcluster", env=env)
        try:
            wait_for(lambda: clusters_alive() == 1, timeout=90)
        finally:
            kill(cluster)
        wait_for(lambda: clusters_alive() == 0, timeout=60)


@pytest.mark.parametrize("latency", [0.3])
def test_sigterm_to_the_group_stops_qcluster_in_seconds_and_hands_its_claims_back(world, tmp_path):
    """What systemd sends: SIGTERM to every process of the unit. django-q2's own handler hung
    the parent for over a minute; the project's `qcluster` ends its processes and releases
    the rows its workers held, so another worker takes them at once, not after the lease."""
    database, server, env = world
    log = tmp_path / "qcluster.log"
    with log.open("w") as output:
        # A lease far longer than the test: a row is free again only if it was handed back.
        # The cluster starts while the run is queued.
        cluster = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=ROOT,
                                   env=env | {"BAITBENCH_LEASE_SECONDS": "3600"},
                                   stdout=output, stderr=output, start_new_session=True)
    try:
        manage("run_release", "kill.0", "--stage", "generate", env=env)
        wait_for(lambda: done_count(database, "kill.0") >= 6)
        os.killpg(cluster.pid, signal.SIGTERM)
        started = time.monotonic()
        cluster.wait(timeout=15)
        stopped_in = time.monotonic() - started
    finally:
        if cluster.poll() is None:
            kill(cluster)
    assert stopped_in < 8, f"qcluster took {stopped_in:.1f} s to stop"
    assert cluster.returncode == 0, log.read_text()[-2000:]
    # Nothing of the group is left (a zombie awaiting its reaper has ended).
    left = subprocess.run(["ps", "-o", "stat=", "-g", str(cluster.pid)], capture_output=True,
                          text=True).stdout.split()
    assert all(state.startswith("Z") for state in left), left
    handed_back = int(log.read_text().rsplit("ended, ", 1)[1].split()[0])
    assert handed_back >= 1, log.read_text()[-2000:]
    assert done_count(database, "kill.0") < CELLS, "the run finished before the SIGTERM"
    leases = [lease for (lease,) in database.rows(
        "SELECT lease_expires_at FROM runs_app_generation WHERE status = 'claimed'")]
    now = time.time()
    assert all(_epoch(lease) <= now for lease in leases), "a claim outlived its worker"

    # The next worker finishes the stage, with no call repeated but those in flight.
    cluster = start("qcluster", env=env)
    try:
        wait_for(lambda: done_count(database, "kill.0") == CELLS)
    finally:
        kill(cluster)
    assert database.rows("SELECT DISTINCT status FROM runs_app_generation") == [("done",)]
    assert repeated_calls(server) <= LOST_AT_A_KILL


def _epoch(value) -> float:
    """A timestamp column as the backend returns it (SQLite: text in UTC)."""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


PAGES_AS_AN_OPERATOR = """
from django.contrib.auth.models import Group, User
from django.test import Client
user, _ = User.objects.get_or_create(username="olga", defaults={"is_staff": True})
user.groups.add(Group.objects.get(name="operator"))
client = Client()
client.force_login(user)
progress = client.get("/runs/kill.0/progress.json").json()
listing = client.get("/runs/").content.decode()
answer = {"progress": progress, "listing": listing}
"""


def running(workers: dict) -> bool:
    """The run page's workers line shows a cluster that has started its workers."""
    return bool(workers["alive"]) and ", starting, " not in workers["text"]


def test_the_no_worker_warning_shows_with_no_cluster_and_goes_once_one_starts(world, redis_url):
    """The run pages, served in another process than the cluster's, read its real heartbeat:
    beside the embedded SQLite database, or on Redis (PostgreSQL has no other shared store)."""
    database, server, env = world
    if database.postgres:
        env = env | {"REDIS_URL": redis_url,
                     "BAITBENCH_Q_NAME": f"bb-test-{uuid.uuid4().hex[:8]}"}

    with Shell(env) as shell:  # starts while the run is queued; asked only after
        manage("run_release", "kill.0", "--stage", "generate", env=env)

        def pages() -> dict:
            return shell.ask(PAGES_AS_AN_OPERATOR)

        seen = pages()
        generate = next(row for row in seen["progress"]["stages"]
                        if row["stage"] == "generate")
        assert seen["progress"]["workers"]["alive"] is False
        assert seen["progress"]["notice"].startswith("No worker is alive")
        assert generate["display"]["state_label"] == "Waiting: start a worker: manage.py qcluster"
        assert "No worker is alive" in seen["listing"]

        cluster = start("qcluster", env=env)
        try:
            # The cluster is seen from its first heartbeat, sent while it is still starting
            # its workers (0 of them, "starting"): wait until it runs them.
            wait_for(lambda: running(pages()["progress"]["workers"]), timeout=90)
            seen = pages()
        finally:
            kill(cluster)
    assert "No worker" not in seen["progress"]["notice"]
    assert seen["progress"]["workers"]["text"].startswith(
        "Workers alive: 2 worker process(es) in 1 cluster(s): ")
    assert "No worker is alive" not in seen["listing"]
    assert "Workers alive: 2 worker process(es)" in seen["listing"]
