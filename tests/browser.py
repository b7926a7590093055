"""What the browser tests share: Debian's Chromium (`make test` installs it), where their
screenshots go, and what they look for in a page. The `chromium` fixture (conftest.py) gives
a test pages of one headless Chromium."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
# BAITBENCH_CHROMIUM names another binary.
CHROMIUM = os.environ.get("BAITBENCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = ROOT / "test-artifacts"
PASSWORD = "a long browser test password"
NO_SIDEWAYS_SCROLL = "() => document.documentElement.scrollWidth <= window.innerWidth"


def chromium_required() -> None:
    """Fail the test, saying how to get it, when Chromium is not installed."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install -y chromium` "
                    f"(`make test` does)")


def chromium_launch(playwright):
    chromium_required()
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def watch(page) -> tuple[list[str], set[str]]:
    """Console errors and the host of every request the page makes."""
    errors: list[str] = []
    hosts: set[str] = set()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: hosts.add(urlsplit(request.url).hostname or ""))
    return errors, hosts


def shot(page, name: str, *, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=full_page)


def axe_violations(page) -> list[str]:
    """What axe-core finds in the page: each violation's rule and its first three places."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [f"{item['id']}: {[node['target'] for node in item['nodes']][:3]}"
            for item in results.response["violations"]]


def staff_user(role: str):
    """A staff user of `role` (one of the five) who logs in with PASSWORD."""
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(f"{role}-b", password=PASSWORD, is_staff=True,
                                    is_superuser=role == "superuser")
    if role != "superuser":
        user.groups.add(Group.objects.get(name=role))
    return user


def log_in(page, base: str, user) -> None:
    """Through the admin's login form, with PASSWORD."""
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("input[type=submit]")
