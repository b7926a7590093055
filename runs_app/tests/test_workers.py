"""Real worker processes against a real database file or server (DESIGN section 5).

These start `qcluster` and `run_release` as separate processes, so they use a database of
their own (a SQLite file, or a scratch PostgreSQL database when the suite runs on
PostgreSQL) and a fake OpenRouter server with latency, slow enough to kill mid-run.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.testing.replies import valid_reply

pytestmark = pytest.mark.slow

ROOT = Path(settings.BASE_DIR)
CELLS = 2 * 2 * 3 * 4  # writers x scenarios x tasks x conditions
CONCURRENCY = 4

RELEASE = """
code: {code}
language: en
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
scenarios: [greenvale-listeria, cobaltcloud-breach]
tasks: {tasks}
conditions: {conditions}
variants: {variants}
"""


class Database:
    """A scratch database the worker processes share, on the suite's backend."""

    def __init__(self, tmp_path: Path) -> None:
        self.postgres = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
        if self.postgres:
            self.name = f"bb_workers_{uuid.uuid4().hex[:10]}"
            self._admin(f'CREATE DATABASE "{self.name}"')
            self.url = f"postgres://postgres@127.0.0.1:5432/{self.name}"
        else:
            self.path = tmp_path / "workers.sqlite3"
            self.url = f"sqlite:///{self.path}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres",
                             autocommit=True) as connection:
            connection.execute(sql)

    def rows(self, sql: str) -> list[tuple]:
        if self.postgres:
            import psycopg

            with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{self.name}") as conn:
                return conn.execute(sql).fetchall()
        with sqlite3.connect(self.path) as connection:
            return connection.execute(sql).fetchall()

    def drop(self) -> None:
        if self.postgres:
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.fixture
def world(tmp_path):
    database = Database(tmp_path)
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
    with FakeOpenRouter(latency=0.3, responder=valid_reply) as server:
        env = os.environ | {
            "DATABASE_URL": database.url, "BAITBENCH_PROVIDER": "openrouter",
            "OPENROUTER_BASE_URL": server.base_url, "OPENROUTER_API_KEY": "test-key",
            # Long enough that a live worker on a loaded machine renews its leases in time.
            "BAITBENCH_RELEASES_DIR": str(releases), "BAITBENCH_LEASE_SECONDS": "30",
            "BAITBENCH_Q_WORKERS": "2", "BAITBENCH_CONCURRENCY": str(CONCURRENCY),
        }
        env.pop("REDIS_URL", None)
        manage("migrate", "-v0", env=env)
        manage("import_scenarios", "scenarios/", env=env)
        yield database, server, env
    database.drop()


def manage(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True, timeout=300)


def start(*args: str, env: dict) -> subprocess.Popen:
    # A session of its own, so a SIGKILL reaches the cluster's sentinel and workers too.
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


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


def run_schedule(env: dict) -> None:
    """What the schedule does every few minutes: drain again what was left behind."""
    manage("shell", "-c", "from runs_app.tasks import reenqueue_stalled; reenqueue_stalled()",
           env=env)


def repeated_calls(server: FakeOpenRouter) -> int:
    calls = collections.Counter(
        (request.body["model"], str(request.body["messages"]), request.body.get("seed"))
        for request in server.requests
    )
    return sum(count - 1 for count in calls.values())


def test_a_killed_qcluster_restarted_finishes_with_no_duplicate_and_none_missing(world):
    database, server, env = world
    manage("run_release", "kill.0", "--stage", "generate", env=env)
    # The cluster that will be killed takes short leases, so its claims expire quickly.
    cluster = start("qcluster", env=env | {"BAITBENCH_LEASE_SECONDS": "3"})
    try:
        wait_for(lambda: done_count(database, "kill.0") >= 10)
    finally:
        kill(cluster)
    calls_before_restart = server.count()
    assert done_count(database, "kill.0") < CELLS, "the run finished before the kill"

    time.sleep(3.5)  # the dead worker's leases run out
    cluster = start("qcluster", env=env)
    try:
        run_schedule(env | {"BAITBENCH_LEASE_SECONDS": "3"})
        wait_for(lambda: done_count(database, "kill.0") == CELLS)
    finally:
        kill(cluster)

    rows = database.rows("SELECT status, text FROM runs_app_generation")
    assert len(rows) == CELLS and all(status == "done" and text for status, text in rows)
    calls = collections.Counter(
        (request.body["model"], str(request.body["messages"])) for request in server.requests
    )
    assert len(calls) == CELLS
    # Only calls in flight at the moment of the kill may have been made twice (the cluster's
    # two workers each had CONCURRENCY in flight); nothing that had finished was called again.
    repeated = sum(1 for count in calls.values() if count > 1)
    assert repeated <= 2 * CONCURRENCY
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
    manage("run_release", "chain.0", env=env)
    cluster = start("qcluster", env=env | {"BAITBENCH_LEASE_SECONDS": "3"})
    try:
        # Killed while the chain is well under way: some texts already past their jury.
        wait_for(lambda: done_count(database, "chain.0", "runs_app_jurorverdict") >= 6)
    finally:
        kill(cluster)
    assert release_status(database, "chain.0") == "running"
    time.sleep(3.5)  # the dead worker's leases run out
    cluster = start("qcluster", env=env)
    try:
        run_schedule(env | {"BAITBENCH_LEASE_SECONDS": "3"})
        wait_for(lambda: release_status(database, "chain.0") == "scored", timeout=240)
    finally:
        kill(cluster)
    # Every unit of every stage once; a repeated call only for a unit that was in flight.
    assert repeated_calls(server) <= CONCURRENCY * 2  # one cluster of two workers
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


REDIS_SERVER = os.environ.get("BAITBENCH_REDIS_SERVER", "/usr/bin/redis-server")


@pytest.fixture
def redis_url(tmp_path):
    """The Redis on 127.0.0.1:6379 when one answers there (CI starts one), else a private
    redis-server on a free port for this test; `make test` installs the binary."""
    import socket

    if _redis_answers("redis://127.0.0.1:6379/0"):
        yield "redis://127.0.0.1:6379/0"
        return
    if not os.access(REDIS_SERVER, os.X_OK):
        pytest.fail(f"{REDIS_SERVER} is missing and no Redis answers on 127.0.0.1:6379: "
                    f"install it with `apt-get install redis-server` (`make test` does)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_for(lambda: _redis_answers(url), timeout=30)
        yield url
    finally:
        server.kill()
        server.wait()


def _redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.exceptions.ConnectionError:
        return False


def test_the_queue_also_runs_on_redis(world, redis_url):
    database, server, env = world
    env = env | {"REDIS_URL": redis_url,
                 "BAITBENCH_Q_NAME": f"bb-test-{uuid.uuid4().hex[:8]}"}
    manage("run_release", "redis.0", "--stage", "generate", env=env)
    cluster = start("qcluster", env=env)
    try:
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
    manage("run_release", "t4kill.0", env=env)
    # Short leases, so the dead cluster's claims expire quickly; one drain per worker, so
    # that it holds no queued drain task either (a task fetched by a cluster that dies
    # counts as queued until it is ten minutes old: `runs_app.tasks.QUEUED_STALE`).
    cluster = start("qcluster", env=env | {"BAITBENCH_LEASE_SECONDS": "3",
                                           "BAITBENCH_DRAINS_PER_RELEASE": "2"})
    try:
        wait_for(lambda: database.rows(
            f"SELECT COUNT(*) FROM {turns} WHERE number = 3 AND status = 'done'")[0][0] >= 4)
    finally:
        kill(cluster)
    written = {row for row in database.rows(
        f"SELECT generation_id, number, answer FROM {turns} WHERE status = 'done'")}
    follow_ups_written = sum(1 for _, number, _ in written if number < 7)
    labels_written = sum(1 for _, number, _ in written if number == 7)
    assert labels_written < T4_TEXTS, "every interview finished before the kill"
    before = server.count()

    time.sleep(3.5)  # the dead worker's leases run out
    cluster = start("qcluster", env=env)
    try:
        run_schedule(env | {"BAITBENCH_LEASE_SECONDS": "3"})
        wait_for(lambda: release_status(database, "t4kill.0") == "scored", timeout=240)
    finally:
        kill(cluster)

    after = collections.Counter(_role(request.body) for request in server.requests[before:])
    # Each turn not written at the kill is asked once after the restart, a turn written
    # before it never again: the kill cost at most the turns that were in flight.
    assert after["question"] == after["write"] == T4_TEXTS * FOLLOW_UPS - follow_ups_written
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
          f"written before the kill; after the restart {after['question']} questions, "
          f"{after['write']} answers and {after['labels']} labels; "
          f"{repeated_calls(server)} calls repeated in all")
