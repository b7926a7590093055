"""Server time and query count of the public leaderboard pages and API answers.

Builds two published releases (4 and 50 models; the larger has 1,200 texts) in a scratch
SQLite database and times each page through Django's test client (server time: no network),
best of 5, with the number of SQL queries it made. Target: under 50 ms, constant queries.

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
    "/api/v1/scenarios/", "/releases/small.0/compare/{code}/",
    "/api/v1/releases/small.0/compare/{code}/", "/models/fixture/candid/",
    "/releases/{code}/archive.zip",
]


def setup(workdir: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/pages.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def measure(client, url: str) -> tuple[float, int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm caches of templates and the parsed snapshot
    best, queries, status = float("inf"), 0, 0
    for _ in range(5):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url)
            best = min(best, time.perf_counter() - started)
        queries, status = len(captured), response.status_code
    return best * 1000, queries, status


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
                ms, queries, status = measure(client, url)
                print(f"  {ms:7.1f} ms  {queries:2d} queries  {status}  {url}")


if __name__ == "__main__":
    main()
