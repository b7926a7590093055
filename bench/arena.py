"""Many voters at once in the arena, through the real HTTP path under gunicorn.

    .venv/bin/python bench/arena.py [--database-url postgres://postgres@127.0.0.1:5432/NAME]
        [--voters 200] [--votes 10] [--connections 64] [--workers 3]

Builds a published release with an approved, open arena in a fresh database (PostgreSQL by
default: the named database is dropped and created again; a sqlite:/// URL works too), serves
it with gunicorn behind a simulated proxy (each voter from its own forwarded address, the rate
limits shared through Redis as in production), and lets every voter consent, then ask for a
pair and vote, `--votes` times, with at most `--connections` requests in flight. Each voter
then submits its last vote a second time (a double click), which must be refused.

Reports votes recorded per second over the voting phase, p50 and p99 of a vote (POST) and of
choosing a pair (GET), and the exactly-once count: the votes the database holds for these
voters against the votes the server answered as recorded, and (voter, pair) rows that occur
twice. Votes come faster than a person reads, so the arena records them as shadow votes (too
fast): recorded all the same, which is what is counted here. Target: 200 votes/s, p99 of a
vote under 250 ms. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CODE = "arena.0"
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/baitbench_bench_arena"
REDIS = "redis://127.0.0.1:6379/0"

OPEN_ARENA = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.conf import settings
from scenarios_app.services import scenarios_import
from audits_app.arena.tests import conftest as arena
scenarios_import(paths=[str(settings.SCENARIOS_DIR / f"{slug}.yaml")
                        for slug in [*arena.PUBLIC, arena.HELD_OUT]])
release = arena.published_arena_release()
publisher = arena.staff_user("pat", "publisher")
arena.approve(release, publisher)
from audits_app.arena.services import arena_open
arena_open(release=release, user=publisher, reason="Approved; a load test.")
"""

COUNT_VOTES = """
from django.db.models import Count
from audits_app.arena.models import ArenaVote
votes = ArenaVote.objects.filter(pair__release__code="%s")
twice = votes.values("voter", "pair").annotate(n=Count("pk")).filter(n__gt=1).count()
print(votes.count(), twice)
"""


@dataclass
class Tally:
    recorded: int = 0
    refused_again: int = 0
    errors: list[str] = field(default_factory=list)
    vote_ms: list[float] = field(default_factory=list)
    pair_ms: list[float] = field(default_factory=list)


def fresh_database(database_url: str) -> None:
    """Drop and create a PostgreSQL database (a SQLite file starts empty by itself)."""
    if not database_url.startswith("postgres"):
        return
    import psycopg

    drop_database(database_url)
    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')


def drop_database(database_url: str) -> None:
    if not database_url.startswith("postgres"):
        return
    import psycopg

    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def site_environment(database_url: str, workdir: str, workers: int, redis_url: str) -> dict:
    env = {name: value for name, value in os.environ.items() if name != "BAITBENCH_DEV"}
    env.update({
        "DATABASE_URL": database_url, "BAITBENCH_CACHE_URL": redis_url,
        "BAITBENCH_CACHE_PREFIX": f"bb-arena-bench-{uuid.uuid4().hex[:8]}",
        "BAITBENCH_MEDIA_ROOT": f"{workdir}/media", "BAITBENCH_STATIC_ROOT": f"{workdir}/static",
        "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
        "BAITBENCH_BEHIND_PROXY": "1", "WEB_CONCURRENCY": str(workers),
    })
    return env


def prepare(env: dict) -> None:
    fresh_database(env["DATABASE_URL"])
    for command in (["manage.py", "shell", "-c", OPEN_ARENA],
                    ["manage.py", "collectstatic", "--noinput", "-v0"]):
        subprocess.run([sys.executable, *command], cwd=ROOT, check=True, timeout=600,
                       env={**env, "BAITBENCH_DEV": "1"} if "shell" in command else env,
                       capture_output=True)


def count_votes(env: dict) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", COUNT_VOTES % CODE],
                          cwd=ROOT, env=env, check=True, capture_output=True, text=True,
                          timeout=300)
    total, twice = done.stdout.split()[-2:]
    return int(total), int(twice)


class Voter:
    """One anonymous visitor from its own address. Cookies are Secure (the proxy says HTTPS),
    so they are sent back by hand over the loopback's plain HTTP."""

    def __init__(self, client: httpx.AsyncClient, number: int, gate: asyncio.Semaphore):
        self.client, self.gate, self.cookies = client, gate, {}
        self.headers = {"X-Forwarded-Proto": "https",
                        "X-Forwarded-For": f"10.{number // 65536 % 256}.{number // 256 % 256}."
                                           f"{number % 256}",
                        "Origin": str(client.base_url).replace("http:", "https:")}

    async def request(self, method: str, path: str, **data) -> tuple[httpx.Response, float]:
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        headers = {**self.headers, "Cookie": cookie,
                   "Referer": f"{self.headers['Origin']}{path}"}
        async with self.gate:
            started = time.perf_counter()
            response = await self.client.request(method, path, headers=headers,
                                                 data=data or None)
            elapsed = (time.perf_counter() - started) * 1000
        self.cookies.update(response.cookies)
        return response, elapsed

    async def run(self, votes: int, tally: Tally) -> None:
        page, _ = await self.request("GET", f"/arena/{CODE}/")
        answer, _ = await self.request("POST", f"/arena/{CODE}/consent/", agree="on",
                                       csrfmiddlewaretoken=_field(page.text, "csrfmiddlewaretoken"))
        if answer.status_code != 302:
            tally.errors.append(f"consent {answer.status_code}")
            return
        last = None
        for _ in range(votes):
            pair, pair_ms = await self.request("GET", f"/arena/{CODE}/pair/")
            tally.pair_ms.append(pair_ms)
            if pair.status_code != 200 or 'name="pair"' not in pair.text:
                tally.errors.append(f"pair {pair.status_code}")
                return
            last = {"pair": _field(pair.text, "pair"), "favourable": "left",
                    "csrfmiddlewaretoken": _field(pair.text, "csrfmiddlewaretoken")}
            vote, vote_ms = await self.request("POST", f"/arena/{CODE}/vote/", **last)
            tally.vote_ms.append(vote_ms)
            if vote.status_code == 302:
                tally.recorded += 1
            else:
                tally.errors.append(f"vote {vote.status_code}")
        if last is not None:
            again, _ = await self.request("POST", f"/arena/{CODE}/vote/", **last)
            if again.status_code == 409:
                tally.refused_again += 1
            else:
                tally.errors.append(f"second submission {again.status_code}")


def _field(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]+)"', html)
    return found.group(1) if found else ""


async def crowd(base_url: str, voters: int, votes: int, connections: int) -> tuple[Tally, float]:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    tally = Tally()
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:
        gate = asyncio.Semaphore(connections)
        started = time.perf_counter()
        await asyncio.gather(*(Voter(client, number, gate).run(votes, tally)
                               for number in range(voters)))
        return tally, time.perf_counter() - started


def serve(env: dict, log_path: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**env, "BAITBENCH_BIND": f"127.0.0.1:{port}"}
    with open(log_path, "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "baitbench_site.wsgi",
                                   "--access-logfile", "/dev/null"], cwd=ROOT, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn stopped (exit {server.returncode}): {log_path}")
        try:
            httpx.get(f"{base_url}/", headers={"X-Forwarded-Proto": "https"}, timeout=5)
            return server, base_url
        except httpx.TransportError:
            time.sleep(0.1)
    os.killpg(server.pid, signal.SIGTERM)
    raise RuntimeError("gunicorn did not answer within 30 s")


def run(*, database_url: str, voters: int, votes: int, connections: int, workers: int,
        redis_url: str = REDIS) -> dict:
    """The whole benchmark; returns its figures (the suite runs it small)."""
    with tempfile.TemporaryDirectory() as workdir:
        env = site_environment(database_url, workdir, workers, redis_url)
        prepare(env)
        server, base_url = serve(env, f"{workdir}/gunicorn.log")
        try:
            tally, seconds = asyncio.run(crowd(base_url, voters, votes, connections))
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        stored, twice = count_votes(env)
    return {"tally": tally, "seconds": seconds, "stored": stored, "twice": twice}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE)
    parser.add_argument("--voters", type=int, default=200)
    parser.add_argument("--votes", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workers", type=int, default=3)
    arguments = parser.parse_args()
    figures = run(database_url=arguments.database_url, voters=arguments.voters,
                  votes=arguments.votes, connections=arguments.connections,
                  workers=arguments.workers)
    tally = figures["tally"]
    print(f"arena under gunicorn: {arguments.workers} workers, {arguments.voters} voters x "
          f"{arguments.votes} votes, {arguments.connections} connections, "
          f"{arguments.database_url.split('://')[0]}, {os.cpu_count()} cores shared with the "
          f"client")
    print(f"  {tally.recorded / figures['seconds']:.1f} votes recorded/s "
          f"({tally.recorded} in {figures['seconds']:.1f} s, consent and pairs included)")
    print(f"  vote: p50 {statistics.median(tally.vote_ms):.1f} ms, "
          f"p99 {_percentile(tally.vote_ms, 0.99):.1f} ms; pair: p50 "
          f"{statistics.median(tally.pair_ms):.1f} ms, "
          f"p99 {_percentile(tally.pair_ms, 0.99):.1f} ms")
    print(f"  exactly once: {figures['stored']} stored for {tally.recorded} answered as recorded,"
          f" {figures['twice']} (voter, pair) twice, {tally.refused_again} second submissions "
          f"refused; {len(tally.errors)} errors {sorted(set(tally.errors))[:5]}")


if __name__ == "__main__":
    main()
