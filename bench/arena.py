"""Many voters at once in the arena, through the real HTTP path under gunicorn.

    .venv/bin/python bench/arena.py [--database-url postgres://postgres@127.0.0.1:5432/NAME]
        [--voters 200] [--votes 10] [--connections 64] [--workers N] [--threads N] [--rate 200]

Builds a published release with an approved, open arena in a fresh database (PostgreSQL by
default: the named database is dropped and created again; a sqlite:/// URL works too), serves
it with gunicorn behind a simulated proxy (each voter from its own forwarded address, the rate
limits shared through Redis as in production), and lets every voter consent, then ask for a
pair and vote, `--votes` times, with at most `--connections` requests in flight. Each voter
then submits its last vote a second time (a double click), which must be refused. A vote
answers with the next pair itself (200), as the page does: one request a vote. Where no pair
can follow (the pair limit, every pair seen) it answers with a redirect to the pair page, and
the voter asks for that.

Reports votes recorded per second over the voting phase, p50 and p99 of a vote (POST, which
records it and chooses and shows the next pair) and of choosing a pair by GET (each voter's
first, and any after a redirect), and the exactly-once count: the votes the database holds for these
voters against the votes the server answered as recorded, and (voter, pair) rows that occur
twice. Votes come faster than a person reads, so the arena records them as shadow votes (too
fast): recorded all the same, which is what is counted here. Target: 200 votes/s, p99 of a
vote under 250 ms. Loopback only.

Without `--rate` every voter votes as fast as the server answers (a closed loop): that gives
the most votes per second the server records, but then a vote's time is mostly its wait for a
connection (Little's law: voters in flight over votes per second), whatever the server does.
`--rate 200` offers votes at that rate instead (an open loop: vote k of the crowd is due k/rate
seconds after the voting starts, each voter's votes `voters`/rate seconds apart), after every
voter has consented and seen a first pair; a vote's time runs from when it was due, so a
server that falls behind shows it. That is the target's measure: 200 votes/s offered, all
recorded, p99 under 250 ms.

The client shares the machine's cores with the server, so it is a lean one (a few lines of
HTTP/1.1 over asyncio streams, connections kept alive where gunicorn allows: its gthread
worker, `--threads` above 1), and the CPU seconds of gunicorn (master and workers) and of
the client over the voting are printed beside the figures, with the machine's load average:
on a shared machine the server's share of the cores, not its speed, may set the rate.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import runpy
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
from urllib.parse import urlencode

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
    requests: int = 0
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


def site_environment(database_url: str, workdir: str, workers: int | None,
                     redis_url: str) -> dict:
    env = {name: value for name, value in os.environ.items() if name != "BAITBENCH_DEV"}
    env.update({
        "DATABASE_URL": database_url, "BAITBENCH_CACHE_URL": redis_url,
        "BAITBENCH_CACHE_PREFIX": f"bb-arena-bench-{uuid.uuid4().hex[:8]}",
        "BAITBENCH_MEDIA_ROOT": f"{workdir}/media", "BAITBENCH_STATIC_ROOT": f"{workdir}/static",
        "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
        "BAITBENCH_BEHIND_PROXY": "1",
    })
    # gunicorn.conf.py's own numbers (production's) unless told otherwise.
    env.pop("WEB_CONCURRENCY", None)
    env.pop("BAITBENCH_WEB_THREADS", None)
    if workers is not None:
        env["WEB_CONCURRENCY"] = str(workers)
    return env


def prepare(env: dict, *, migrated: bool = False, collected: bool = False) -> None:
    """The database made afresh and migrated with arena.0 open, and the static files
    collected. `migrated`: the database is a migrated copy the caller made (the test suite's),
    kept as it is; `collected`: the caller collected the static files into
    BAITBENCH_STATIC_ROOT already."""
    if not migrated:
        fresh_database(env["DATABASE_URL"])
    commands = [["manage.py", "shell", "-c", OPEN_ARENA]]
    if not collected:
        commands.append(["manage.py", "collectstatic", "--noinput", "-v0"])
    for command in commands:
        subprocess.run([sys.executable, *command], cwd=ROOT, check=True, timeout=600,
                       env={**env, "BAITBENCH_DEV": "1"} if "shell" in command else env,
                       capture_output=True)


def count_votes(env: dict) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", COUNT_VOTES % CODE],
                          cwd=ROOT, env=env, check=True, capture_output=True, text=True,
                          timeout=300)
    total, twice = done.stdout.split()[-2:]
    return int(total), int(twice)


@dataclass
class Reply:
    status: int
    cookies: dict[str, str | None]  # None: the server deleted it
    text: str


class Connections:
    """A lean HTTP/1.1 client for the loopback: at most `size` connections, each kept alive
    between requests when the server allows it. It shares the machine's cores with the
    server, so it does no more than write a request and read its answer."""

    def __init__(self, host: str, port: int, size: int):
        self.host, self.port, self.authority = host, port, f"{host}:{port}"
        self.gate = asyncio.Semaphore(size)
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def request(self, head: bytes, body: bytes) -> Reply:
        async with self.gate:
            reused = bool(self.idle)
            connection = self.idle.pop() if reused else await self._open()
            try:
                reply, keep = await self._exchange(connection, head, body)
            except (ConnectionError, asyncio.IncompleteReadError) as error:
                connection[1].close()
                # A kept connection the server closed while idle: nothing was read, so the
                # request never reached a view; send it once more on a new connection.
                if not reused or getattr(error, "partial", b"") != b"":
                    raise
                connection = await self._open()
                reply, keep = await self._exchange(connection, head, body)
            if keep:
                self.idle.append(connection)
            else:
                connection[1].close()
            return reply

    async def _open(self):
        return await asyncio.open_connection(self.host, self.port)

    @staticmethod
    async def _exchange(connection, head: bytes, body: bytes) -> tuple[Reply, bool]:
        reader, writer = connection
        writer.write(head + body)
        lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, chunked, keep, cookies = 0, False, True, {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value.lower()
            elif name == "connection":
                keep = value.lower() != "close"
            elif name == "set-cookie":
                cookie, _, attributes = value.partition(";")
                key, _, cookie_value = cookie.partition("=")
                gone = "max-age=0" in attributes.lower().replace(" ", "")
                cookies[key.strip()] = None if gone else cookie_value.strip()
        if chunked:
            parts = []
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append((await reader.readexactly(size + 2))[:-2])
            await reader.readuntil(b"\r\n")
            content = b"".join(parts)
        else:
            content = await reader.readexactly(length)
        return Reply(status, cookies, content.decode()), keep


class Voter:
    """One anonymous visitor from its own address. Cookies are Secure (the proxy says HTTPS),
    so they are sent back by hand over the loopback's plain HTTP."""

    def __init__(self, connections: Connections, origin: str, number: int, tally: Tally):
        self.connections, self.origin, self.cookies, self.tally = connections, origin, {}, tally
        self.address = (f"10.{number // 65536 % 256}.{number // 256 % 256}.{number % 256}")

    async def request(self, method: str, path: str, **data) -> tuple[Reply, float]:
        body = urlencode(data).encode() if data else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.connections.authority}\r\n"
                f"X-Forwarded-Proto: https\r\nX-Forwarded-For: {self.address}\r\n"
                f"Origin: {self.origin}\r\nReferer: {self.origin}{path}\r\n")
        if self.cookies:
            head += "Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()) + "\r\n"
        if data:
            head += ("Content-Type: application/x-www-form-urlencoded\r\n"
                     f"Content-Length: {len(body)}\r\n")
        started = time.perf_counter()
        response = await self.connections.request((head + "\r\n").encode(), body)
        elapsed = (time.perf_counter() - started) * 1000
        self.tally.requests += 1
        for name, value in response.cookies.items():
            if value is None:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value
        return response, elapsed

    async def consent(self, tally: Tally) -> Reply | None:
        """Consent, then the first pair (None when either failed)."""
        page, _ = await self.request("GET", f"/arena/{CODE}/")
        answer, _ = await self.request("POST", f"/arena/{CODE}/consent/", agree="on",
                                       csrfmiddlewaretoken=_field(page.text, "csrfmiddlewaretoken"))
        if answer.status != 302:
            tally.errors.append(f"consent {answer.status}")
            return None
        pair, pair_ms = await self.request("GET", f"/arena/{CODE}/pair/")
        tally.pair_ms.append(pair_ms)
        return pair

    async def run(self, votes: int, tally: Tally, pair: Reply | None = None,
                  due: list[float] | None = None) -> None:
        """Vote `votes` times (after consenting, unless given the first pair); `due`: when
        each vote is due (perf_counter), timed from then."""
        if pair is None:
            pair = await self.consent(tally)
            if pair is None:
                return
        last = None
        for number in range(votes):
            if pair is None:
                pair, pair_ms = await self.request("GET", f"/arena/{CODE}/pair/")
                tally.pair_ms.append(pair_ms)
            if pair.status != 200 or 'name="pair"' not in pair.text:
                tally.errors.append(f"pair {pair.status}")
                return
            last = {"pair": _field(pair.text, "pair"), "favourable": "left",
                    "csrfmiddlewaretoken": _field(pair.text, "csrfmiddlewaretoken")}
            if due is not None:
                await asyncio.sleep(max(0.0, due[number] - time.perf_counter()))
            vote, vote_ms = await self.request("POST", f"/arena/{CODE}/vote/", **last)
            if due is not None:  # from when it was due: a late start is the server's backlog
                vote_ms = (time.perf_counter() - due[number]) * 1000
            tally.vote_ms.append(vote_ms)
            # Recorded: the answer is the next pair (200), or a redirect to ask for it.
            if vote.status == 200:
                tally.recorded += 1
                pair = vote
            elif vote.status in (302, 303):
                tally.recorded += 1
                pair = None
            else:
                tally.errors.append(f"vote {vote.status}")
                return
        if last is not None:
            again, _ = await self.request("POST", f"/arena/{CODE}/vote/", **last)
            if again.status == 409:
                tally.refused_again += 1
            else:
                tally.errors.append(f"second submission {again.status}")


def _field(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]+)"', html)
    return found.group(1) if found else ""


async def crowd(base_url: str, voters: int, votes: int, connections: int,
                rate: float | None = None, first_voter: int = 0) -> tuple[Tally, float]:
    """Run the crowd (voters numbered from `first_voter`, each number its own address); the
    seconds returned are the whole run's, or with `rate` the voting's (from the first vote
    due to the last answer)."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    pool = Connections(host, int(port), connections)
    origin = base_url.replace("http:", "https:")
    tally = Tally()
    crowd = [Voter(pool, origin, first_voter + number, tally) for number in range(voters)]
    if rate is None:
        started = time.perf_counter()
        await asyncio.gather(*(voter.run(votes, tally) for voter in crowd))
    else:
        firsts = await asyncio.gather(*(voter.consent(tally) for voter in crowd))
        started = time.perf_counter() + 0.5
        await asyncio.gather(*(
            voter.run(votes, tally, pair=first,
                      due=[started + (vote * voters + number) / rate for vote in range(votes)])
            for number, (voter, first) in enumerate(zip(crowd, firsts, strict=True))
            if first is not None))
    seconds = time.perf_counter() - started
    for _, writer in pool.idle:
        writer.close()
    return tally, seconds


def gunicorn_settings(env: dict) -> tuple[int, int]:
    """The worker processes and threads gunicorn.conf.py gives the server in `env`."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return conf["workers"], conf["threads"]


def serve(env: dict, log_path: str, threads: int | None = None) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**env, "BAITBENCH_BIND": f"127.0.0.1:{port}"}
    if threads is not None:
        env["BAITBENCH_WEB_THREADS"] = str(threads)
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


def run(*, database_url: str, voters: int, votes: int, connections: int,
        workers: int | None = None, threads: int | None = None, redis_url: str = REDIS,
        rate: float | None = None) -> dict:
    """The whole benchmark; returns its figures."""
    return run_crowds(database_url=database_url, voters=voters, votes=votes,
                      connections=connections, workers=workers, threads=threads,
                      redis_url=redis_url, rates=[rate])[0]


def run_crowds(*, database_url: str, voters: int, votes: int, connections: int,
               workers: int | None = None, threads: int | None = None,
               redis_url: str = REDIS, rates: list[float | None], migrated: bool = False,
               static_root: str | None = None) -> list[dict]:
    """One site prepared and served, then one crowd per rate, one after another, each of
    `voters` voters of its own (addresses no earlier crowd used): their figures, in order.
    A crowd's `stored` counts the votes the database gained over it; `twice` counts the
    (voter, pair) rows that occur twice in the whole arena after it (the suite runs it small,
    one site for both kinds of crowd). `migrated`: `database_url` is a migrated copy, kept;
    `static_root`: production's static files, collected there already."""
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        env = site_environment(database_url, workdir, workers, redis_url)
        if static_root is not None:
            env["BAITBENCH_STATIC_ROOT"] = static_root
        prepare(env, migrated=migrated, collected=static_root is not None)
        server, base_url = serve(env, f"{workdir}/gunicorn.log", threads)
        workers, threads = gunicorn_settings(
            env if threads is None else {**env, "BAITBENCH_WEB_THREADS": str(threads)})
        stored_before = 0
        try:
            for number, rate in enumerate(rates):
                server_cpu, client_cpu = tree_cpu(server.pid), time.process_time()
                load, wall = os.getloadavg()[0], time.perf_counter()
                tally, seconds = asyncio.run(crowd(base_url, voters, votes, connections, rate,
                                                   first_voter=number * voters))
                wall = time.perf_counter() - wall
                server_cpu = tree_cpu(server.pid) - server_cpu
                client_cpu = time.process_time() - client_cpu
                load = max(load, os.getloadavg()[0])
                stored, twice = count_votes(env)
                results.append({
                    "tally": tally, "seconds": seconds, "stored": stored - stored_before,
                    "twice": twice, "server_cpu": server_cpu, "client_cpu": client_cpu,
                    "load": load, "wall": wall, "workers": workers, "threads": threads})
                stored_before = stored
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    return results


def tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) of a process and its descendants so far (Linux /proc)."""
    total = 0.0
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as children:
                total += sum(tree_cpu(int(child)) for child in children.read().split())
    except OSError:
        pass
    return total


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE)
    parser.add_argument("--voters", type=int, default=200)
    parser.add_argument("--votes", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workers", type=int, default=None,
                        help="gunicorn worker processes (default: gunicorn.conf.py's, as "
                             "`make serve` runs)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per gunicorn worker (gthread above 1; default: "
                             "gunicorn.conf.py's)")
    parser.add_argument("--rate", type=float, default=None,
                        help="offer this many votes a second (open loop) instead of as many "
                             "as the server answers")
    arguments = parser.parse_args()
    figures = run(database_url=arguments.database_url, voters=arguments.voters,
                  votes=arguments.votes, connections=arguments.connections,
                  workers=arguments.workers, threads=arguments.threads, rate=arguments.rate)
    tally = figures["tally"]
    print(f"arena under gunicorn: {figures['workers']} workers x {figures['threads']} threads, "
          f"{arguments.voters} voters x "
          f"{arguments.votes} votes, {arguments.connections} connections, "
          f"{f'{arguments.rate:g} votes/s offered' if arguments.rate else 'closed loop'}, "
          f"{arguments.database_url.split('://')[0]}, {os.cpu_count()} cores shared with the "
          f"client")
    print(f"  {tally.recorded / figures['seconds']:.1f} votes recorded/s "
          f"({tally.recorded} in {figures['seconds']:.1f} s, "
          f"{'the voting' if arguments.rate else 'consent and first pairs included'})")
    print(f"  vote: p50 {statistics.median(tally.vote_ms):.1f} ms, "
          f"p99 {_percentile(tally.vote_ms, 0.99):.1f} ms; pair: p50 "
          f"{statistics.median(tally.pair_ms):.1f} ms, "
          f"p99 {_percentile(tally.pair_ms, 0.99):.1f} ms")
    print(f"  exactly once: {figures['stored']} stored for {tally.recorded} answered as recorded,"
          f" {figures['twice']} (voter, pair) twice, {tally.refused_again} second submissions "
          f"refused; {len(tally.errors)} errors {sorted(set(tally.errors))[:5]}")
    seconds = figures["wall"]
    print(f"  CPU over the crowd's {seconds:.1f} s: gunicorn {figures['server_cpu']:.1f} s "
          f"({figures['server_cpu'] / seconds:.2f} cores; "
          f"{figures['server_cpu'] * 1000 / max(tally.requests, 1):.1f} ms a request over "
          f"{tally.requests} requests), client {figures['client_cpu']:.1f} s "
          f"({figures['client_cpu'] / seconds:.2f} cores); machine load average up to "
          f"{figures['load']:.1f} on {os.cpu_count()} cores (other work included)")


if __name__ == "__main__":
    main()
