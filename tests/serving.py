"""What the tests that serve the site as production would share: the settings a development
run leaves in the environment (a production server must start without them), and waiting
for `make serve` to answer."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest

DEVELOPMENT_SWITCHES = ("SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "BAITBENCH_DEV",
                        "BAITBENCH_BEHIND_PROXY", "DATABASE_URL", "BAITBENCH_TEST_DB",
                        "BAITBENCH_TEST_SQLITE")
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
