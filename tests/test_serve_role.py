"""The site served as a PostgreSQL role that owns no table (README, "A database role that
cannot alter tables"): it answers as usual, and that role can neither turn a guard off nor
change a published row."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection

from audits_app.tests.factories import published_release_create
from baitbench_site.settings import BASE_DIR
from tests.scratch import free_port
from tests.serving import DEVELOPMENT_SWITCHES, wait_until_serving

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
    reason="database roles are PostgreSQL's (make test-pg)")]

GRANTS = """
GRANT CONNECT ON DATABASE "{database}" TO {role};
GRANT USAGE ON SCHEMA public TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role};
"""


@pytest.fixture
def web_role(transactional_db):
    """A role with the README's grants on the test database (the suite's role owns it)."""
    role = f"bb_web_{uuid.uuid4().hex[:8]}"
    database = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {role} LOGIN")
        cursor.execute(GRANTS.format(database=database, role=role))
    yield f"postgres://{role}@127.0.0.1:5432/{database}", role
    with connection.cursor() as cursor:
        cursor.execute(f"DROP OWNED BY {role}")
        cursor.execute(f"DROP ROLE {role}")


def as_role(url: str, sql: str) -> str:
    """Run `sql` as the role: "ok", or the error PostgreSQL answered with."""
    import psycopg

    try:
        with psycopg.connect(url.replace("postgres://", "postgresql://")) as conn:
            conn.execute(sql)
    except psycopg.Error as error:
        return str(error).splitlines()[0]
    return "ok"


def test_the_site_served_as_a_role_that_owns_no_table(web_role, tmp_path: Path):
    url, role = web_role
    published_release_create(code="pub.0")
    env = {name: value for name, value in os.environ.items() if name not in DEVELOPMENT_SWITCHES}
    port = free_port()
    env.update({"DATABASE_URL": url, "SECRET_KEY": secrets.token_urlsafe(50),
                "ALLOWED_HOSTS": "127.0.0.1", "BAITBENCH_BEHIND_PROXY": "1",
                "BAITBENCH_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "2",
                "BAITBENCH_STATIC_ROOT": str(tmp_path / "static")})
    log = tmp_path / "serve.log"
    venv = Path(sys.executable).parent.parent
    with log.open("w") as out:
        server = subprocess.Popen(
            ["make", "--no-print-directory", "serve", "MIGRATE=0", f"VENV={venv}"],
            cwd=BASE_DIR, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        base_url = f"http://127.0.0.1:{port}"
        try:
            wait_until_serving(server, base_url, log)
            page = httpx.get(f"{base_url}/releases/pub.0/",
                             headers={"X-Forwarded-Proto": "https"}, timeout=30)
            api = httpx.get(f"{base_url}/api/v1/releases/pub.0/leaderboard/",
                            headers={"X-Forwarded-Proto": "https"}, timeout=30)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)

    assert page.status_code == 200 and "pub.0" in page.text
    assert api.status_code == 200
    for sql in ("ALTER TABLE runs_app_textscore DISABLE TRIGGER USER",
                "DROP TRIGGER baitbench_guard_runs_app_textscore ON runs_app_textscore",
                "ALTER TABLE audits_app_publication DISABLE TRIGGER ALL",
                "DROP TABLE audits_app_publication"):
        assert as_role(url, sql).startswith("must be owner of"), sql
    assert "refused" in as_role(url, "UPDATE audits_app_publication SET snapshot_hash = 'x'")
    assert "refused" in as_role(url, "UPDATE runs_app_generation SET text = 'rewritten'")
