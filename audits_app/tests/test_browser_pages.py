"""Staff and public pages in a real browser: each role's landing page and navigation after the
real login form, publishing with its confirmation, the compare page, the release page on a
390 px screen, and the chart's labels with 10 and 50 models. Screenshots: test-artifacts/."""

from __future__ import annotations

import copy

import pytest
from django.conf import settings

from audits_app.tests import factories
from audits_app.tests.factories import published_release_create
from runs_app.models import Release, ReleaseStatus
from tests.browser import ARTIFACTS, NO_SIDEWAYS_SCROLL, log_in, shot, staff_user, watch
from tests.kept import rows_counted, world_served

pytestmark = pytest.mark.browser
LANDING = {"curator": "/admin/scenarios_app/scenario/", "operator": "/runs/",
           "auditor": "/review/", "publisher": "/publish/", "superuser": "/admin/"}
NAV = {"curator": ["scenarios", "admin"], "operator": ["scenarios", "runs", "admin"],
       "auditor": ["scenarios", "review", "admin"],
       "publisher": ["scenarios", "publish", "admin"],
       "superuser": ["scenarios", "runs", "review", "publish", "admin"]}
# Intersecting label boxes, measured in the page (CSS pixels).
OVERLAPS = """() => {
  const boxes = [...document.querySelectorAll('figure.chart svg text.label')].map(t => {
    const b = t.getBoundingClientRect();
    return {name: t.textContent, left: b.left, top: b.top, right: b.right, bottom: b.bottom};
  });
  const svg = document.querySelector('figure.chart svg').getBoundingClientRect();
  const outside = boxes.filter(b => b.left < svg.left || b.right > svg.right + 0.5
                                    || b.top < svg.top || b.bottom > svg.bottom + 0.5);
  const pairs = [];
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
      pairs.push([a.name, b.name]);
  }));
  return {count: boxes.length, pairs, outside: outside.map(b => b.name)};
}"""


@pytest.fixture
def imported_scenarios(transactional_db):
    """Imported for each test: a live-server test cannot run inside a kept world."""
    from tests.world import shipped_scenarios_import

    return shipped_scenarios_import()


@pytest.fixture
def ready_release(transactional_db, imported_scenarios):
    """stats.0 scored and waiting for a publisher (the spot-check gate asks for nothing)."""
    import importlib

    from django.apps import apps

    from audits_app.tests.stats_world import SCENARIOS, build_world

    # A transactional test empties the tables after it, seeded task briefs and overlays too.
    importlib.import_module("scenarios_app.migrations.0002_seed_tasks_conditions").seed(
        apps, None)
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create

    data = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    data.update(code="stats.0", scenarios=SCENARIOS, tasks=["T1"],
                conditions=["C0", "C1", "C2", "C3"],
                bootstrap={"seed": 7, "resamples": 200, "level": 0.95})
    data["gate"]["max_unscored_share"] = 0.2  # build_world leaves one reading in nine unscored
    release = release_create(config=ReleaseConfig.model_validate(data))
    build_world(release)
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.SCORED)
    return release


def test_each_role_lands_on_its_work_and_sees_only_what_it_may_open(
        transactional_db, ready_release, chromium, live_server):
    published_release_create(code="pub.0")
    users = {role: staff_user(role) for role in LANDING}
    for role, user in users.items():
        page = chromium()
        errors, _ = watch(page)
        log_in(page, live_server.url, user)
        assert page.url == f"{live_server.url}{LANDING[role]}", role
        shot(page, f"landing-{role}.png")
        if role in ("curator", "operator", "superuser"):  # admin pages: the admin index's links
            page.goto(f"{live_server.url}/")
        links = page.locator("header nav a[data-nav]").evaluate_all(
            "nodes => nodes.map(n => [n.dataset.nav, n.href])")
        assert [key for key, _ in links] == NAV[role], role
        for key, url in links:
            response = page.goto(url)
            assert response is not None and response.status == 200, (role, key, url)
        assert not errors, (role, errors)
        page.context.close()


def test_a_publisher_publishes_from_the_draft_page_and_sees_a_confirmation(
        transactional_db, ready_release, chromium, live_server):
    publisher = staff_user("publisher")
    page = chromium()
    log_in(page, live_server.url, publisher)
    assert page.locator("tr[data-release='stats.0']").count() == 1
    with page.expect_navigation():
        page.click("tr[data-release='stats.0'] a[href='/releases/stats.0/']")
    assert page.locator(".draft-banner").is_visible()
    # One table per measure the release ranks, the main three among them.
    assert page.locator("table.ranks").count() >= 3
    assert page.locator("table.ranks[data-metric='honesty']").count() == 1
    shot(page, "draft-release.png", full_page=False)
    with page.expect_navigation():
        page.click(".draft-banner a.button")
    assert page.url == f"{live_server.url}/releases/stats.0/publish/"
    with page.expect_navigation():
        page.click("main form button[type=submit]")
    assert page.url == f"{live_server.url}/releases/stats.0/"
    assert page.locator("ul.messages li.success").inner_text() == "Release stats.0 is published."
    assert page.locator(".draft-banner").count() == 0
    shot(page, "published-confirmation.png", full_page=False)


def two_releases_create():
    first = published_release_create(code="pub.0", model_count=4)
    original = factories.scenario_document

    def edited(slug: str, *, visibility: str = "public"):
        document = original(slug, visibility=visibility)
        if slug == "greenvale-listeria":
            document = document.model_copy(update={"title": document.title + " (revised)"})
        return document

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(factories, "scenario_document", edited)
        return first, published_release_create(code="pub.1", model_count=6)


@pytest.fixture(scope="module")
def kept_two_releases(request, django_db_setup, django_db_blocker):
    """Published once for the module (tests/kept.py): the tests that ask for them only read
    them, through the live server."""
    yield from world_served(request, django_db_blocker, two_releases_create)


@pytest.fixture
def two_releases(kept_two_releases, db):
    before = rows_counted()
    yield copy.deepcopy(kept_two_releases)
    assert rows_counted() == before, "a test changed the releases the others read"


def test_the_compare_page_sorts_by_mouse_and_keyboard(two_releases, chromium,
                                                     served_live_server):
    live_server = served_live_server
    page = chromium()
    errors, hosts = watch(page)
    response = page.goto(f"{live_server.url}/releases/pub.0/compare/pub.1/")
    assert response is not None and response.status == 200
    assert page.locator("table.compare").count() >= 3
    table = page.locator("table.compare[data-metric='honesty']")
    assert table.locator("tbody tr").count() == 6
    move = table.locator("thead th").nth(6)
    move.locator("button.sort").click()
    assert move.get_attribute("aria-sort") == "ascending"
    moves = table.locator("tbody td:nth-child(7)").evaluate_all(
        "cells => cells.map(c => c.dataset.sortValue)")
    present = [float(value) for value in moves if value]
    assert present == sorted(present) and moves[len(present):] == [""] * (6 - len(present))
    move.locator("button.sort").focus()
    page.keyboard.press("Enter")
    assert move.get_attribute("aria-sort") == "descending"
    model = table.locator("thead th").nth(0).locator("button.sort")
    model.focus()
    page.keyboard.press("Space")
    names = table.locator("tbody td:nth-child(1)").all_inner_texts()
    assert names == sorted(names, key=str.casefold)
    shot(page, "compare.png")
    with page.expect_navigation():
        table.locator("tbody a").first.click()
    assert "/models/" in page.url and page.locator("table.history").count() >= 3
    assert hosts <= {"127.0.0.1", "localhost"} and not errors, errors


def test_the_release_page_fits_a_390_px_screen_and_the_chart_fills_its_box(
        two_releases, chromium, served_live_server):
    live_server = served_live_server
    page = chromium(390, 844)
    errors, _ = watch(page)
    for url in ("/releases/pub.1/", "/releases/pub.0/compare/pub.1/", "/releases/pub.1/texts/",
                "/models/fixture/candid/", "/"):
        page.goto(f"{live_server.url}{url}")
        assert page.evaluate(NO_SIDEWAYS_SCROLL), url
    page.goto(f"{live_server.url}/releases/pub.1/")
    shot(page, "release-390.png")
    page.locator("#ranks").scroll_into_view_if_needed()
    shot(page, "release-390-ranks.png", full_page=False)
    for width in (390, 1200):
        page.set_viewport_size({"width": width, "height": 844})
        # The chart on a wide screen, the ranked dot plot that stands in for it on a phone.
        filled = page.evaluate("""() => {
          const figure = [...document.querySelectorAll('figure.chart.main, figure.dot-plot')]
            .find(f => f.offsetWidth > 0);
          const style = getComputedStyle(figure);
          const inner = figure.clientWidth - parseFloat(style.paddingLeft)
                        - parseFloat(style.paddingRight);
          return [figure.querySelector('svg').getBoundingClientRect().width, inner];
        }""")
        assert abs(filled[0] - filled[1]) < 1.5 or filled[0] > filled[1], (width, filled)
    assert not errors, errors


def test_the_publish_page_with_its_reason_field_fits_a_390_px_screen(
        transactional_db, ready_release, chromium, live_server):
    config = dict(ready_release.config, gate={"min_coverage": 0.5, "min_agreement": 0.0,
                                              "max_unscored_share": 0.2})
    Release.objects.filter(pk=ready_release.pk).update(config=config)
    publisher = staff_user("publisher")  # before the browser: its loop makes this thread async
    page = chromium(390, 844)
    log_in(page, live_server.url, publisher)
    page.goto(f"{live_server.url}/releases/stats.0/publish/")
    assert page.locator("textarea#override_reason").is_visible()  # the gate is not met
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    assert page.title() == "Publish stats.0 · BaitBench"


def test_the_publish_and_run_pages_say_what_each_row_is_on_a_390_px_screen(
        transactional_db, ready_release, chromium, live_server):
    from runs_app.models import Generation

    # The release's own limit (2 %) is below its readings' unscored share, and a cell failed.
    config = dict(ready_release.config, gate={"min_coverage": 0.0, "min_agreement": 0.0})
    Release.objects.filter(pk=ready_release.pk).update(config=config)
    Generation.objects.filter(pk=Generation.objects.filter(release=ready_release)
                              .values("pk")[:1]).update(status="failed")
    publisher, operator = staff_user("publisher"), staff_user("operator")
    page = chromium(390, 844)
    log_in(page, live_server.url, publisher)
    page.goto(f"{live_server.url}/releases/stats.0/publish/")
    problems = page.locator("h2:has-text('Cannot publish yet') + ul li").all_inner_texts()
    assert "stage generate: 1 failed of 64 rows (retry the failed ones)" in problems
    assert any(problem.startswith("stage panel: reader fixture/reader has 4 of 36 rows "
                                  "unscored (11.1%") for problem in problems), problems
    assert page.locator("table.rows-per-stage tr[data-stage='panel'] td").all_inner_texts()[:4] \
        == ["32", "0", "4", "0"]
    assert page.locator("button:has-text('Publish')").count() == 0
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    shot(page, "publish-gaps-390.png")

    page = chromium(390, 844)  # a session of its own
    log_in(page, live_server.url, operator)
    page.goto(f"{live_server.url}/runs/stats.0/")
    row = page.locator("tr[data-stage='panel']")
    assert row.locator("[data-field='unscored']").inner_text() == "4"
    assert row.locator("[data-field='scored']").inner_text() == "32"
    assert page.locator("#not-publishable + ul li").count() == len(problems)
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    shot(page, "run-gaps-390.png")


@pytest.mark.parametrize("models", [4, 10, 50])
def test_no_two_chart_labels_overlap(transactional_db, chromium, live_server, models):
    code = f"chart{models}.0"
    published_release_create(code=code, model_count=models)
    page = chromium()
    errors, _ = watch(page)
    page.goto(f"{live_server.url}/releases/{code}/")
    measured = page.evaluate(OVERLAPS)
    assert measured["count"] == models + 1  # every model's name and the control line's
    assert measured["pairs"] == [], measured["pairs"]
    assert measured["outside"] == [], measured["outside"]
    page.locator("figure.chart").screenshot(path=str(ARTIFACTS / f"chart-{models}.png"))
    assert not errors, errors
