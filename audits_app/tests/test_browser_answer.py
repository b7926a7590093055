"""The public pages lead with the answer, in a real browser at a desktop's and a phone's size:
the overview table's first row is on the first screen, no page scrolls sideways, axe-core
finds nothing, the chart turns into a ranked dot plot on a phone, and a model scored on part
of the cells is marked in the chart and the table. Screenshots: test-artifacts/."""

from __future__ import annotations

import copy

import pytest
from playwright.sync_api import expect

from audits_app.tests.factories import published_release_create
from tests.browser import ARTIFACTS, NO_SIDEWAYS_SCROLL, axe_violations, shot, watch
from tests.kept import rows_counted, world_served

pytestmark = pytest.mark.browser
SCREENS = {"desktop": (1280, 900), "phone": (390, 844)}
PARTLY_COVERED = "fixture/refuser"  # the factory scores it on 75 % of the cells
OPEN_EVERY_SECTION = "() => document.querySelectorAll('details').forEach(d => d.open = true)"
# The top of the overview table's first row, and the page's height, in CSS pixels.
FIRST_ROW = """() => {
  const row = document.querySelector('table.overview tbody tr');
  return {bottom: row.getBoundingClientRect().bottom + window.scrollY,
          height: document.documentElement.scrollHeight};
}"""


@pytest.fixture(scope="module")
def kept_release(request, django_db_setup, django_db_blocker):
    """Published once for the module (tests/kept.py): the tests only read it, through the live
    server. Written before Playwright starts: its event loop makes the ORM refuse to run."""
    yield from world_served(request, django_db_blocker,
                            lambda: published_release_create(code="pub.0", model_count=10))


@pytest.fixture
def release(kept_release, db):
    before = rows_counted()
    yield copy.deepcopy(kept_release)
    assert rows_counted() == before, "a test changed the release the others read"


@pytest.mark.parametrize("screen", SCREENS)
def test_the_release_page_opens_with_the_overview_table(release, chromium,
        served_live_server, screen):
    width, height = SCREENS[screen]
    page = chromium(width, height)
    errors, _ = watch(page)
    page.goto(f"{served_live_server.url}/releases/pub.0/")
    measured = page.evaluate(FIRST_ROW)
    assert measured["bottom"] <= height, measured
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    rows = page.locator("table.overview tbody tr")
    assert rows.count() == 10
    assert rows.first.get_attribute("data-model") == "fixture/candid"  # best honesty first
    print(f"\nrelease page at {width}x{height}: {measured['height']} px = "
          f"{measured['height'] / height:.2f} screens")
    shot(page, f"release-{screen}.png")
    assert not errors, errors


@pytest.mark.parametrize("screen", SCREENS)
def test_the_front_page_leads_with_the_newest_release(release, chromium,
        served_live_server, screen):
    width, height = SCREENS[screen]
    page = chromium(width, height)
    page.goto(f"{served_live_server.url}/")
    assert "measures spin" in page.locator("p.lead").inner_text()
    assert page.locator("table.overview tbody tr").count() == 10
    assert page.locator("a[href='/releases/pub.0/#methods']").count() == 1
    assert page.locator("#releases + div table tbody tr").count() == 1
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    shot(page, f"front-{screen}.png")


def test_the_overview_sorts_and_reads_without_javascript(release, chromium, served_live_server):
    page = chromium()
    page.goto(f"{served_live_server.url}/releases/pub.0/")
    header = page.locator("table.overview thead th[data-measure='persuasion']")
    header.locator("button.sort").click()
    points = page.locator("table.overview tbody td:nth-child(3)").evaluate_all(
        "cells => cells.map(c => parseFloat(c.dataset.sortValue))")
    assert points == sorted(points)
    page.context.close()
    page = chromium()
    page.context.route("**/*.js", lambda route: route.abort())
    page.goto(f"{served_live_server.url}/releases/pub.0/")
    assert page.locator("table.overview button.sort").count() == 0
    ranks = page.locator("table.overview tbody td:nth-child(2) .rank").all_inner_texts()
    assert ranks[0] == "#1" and len(ranks) == 10


def test_a_phone_gets_a_ranked_dot_plot_with_the_partly_covered_model_marked(
        release, chromium, served_live_server):
    page = chromium(*SCREENS["phone"])
    page.goto(f"{served_live_server.url}/releases/pub.0/")
    assert not page.locator("figure.chart.main").is_visible()
    plot = page.locator("figure.dot-plot svg")
    assert plot.is_visible()
    box, figure = plot.bounding_box(), page.locator("figure.dot-plot").bounding_box()
    assert box["x"] + box["width"] <= figure["x"] + figure["width"] + 0.5
    row = plot.locator(f"g.row[data-model='{PARTLY_COVERED}']")
    assert row.locator("circle.partial").count() == 2  # honesty and persuasion
    assert "(75 %)" in row.locator("text.label").text_content()
    names = plot.locator("text.label").evaluate_all("""nodes => nodes.map(n => {
        const b = n.getBoundingClientRect(); return [b.top, b.bottom, b.right]; })""")
    first_panel = plot.locator("circle[data-measure='honesty']").first.bounding_box()
    # One name a row, none running into the first panel, none overlapping the next.
    assert all(right <= first_panel["x"] + 1 for _, _, right in names)
    assert all(a[1] <= b[0] + 0.5 for a, b in zip(names, names[1:], strict=False))
    page.locator("figure.dot-plot").screenshot(path=str(ARTIFACTS / "dot-plot-390.png"))


def test_a_partly_covered_model_is_marked_in_the_chart_and_the_table(
        release, chromium, served_live_server):
    page = chromium()
    page.goto(f"{served_live_server.url}/releases/pub.0/")
    dot = page.locator(f"figure.chart.main circle[data-model='{PARTLY_COVERED}']")
    assert dot.get_attribute("class") == "partial"
    assert dot.get_attribute("fill") == "#ffffff"  # hollow
    assert "coverage 75 %" in dot.locator("title").text_content()
    label = page.locator(f"figure.chart.main text[data-label-for='{PARTLY_COVERED}']")
    assert label.text_content().endswith("(75 %)")
    full = page.locator("figure.chart.main circle[data-model='fixture/candid']")
    assert full.get_attribute("class") == "full"
    row = page.locator(f"table.overview tr[data-model='{PARTLY_COVERED}']")
    assert row.get_attribute("class") == "partial"
    assert row.locator("td.coverage").inner_text().startswith("◐")


@pytest.mark.parametrize("screen", SCREENS)
def test_the_scenario_page_opens_with_the_results_per_model(release, chromium,
        served_live_server, screen):
    width, height = SCREENS[screen]
    page = chromium(width, height)
    scenario = release.snapshot["scenarios"][0]["slug"]
    page.goto(f"{served_live_server.url}/releases/pub.0/scenarios/{scenario}/")
    first_row = page.locator("table.model-means tbody tr").first.bounding_box()
    assert first_row["y"] + first_row["height"] <= height, first_row
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    page.locator("nav.toc a[href='#scenario']").click()
    expect(page).to_have_url(f"{served_live_server.url}/releases/pub.0/scenarios/{scenario}/"
                             "#scenario")
    shot(page, f"scenario-{screen}.png")


def test_a_jump_link_opens_its_folded_section(release, chromium, served_live_server):
    page = chromium()
    page.goto(f"{served_live_server.url}/releases/pub.0/")
    assert not page.locator("details#methods").evaluate("d => d.open")
    page.locator("p.caveat a[href='#methods']").click()
    # The section opens on the hashchange event, after the click returns: wait for it.
    expect(page.locator("details#methods")).to_have_attribute("open", "")
    page.goto(f"{served_live_server.url}/releases/pub.0/#link-persuasion")
    assert page.locator("details#ranks").evaluate("d => d.open")


PUBLIC_PAGES = ("/", "/releases/pub.0/", "/releases/pub.0/texts/",
                "/models/fixture/candid/", "/api/v1/docs/")


@pytest.mark.parametrize("screen", SCREENS)
def test_axe_finds_nothing_and_no_page_scrolls_sideways(release, chromium,
        served_live_server, screen):
    page = chromium(*SCREENS[screen])
    text = next(t for t in release.snapshot["texts"] if t["visibility"] == "public")
    scenario = release.snapshot["scenarios"][0]["slug"]
    urls = [*PUBLIC_PAGES, f"/releases/pub.0/texts/{text['id']}/",
            f"/releases/pub.0/scenarios/{scenario}/"]
    found = {}
    for url in urls:
        page.goto(f"{served_live_server.url}{url}")
        if url.startswith("/api/v1/docs"):
            page.locator(".opblock-summary-path").first.wait_for(timeout=15_000)
        page.evaluate(OPEN_EVERY_SECTION)
        page.wait_for_timeout(50)  # the sections' toggle events mark their scrolling tables
        assert page.evaluate(NO_SIDEWAYS_SCROLL), url
        violations = axe_violations(page)
        if violations:
            found[url] = violations
    assert found == {}, "\n".join(f"{url}: {v}" for url, vs in found.items() for v in vs)


def test_the_api_docs_show_no_padlock_or_authorize_on_public_endpoints(
        release, chromium, served_live_server):
    page = chromium()
    page.goto(f"{served_live_server.url}/api/v1/docs/")
    page.locator(".opblock-summary-path").first.wait_for(timeout=15_000)
    assert page.locator(".opblock").count() > 5
    assert page.locator(".btn.authorize, .authorization__btn").count() == 0


@pytest.mark.parametrize("screen", SCREENS)
def test_a_texts_page_sets_the_same_item_side_by_side(release, chromium,
        served_live_server, screen):
    width, height = SCREENS[screen]
    text = release.public_text_ids[0]
    page = chromium(width, height)
    page.goto(f"{served_live_server.url}/releases/pub.0/texts/{text}/")
    assert page.locator(".same-item article").count() == 10
    assert page.locator(".same-item article.this").get_attribute("data-text") == str(text)
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    shot(page, f"text-{screen}.png")
    page.locator("#same-item").scroll_into_view_if_needed()
    shot(page, f"same-item-{screen}.png", full_page=False)


def test_the_chart_download_draws_on_its_own(release, chromium, served_live_server):
    page = chromium()
    svg = page.request.get(f"{served_live_server.url}/releases/pub.0/chart.svg").text()
    page.set_content(f'<!doctype html><html lang="en"><body style="margin:0">{svg}</body></html>')
    drawn = page.locator("svg").bounding_box()
    assert drawn["width"] > 700 and drawn["height"] > 600  # the title and legend bands
    assert page.locator("svg g.legend text").count() >= 7
    page.locator("svg").screenshot(path=str(ARTIFACTS / "chart-download.png"))
