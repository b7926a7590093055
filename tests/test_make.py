"""`make test` brings what the tests need besides Python, or stops saying what is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from django.conf import settings

MAKE = shutil.which("make") or "/usr/bin/make"


def make(*args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"PATH": path} if path else {})}
    return subprocess.run([MAKE, "-s", "-C", str(settings.BASE_DIR), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_tests_tools_are_left_alone_when_present():
    result = make("test-tools", "CHROMIUM=/bin/sh", "REDIS_SERVER=/bin/sh")
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""


def test_a_missing_browser_that_cannot_be_installed_stops_make_test_loudly(tmp_path: Path):
    # A machine with neither apt-get nor sudo on its PATH.
    (tmp_path / "id").symlink_to(shutil.which("id"))
    result = make("test-tools", "CHROMIUM=/nonexistent/chromium", path=str(tmp_path))
    assert result.returncode != 0
    assert "make: error: /nonexistent/chromium is missing" in result.stderr
    assert "install chromium" in result.stderr or "apt-get install chromium" in result.stderr


def test_make_test_asks_for_the_tools_first():
    dry_run = make("-n", "test", "CHROMIUM=/bin/sh", "REDIS_SERVER=/bin/sh",
                   "BIN=/nonexistent-venv/bin")
    assert "/bin/sh" in dry_run.stdout and "pytest" in dry_run.stdout
    assert dry_run.stdout.index('[ ! -x "/bin/sh" ]') < dry_run.stdout.index("pytest")


def test_make_demo_serves_on_the_port_asked_for_and_prints_its_links_for_it():
    dry_run = make("-n", "demo", "PORT=8001", "BIN=/nonexistent-venv/bin")
    assert "manage.py demo --port 8001" in dry_run.stdout
    assert "runserver 127.0.0.1:8001" in dry_run.stdout
    default = make("-n", "demo", "BIN=/nonexistent-venv/bin")
    assert "runserver 127.0.0.1:8000" in default.stdout
