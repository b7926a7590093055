"""The calibration figure in a real browser (Debian's Chromium), with a screenshot."""

from __future__ import annotations

import pytest

from audits_app.tests.calibration_world import publish
from tests.browser import ARTIFACTS

pytestmark = pytest.mark.browser


@pytest.fixture
def small_demo_release(transactional_db):
    """Made for each test: a live-server test cannot run inside a kept world."""
    from tests.world import shipped_scenarios_import, small_demo_release_create

    shipped_scenarios_import()
    return small_demo_release_create()


@pytest.fixture
def calibrated(small_demo_release):
    """Made for each test, as its release is (audits_app/tests/conftest.py keeps its own)."""
    from audits_app.tests.calibration_world import calibrated_create

    return calibrated_create(small_demo_release)


@pytest.fixture
def published(calibrated):  # noqa: F811
    # Written before Playwright starts: its event loop makes the ORM refuse to run.
    release, _ = calibrated
    publish(release)
    return release


def test_the_calibration_figure_renders_with_a_dot_per_model_and_panel(published, live_server,
                                                                       chromium):
    errors: list[str] = []
    page = chromium(1200, 900)
    page.on("pageerror", lambda error: errors.append(str(error)))
    response = page.goto(f"{live_server.url}/releases/{published.code}/")
    assert response is not None and response.status == 200
    figure = page.locator("figure.calibration-figure")
    assert figure.locator("svg circle[data-model]").count() == 8
    assert figure.locator("svg g.calibration-panel").count() == 2
    # After the answer (overview and chart), before the folded detail.
    y = figure.bounding_box()["y"]
    assert page.locator("#chart").bounding_box()["y"] < y < page.locator(
        "#ranks").bounding_box()["y"]
    ARTIFACTS.mkdir(exist_ok=True)
    figure.screenshot(path=str(ARTIFACTS / "calibration-figure.png"))
    assert not errors, errors
