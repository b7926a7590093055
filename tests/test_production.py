"""Production settings: what the site refuses to start on, and what `check --deploy` says.

Settings are read once per process, so each production case runs `manage.py` in a subprocess
with an environment of its own (the tests themselves run with BAITBENCH_DEV=1).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from baitbench_site.production import DEVELOPMENT_KEY, unsafe_setting
from baitbench_site.settings import BASE_DIR, database_from_url
from tests.serving import DEVELOPMENT_SWITCHES

# The README's "Production" settings, as an operator would set them.
PRODUCTION_ENV = {
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "baitbench.example.org",
    "BAITBENCH_BEHIND_PROXY": "1",
}
# Everything that could make a subprocess think it is in development, or leak this run's DB.
def production_environment(tmp_path: Path, **overrides: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in DEVELOPMENT_SWITCHES}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'production.sqlite3'}"
    env.update(overrides)
    return {name: value for name, value in env.items() if value is not None}


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=120)


def test_production_without_a_key_refuses_to_start_with_one_line(tmp_path):
    result = manage(production_environment(tmp_path), "check")

    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith("error: SECRET_KEY is unset: set SECRET_KEY to a long random")
    assert "Traceback" not in result.stderr


def test_production_refuses_the_development_key_and_any_host(tmp_path):
    on_development_key = manage(production_environment(tmp_path, **{
        **PRODUCTION_ENV, "SECRET_KEY": DEVELOPMENT_KEY}), "check")
    on_any_host = manage(production_environment(tmp_path, **{
        **PRODUCTION_ENV, "ALLOWED_HOSTS": "baitbench.example.org,*"}), "migrate")

    assert on_development_key.returncode != 0
    assert on_development_key.stderr.strip() == (
        "error: SECRET_KEY is the published development key: set SECRET_KEY to a long random "
        "value (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(50))'`)")
    assert on_any_host.returncode != 0
    assert on_any_host.stderr.strip().startswith(
        "error: ALLOWED_HOSTS=* accepts any Host header: set ALLOWED_HOSTS to")
    assert not (tmp_path / "production.sqlite3").exists()  # refused before touching anything


def test_development_switch_starts_without_a_key(tmp_path):
    result = manage(production_environment(tmp_path, BAITBENCH_DEV="1"), "check")

    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_the_demo_is_development_by_itself(tmp_path):
    result = manage(production_environment(tmp_path), "demo", "--help")

    assert result.returncode == 0, result.stderr
    assert "publish it" in result.stdout


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    result = manage(production_environment(tmp_path, **PRODUCTION_ENV),
                    "check", "--deploy", "--fail-level", "WARNING")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_readme_lists_every_production_setting():
    readme = (BASE_DIR / "README.md").read_text()
    production = readme[readme.index("## Production"):]
    for name in [*PRODUCTION_ENV, "DATABASE_URL", "REDIS_URL", "BAITBENCH_BIND",
                 "WEB_CONCURRENCY", "BAITBENCH_STAFF_SESSION_SECONDS", "SESSION_COOKIE_AGE",
                 "BAITBENCH_LOGIN_FAILURES", "BAITBENCH_LOGIN_COOLOFF_MINUTES",
                 "SECURE_HSTS_SECONDS", "CSRF_TRUSTED_ORIGINS", "make serve"]:
        assert name in production, name


@pytest.mark.parametrize(("secret_key", "allowed_hosts", "names"), [
    ("", ["example.org"], "SECRET_KEY is unset"),
    (DEVELOPMENT_KEY, ["example.org"], "SECRET_KEY is the published development key"),
    ("x" * 60, ["example.org"], "SECRET_KEY is too weak (60 characters)"),
    ("short-but-varied", ["example.org"], "SECRET_KEY is too weak (16 characters)"),
    (PRODUCTION_ENV["SECRET_KEY"], ["example.org", " * "], "ALLOWED_HOSTS=*"),
], ids=["unset", "development-key", "one-character", "short", "any-host"])
def test_each_unsafe_setting_is_named(secret_key, allowed_hosts, names):
    problem = unsafe_setting(secret_key=secret_key, allowed_hosts=allowed_hosts)

    assert problem is not None and problem.startswith(names)
    assert "\n" not in problem


def test_safe_production_settings_pass():
    assert unsafe_setting(secret_key=PRODUCTION_ENV["SECRET_KEY"],
                          allowed_hosts=["baitbench.example.org", ".example.org"]) is None


def test_tests_run_in_development_with_plain_static_files():
    assert settings.DEVELOPMENT
    assert settings.STORAGES["staticfiles"]["BACKEND"].endswith("StaticFilesStorage")


def test_production_static_storage_keeps_each_manifest_url(tmp_path, settings):
    """Production's storage works out a file's hashed URL once per process, the same URL as
    WhiteNoise's own storage; a name the manifest lacks is refused each time, not kept."""
    import json

    from whitenoise.storage import CompressedManifestStaticFilesStorage as WhiteNoiseStorage

    from baitbench_site.static_storage import CompressedManifestStaticFilesStorage

    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path
    (tmp_path / "staticfiles.json").write_text(json.dumps(
        {"version": "1.1", "paths": {"js/a.js": "js/a.0123456789ab.js"}, "hash": "x"}))
    storage, plain = CompressedManifestStaticFilesStorage(), WhiteNoiseStorage()

    assert storage.url("js/a.js") == plain.url("js/a.js") == "/static/js/a.0123456789ab.js"
    assert storage.url("js/a.js") == "/static/js/a.0123456789ab.js"
    assert storage._urls == {"js/a.js": "/static/js/a.0123456789ab.js"}
    for _ in range(2):
        with pytest.raises(ValueError):
            storage.url("js/missing.js")
    assert "js/missing.js" not in storage._urls


# ---------------------------------------------------------------------------------------
# DATABASE_URL, parsed by dj-database-url with the project's own rules on top
# ---------------------------------------------------------------------------------------


def test_sqlite_url_is_relative_to_the_project_and_keeps_its_concurrency_options(monkeypatch):
    monkeypatch.setenv("BAITBENCH_TEST_SQLITE", "/tmp/test-name.sqlite3")

    relative = database_from_url("sqlite:///var/x.db")
    absolute = database_from_url("sqlite:////tmp/elsewhere/x.db")

    assert relative["ENGINE"] == "django.db.backends.sqlite3"
    assert relative["NAME"] == str(BASE_DIR / "var" / "x.db")
    assert absolute["NAME"] == "/tmp/elsewhere/x.db"
    assert relative["OPTIONS"] == {
        "transaction_mode": "IMMEDIATE", "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}
    assert relative["TEST"] == {"NAME": "/tmp/test-name.sqlite3"}
    assert database_from_url("sqlite:///var/x.db?timeout=5")["OPTIONS"]["timeout"] == 5


def test_postgres_url_is_parsed_with_quoting_options_and_the_test_name(monkeypatch):
    monkeypatch.setenv("BAITBENCH_TEST_DB", "test_prod")

    config = database_from_url(
        "postgres://bait%40user:p%40ss%2Fword@db.internal:6543/baitbench?sslmode=require")

    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["USER"], config["PASSWORD"]) == ("bait@user", "p@ss/word")
    assert (config["HOST"], int(config["PORT"]), config["NAME"]) == (
        "db.internal", 6543, "baitbench")
    assert config["OPTIONS"] == {"sslmode": "require"}
    assert config["CONN_MAX_AGE"] == 0
    assert config["TEST"] == {"NAME": "test_prod"}
    assert database_from_url("postgresql://localhost/x")["ENGINE"].endswith("postgresql")


def test_an_unsupported_database_url_names_the_scheme():
    with pytest.raises(ValueError, match=re.escape("DATABASE_URL: unsupported scheme 'mysql'")):
        database_from_url("mysql://user@localhost/baitbench")
