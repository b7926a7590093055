"""Server time and query count of the public leaderboard pages and API answers.

Builds two published releases (4 and 50 models; the larger has 1,200 texts) in a scratch
SQLite database and times each page through Django's test client (server time: no network),
best of 5 in wall-clock and CPU time, with the number of SQL queries it made. Target: under
50 ms, constant queries.

    .venv/bin/python bench/pages.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = [
    "/", "/releases/{code}/", "/releases/{code}/chart.svg", "/releases/{code}/leaderboard.csv",
    "/releases/{code}/texts/", "/releases/{code}/scenarios/greenvale-listeria/",
    "/api/v1/releases/", "/api/v1/releases/{code}/", "/api/v1/releases/{code}/leaderboard/",
    "/api/v1/releases/{code}/texts/?limit=100", "/api/v1/releases/{code}/texts.csv",
    "/api/v1/scenarios/",
]


def setup(workdir: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/pages.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def measure(client, url: str) -> tuple[float, float, int, int]:
    """Best of 5 wall time and CPU time (ms): on a shared machine the wall time includes
    waiting for a core, while the process's CPU time is what the request itself cost."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm caches of templates and the parsed snapshot
    best, best_cpu, queries, status = float("inf"), float("inf"), 0, 0
    for _ in range(5):
        with CaptureQueriesContext(connection) as captured:
            started, cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            best = min(best, time.perf_counter() - started)
            best_cpu = min(best_cpu, time.process_time() - cpu)
        queries, status = len(captured), response.status_code
    return best * 1000, best_cpu * 1000, queries, status


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        setup(workdir)
        from django.test import Client

        from audits_app.tests.factories import published_release_create

        for code, models in (("small.0", 4), ("large.0", 50)):
            world = published_release_create(code=code, model_count=models)
            print(f"\nrelease {code}: {models} models, {len(world.generations)} texts")
            client = Client()
            for page in PAGES:
                url = page.format(code=code)
                ms, cpu, queries, status = measure(client, url)
                print(f"  {ms:7.1f} ms  {cpu:7.1f} ms cpu  {queries:2d} queries  {status}  {url}")


if __name__ == "__main__":
    main()
