"""The leaderboard in a real browser: Debian's Chromium, headless, against the live server."""

from __future__ import annotations

import copy

import pytest
from playwright.sync_api import expect

from audits_app.tests.factories import published_release_create
from tests.browser import ARTIFACTS, watch
from tests.kept import rows_counted, world_served

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def kept_world(request, django_db_setup, django_db_blocker):
    """Published once for the module (tests/kept.py): the tests only read it, through the live
    server. Written before Playwright starts: its event loop makes the ORM refuse to run."""
    yield from world_served(request, django_db_blocker,
                            lambda: published_release_create(code="pub.0", model_count=6))


@pytest.fixture
def world(kept_world, db):
    before = rows_counted()
    yield copy.deepcopy(kept_world)
    assert rows_counted() == before, "a test changed the release the others read"


@pytest.fixture
def browser_page(world, chromium):
    return chromium(1200, 900)


def test_leaderboard_renders_one_dot_per_model_without_console_errors(
    world, browser_page, served_live_server
):
    errors: list[str] = []
    browser_page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    browser_page.on("pageerror", lambda error: errors.append(str(error)))

    response = browser_page.goto(f"{served_live_server.url}/releases/pub.0/")

    assert response is not None and response.status == 200
    dots = browser_page.locator("figure.chart svg circle[data-model]")
    assert dots.count() == len(world.snapshot["models"])
    assert browser_page.locator('figure.chart.main svg [data-anchor="control"]').count() == 1
    # One table per measure the release publishes, each with a row per model.
    measures = world.snapshot["method"]["measures"]
    assert browser_page.locator("table.ranks").count() == len(measures)
    assert not errors, errors
    ARTIFACTS.mkdir(exist_ok=True)
    browser_page.screenshot(path=str(ARTIFACTS / "release-page.png"), full_page=True)
    browser_page.locator("figure.chart").screenshot(path=str(ARTIFACTS / "release-chart.png"))




def api_operations() -> set[str]:
    """Every path the project's own OpenAPI schema declares: the docs must list them all."""
    from drf_spectacular.generators import SchemaGenerator

    return set(SchemaGenerator().get_schema(request=None, public=True)["paths"])

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def test_api_docs_list_every_operation_from_the_sites_own_files(browser_page, served_live_server):
    errors, hosts = watch(browser_page)

    response = browser_page.goto(f"{served_live_server.url}/api/v1/docs/")
    browser_page.locator(".opblock-summary-path").first.wait_for(timeout=15_000)
    browser_page.wait_for_load_state("networkidle")

    assert response is not None and response.status == 200
    paths = browser_page.locator(".opblock-summary-path").evaluate_all(
        "nodes => nodes.map(node => node.dataset.path)")
    assert set(paths) == api_operations()
    assert hosts <= LOOPBACK, hosts
    assert not errors, errors
    ARTIFACTS.mkdir(exist_ok=True)
    browser_page.screenshot(path=str(ARTIFACTS / "api-docs.png"), full_page=True)


def test_the_browsable_api_renders_a_list_in_the_browser(world, browser_page, served_live_server):
    errors, hosts = watch(browser_page)

    response = browser_page.goto(f"{served_live_server.url}/api/v1/releases/pub.0/texts/?limit=5")

    assert response is not None and response.status == 200
    assert "fixture/candid" in browser_page.locator(".response-info").inner_text()
    assert browser_page.locator(".pagination").count() == 1
    assert hosts <= LOOPBACK, hosts
    assert not errors, errors


def test_the_link_tables_render_with_coverage_and_refusal(world, browser_page, served_live_server):
    errors, hosts = watch(browser_page)

    response = browser_page.goto(f"{served_live_server.url}/releases/pub.0/#ranks")

    assert response is not None and response.status == 200
    for measure in world.snapshot["method"]["measures"]:
        key = measure["key"]
        table = browser_page.locator(f'table.ranks[data-metric="{key}"]')
        assert table.is_visible(), measure["key"]
        assert table.locator("caption").inner_text() == measure["label"]
        assert table.locator("tbody tr").count() == len(world.snapshot["models"])
        headers = table.locator("thead th").all_inner_texts()
        assert headers[-2:] == ["Coverage", "Refused"], headers
        refuser = table.locator("tbody tr", has_text="Refuser (fixture)")
        assert refuser.locator("td").last.inner_text() == "25 %", measure["key"]
    # The class tables per text type, the anchors and the method are rendered too, each
    # folded until its jump link opens it.
    assert browser_page.locator("table.split").count() == 2 + 4  # T1, T2 and C0-C3
    assert not browser_page.locator("table.anchors").is_visible()
    # The methods show the release's own error rates, or (an older snapshot) the fixed table.
    for section, shown in (("anchors", "table.anchors"),
                           ("methods", "#error-rates, #small-sample table")):
        browser_page.locator(f"nav.toc a[href='#{section}']").click()
        # The section opens on the hashchange event, after the click returns: wait for it.
        expect(browser_page.locator(shown).first).to_be_visible()
    assert hosts <= LOOPBACK, hosts
    assert not errors, errors
    ARTIFACTS.mkdir(exist_ok=True)
    browser_page.locator('table.ranks[data-metric="omission"]').screenshot(
        path=str(ARTIFACTS / "release-link-table.png"))
    browser_page.screenshot(path=str(ARTIFACTS / "release-page-links.png"), full_page=True)
