"""The documented production way to serve the site, started as the README says: `make serve`
runs gunicorn, and WhiteNoise serves the collected static files, with production settings."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from baitbench_site.settings import BASE_DIR
from tests.scratch import Database, free_port
from tests.serving import DEVELOPMENT_SWITCHES, wait_until_serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def production_site(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_scratch):
    """`make serve` on a loopback port, against a file database (a copy of the session's
    migrated one) holding release pub.0."""
    tmp_path = tmp_path_factory.mktemp("serve")
    if not shutil.which("make"):
        pytest.fail("`make` is missing: install it with `apt-get install -y make`")
    port = free_port()
    env = {name: value for name, value in os.environ.items() if name not in DEVELOPMENT_SWITCHES}
    env["DATABASE_URL"] = Database(tmp_path, template=migrated_sqlite_scratch, sqlite=True).url
    # The published release is written in development mode, as a test would; the server
    # then starts on the same database with nothing but production settings.
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         "from audits_app.tests.factories import published_release_create;"
         "published_release_create(code='pub.0')"],
        cwd=BASE_DIR, env={**env, "BAITBENCH_DEV": "1"}, check=True, capture_output=True,
        timeout=120)
    env.update({
        "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
        "BAITBENCH_BEHIND_PROXY": "1", "BAITBENCH_BIND": f"127.0.0.1:{port}",
        "BAITBENCH_STATIC_ROOT": str(tmp_path / "static"), "WEB_CONCURRENCY": "2",
    })
    log = (tmp_path / "serve.log").open("w")
    venv = Path(sys.executable).parent.parent
    server = subprocess.Popen(["make", "--no-print-directory", "serve", f"VENV={venv}"],
                              cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(server, base_url, tmp_path / "serve.log")
        # As the TLS proxy in front would say: the visitor came over HTTPS.
        with httpx.Client(base_url=base_url, headers={"X-Forwarded-Proto": "https"},
                          timeout=30) as client:
            yield client
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def test_make_serve_serves_a_release_page_and_static_files(production_site):
    page = production_site.get("/releases/pub.0/")
    login = production_site.get("/admin/login/")
    css_url = re.search(r'href="(/static/admin/css/base\.[0-9a-f]{12}\.css)"', login.text)
    hashed_css = production_site.get(css_url.group(1), headers={"Accept-Encoding": "gzip"})
    plain_css = production_site.get("/static/admin/css/base.css")

    assert page.status_code == 200 and page.headers["server"] == "gunicorn"
    assert "pub.0" in page.text and "<table" in page.text
    assert "max-age=31536000" in page.headers["strict-transport-security"]
    assert login.status_code == 200
    assert hashed_css.status_code == 200
    assert hashed_css.headers["content-type"].startswith("text/css")
    assert hashed_css.headers["content-encoding"] == "gzip"
    assert "immutable" in hashed_css.headers["cache-control"]  # hashed: cached for good
    assert plain_css.status_code == 200 and "body" in plain_css.text


def test_make_serve_redirects_plain_http_and_shows_its_own_error_pages(production_site):
    plain = httpx.get(f"{production_site.base_url}/releases/pub.0/", timeout=10)
    missing = production_site.get("/releases/no-such.0/")

    assert plain.status_code == 301
    port = production_site.base_url.port
    assert plain.headers["location"] == f"https://127.0.0.1:{port}/releases/pub.0/"
    assert missing.status_code == 404
    assert "No published release with this code." in missing.text
    assert 'href="/api/v1/docs/"' in missing.text
