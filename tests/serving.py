"""What the tests that serve the site as production would share: the settings a development
run leaves in the environment (a production server must start without them), and waiting
for `make serve` to answer."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

DEVELOPMENT_SWITCHES = ("SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "BAITBENCH_DEV",
                        "BAITBENCH_BEHIND_PROXY", "DATABASE_URL", "BAITBENCH_TEST_DB",
                        "BAITBENCH_TEST_SQLITE")
ROOT = Path(__file__).resolve().parent.parent
# How long `make serve` may take to answer its first request (collectstatic, migrate).
START_SECONDS = 120


def wait_until_serving(server: subprocess.Popen, base_url: str, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"make serve exited with {server.returncode}:\n{log.read_text()}")
        try:
            httpx.get(f"{base_url}/", headers={"X-Forwarded-Proto": "https"}, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.5)
    pytest.fail(f"make serve did not answer within {START_SECONDS}s:\n{log.read_text()}")


def static_collect(directory: Path) -> Path:
    """Production's static files (hashed and compressed) collected into `directory` by
    `manage.py collectstatic` with production settings: about seven seconds, paid once a
    session by the tests that serve the site in production to test something else (the
    `production_static` fixture); `make serve`'s own test collects its own."""
    env = {name: value for name, value in os.environ.items() if name not in DEVELOPMENT_SWITCHES}
    env.update({"SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
                "BAITBENCH_STATIC_ROOT": str(directory)})
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
                   cwd=ROOT, env=env, check=True, timeout=300)
    return directory
