"""The leaderboard in a real browser: Debian's Chromium, headless, against the live server."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings

from audits_app.tests.factories import published_release_create

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.browser


@pytest.fixture
def world(transactional_db):
    # Written before Playwright starts: its event loop makes the ORM refuse to run.
    return published_release_create(code="pub.0", model_count=6)


@pytest.fixture
def browser_page(world):
    from playwright.sync_api import sync_playwright

    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install -y chromium`")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        yield page
        browser.close()


def test_leaderboard_renders_one_dot_per_model_without_console_errors(
    world, browser_page, live_server
):
    errors: list[str] = []
    browser_page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    browser_page.on("pageerror", lambda error: errors.append(str(error)))

    response = browser_page.goto(f"{live_server.url}/releases/pub.0/")

    assert response is not None and response.status == 200
    dots = browser_page.locator("figure.chart svg circle[data-model]")
    assert dots.count() == len(world.snapshot["models"])
    assert browser_page.locator('svg [data-anchor="control"]').count() == 1
    assert browser_page.locator("table.ranks").count() == 3
    assert not errors, errors
    ARTIFACTS.mkdir(exist_ok=True)
    browser_page.screenshot(path=str(ARTIFACTS / "release-page.png"), full_page=True)
    browser_page.locator("figure.chart").screenshot(path=str(ARTIFACTS / "release-chart.png"))
