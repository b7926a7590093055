"""The arena's rate limits under the documented production setup: several gunicorn workers
behind a proxy (BAITBENCH_BEHIND_PROXY=1) that forwards each visitor's address, counting in
one Redis cache (REDIS_URL)."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from baitbench_site.settings import BASE_DIR
from bench.arena import OPEN_ARENA
from tests.scratch import Database, free_port
from tests.serving import DEVELOPMENT_SWITCHES, wait_until_serving

pytestmark = pytest.mark.slow
WORKERS = 3
VOTERS_PER_HOUR = 30  # audits_app.arena.ratelimits.VOTERS_HARD


@pytest.fixture
def site_behind_proxy(tmp_path: Path, redis_url, migrated_sqlite_scratch, production_static):
    """Gunicorn's workers behind a proxy, on a copy of the session's migrated file database
    with arena.0 open (its `migrate` then has nothing left to do), serving the session's
    collected static files."""
    env = {name: value for name, value in os.environ.items() if name not in DEVELOPMENT_SWITCHES}
    env.update({
        "DATABASE_URL": Database(tmp_path, template=migrated_sqlite_scratch, sqlite=True).url,
        "REDIS_URL": redis_url,
        "BAITBENCH_CACHE_PREFIX": f"bb-test-{uuid.uuid4().hex[:8]}",
        "BAITBENCH_MEDIA_ROOT": str(tmp_path / "media"),
        "BAITBENCH_STATIC_ROOT": str(production_static),
    })
    subprocess.run([sys.executable, "manage.py", "shell", "-c", OPEN_ARENA], cwd=BASE_DIR,
                   env={**env, "BAITBENCH_DEV": "1"}, check=True, capture_output=True,
                   timeout=300)
    port = free_port()
    env.update({"SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
                "BAITBENCH_BEHIND_PROXY": "1", "BAITBENCH_BIND": f"127.0.0.1:{port}",
                "WEB_CONCURRENCY": str(WORKERS)})
    log = tmp_path / "gunicorn.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "baitbench_site.wsgi"], cwd=BASE_DIR, env=env,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        base_url = f"http://127.0.0.1:{port}"
        try:
            wait_until_serving(server, base_url, log)
            yield base_url
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


# One certificate store for every visitor's client: each client otherwise reads it anew
# (tens of milliseconds of CPU), most of this test's own time.
TLS = httpx.create_ssl_context()


def consent_from(base_url: str, address: str) -> int:
    """A new visitor at `address` (as the proxy forwards it) consents: the status code."""
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": address}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30, verify=TLS) as client:
        page = client.get("/arena/arena.0/")
        assert page.status_code == 200, page.text[:300]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        # The cookie is Secure (the visitor came over HTTPS): sent back by hand.
        cookie = page.cookies["csrftoken"]
        answer = client.post("/arena/arena.0/consent/", data={
            "agree": "on", "csrfmiddlewaretoken": token}, headers={
            "Cookie": f"csrftoken={cookie}", "Origin": base_url.replace("http:", "https:"),
            "Referer": f"{base_url.replace('http:', 'https:')}/arena/arena.0/"})
        return answer.status_code


def test_limits_count_each_forwarded_visitor_once_across_the_web_workers(site_behind_proxy):
    # A hundred visitors, each from their own address, a few at once (as many as the web
    # workers): none of them is anyone else's limit.
    with ThreadPoolExecutor(max_workers=WORKERS) as visitors:
        crowd = list(visitors.map(lambda number: consent_from(
            site_behind_proxy, f"198.51.100.{number}"), range(100)))
    # One address making new voters again and again: stopped at the hourly limit, whichever
    # worker answers.
    stuffer = [consent_from(site_behind_proxy, "203.0.113.7")
               for _ in range(VOTERS_PER_HOUR + 5)]

    assert crowd == [302] * 100
    assert stuffer == [302] * VOTERS_PER_HOUR + [429] * 5
