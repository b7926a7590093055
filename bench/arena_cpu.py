"""CPU of one arena vote in-process: the same flow as bench/arena.py, without gunicorn.

    .venv/bin/python bench/arena_cpu.py prepare [--database-url URL]
    .venv/bin/python bench/arena_cpu.py measure [--database-url URL] [--voters 40] [--votes 10]
        [--profile FILE] [--tree DIR]

`prepare` builds the published, open arena in a fresh database as bench/arena.py does (and
collects the static files into var/arena_cpu/). `measure` loads the site as gunicorn's workers
run it (production settings behind a proxy, the Redis cache, kept database connections, the
loaded site frozen out of garbage collection) and drives Django's WSGI handler directly:
every voter, from an address of its own, opens the arena page, consents, asks for a pair and
votes `--votes` times (each vote's answer is the next pair). It prints the CPU milliseconds
(process time) of a vote request and of a pair request, median and mean, after a first voter
that warms the caches. `--profile FILE` writes cProfile's stats of the vote requests.
`--tree DIR` runs another checkout's code (an export of main, say) on the same database, so
before and after can be measured in alternation.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import re
import statistics
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/baitbench_arena_cpu"
CODE = "arena.0"
WORKDIR = ROOT / "var" / "arena_cpu"


def environment(database_url: str) -> dict:
    sys.path.insert(0, str(ROOT))
    from bench import arena as arena_bench

    env = arena_bench.site_environment(database_url, str(WORKDIR), None, arena_bench.REDIS)
    env["SECRET_KEY"] = "arena-cpu-" + "k" * 50  # the same across runs: the cookies stay valid
    env["BAITBENCH_DB_CONN_MAX_AGE"] = "600"  # as gunicorn.conf.py sets for its workers
    return env


def prepare(database_url: str) -> None:
    sys.path.insert(0, str(ROOT))
    from bench import arena as arena_bench

    WORKDIR.mkdir(parents=True, exist_ok=True)
    arena_bench.prepare(environment(database_url))


def measure(database_url: str, voters: int, votes: int, profile: str | None,
            tree: str | None) -> dict:
    code_root = Path(tree).resolve() if tree else ROOT
    os.environ.update(environment(database_url))
    # Counts of its own: earlier runs' rate-limit counts do not apply.
    os.environ["BAITBENCH_CACHE_PREFIX"] = f"bb-arena-cpu-{uuid.uuid4().hex[:8]}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "baitbench_site.settings"
    os.chdir(code_root)
    sys.path.insert(0, str(code_root))
    import django

    django.setup()
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connections

    application = WSGIHandler()
    connections.close_all()
    gc.freeze()

    def request(cookies: dict, address: str, method: str, path: str, data=None):
        body = urlencode(data).encode() if data else b""
        environ = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1", "REMOTE_ADDR": "127.0.0.1",
            "HTTP_X_FORWARDED_PROTO": "https", "HTTP_X_FORWARDED_FOR": address,
            "HTTP_ORIGIN": "https://127.0.0.1", "HTTP_REFERER": f"https://127.0.0.1{path}",
            "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
            "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
            "wsgi.version": (1, 0),
        }
        if cookies:
            environ["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        if data:
            environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
            environ["CONTENT_LENGTH"] = str(len(body))
        state = {}

        def start_response(status, headers, exc_info=None):
            state["status"] = int(status.split(" ", 1)[0])
            state["headers"] = headers

        started = time.process_time()
        response = application(environ, start_response)
        content = b"".join(response)
        if hasattr(response, "close"):
            response.close()
        cpu = (time.process_time() - started) * 1000
        for name, value in state["headers"]:
            if name.lower() == "set-cookie":
                cookie, _, attributes = value.partition(";")
                key, _, cookie_value = cookie.partition("=")
                if "max-age=0" in attributes.lower().replace(" ", ""):
                    cookies.pop(key.strip(), None)
                else:
                    cookies[key.strip()] = cookie_value.strip().strip('"')
        return state["status"], content.decode(), cpu

    def field(html: str, name: str) -> str:
        found = re.search(rf'name="{name}" value="([^"]+)"', html)
        return found.group(1) if found else ""

    import cProfile

    profiler = cProfile.Profile(time.process_time) if profile else None
    vote_cpu, pair_cpu, statuses = [], [], []
    base = uuid.uuid4().int % 200
    for number in range(voters + 1):  # voter 0 warms up
        cookies = {}
        address = f"10.{base}.{number // 256}.{number % 256}"
        status, page, _ = request(cookies, address, "GET", f"/arena/{CODE}/")
        assert status == 200, status
        status, _, _ = request(cookies, address, "POST", f"/arena/{CODE}/consent/",
                               {"agree": "on",
                                "csrfmiddlewaretoken": field(page, "csrfmiddlewaretoken")})
        assert status == 302, status
        status, pair, cpu = request(cookies, address, "GET", f"/arena/{CODE}/pair/")
        assert status == 200 and 'name="pair"' in pair, status
        if number:
            pair_cpu.append(cpu)
        for _ in range(votes):
            form = {"pair": field(pair, "pair"), "favourable": "left",
                    "csrfmiddlewaretoken": field(pair, "csrfmiddlewaretoken")}
            if profiler and number:
                profiler.enable()
            status, answer, cpu = request(cookies, address, "POST", f"/arena/{CODE}/vote/", form)
            if profiler and number:
                profiler.disable()
            statuses.append(status)
            if number:
                vote_cpu.append(cpu)
            if status == 200:
                pair = answer
            elif status in (302, 303):
                status, pair, cpu = request(cookies, address, "GET", f"/arena/{CODE}/pair/")
                if number:
                    pair_cpu.append(cpu)
                if 'name="pair"' not in pair:
                    break
            else:
                raise AssertionError(f"vote answered {status}")
    if profiler:
        profiler.dump_stats(profile)
    return {"tree": str(code_root), "votes": len(vote_cpu),
            "vote_ms_median": statistics.median(vote_cpu),
            "vote_ms_mean": statistics.fmean(vote_cpu),
            "pair_ms_median": statistics.median(pair_cpu),
            "pair_ms_mean": statistics.fmean(pair_cpu),
            "statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["prepare", "measure"])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE)
    parser.add_argument("--voters", type=int, default=40)
    parser.add_argument("--votes", type=int, default=10)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--tree", default=None)
    arguments = parser.parse_args()
    if arguments.action == "prepare":
        prepare(arguments.database_url)
        return
    figures = measure(arguments.database_url, arguments.voters, arguments.votes,
                      arguments.profile, arguments.tree)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
