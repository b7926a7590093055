"""axe-core finds nothing on any staff page, as each role, in Debian's Chromium.

Each role's pages are found the way a person finds them: from the admin's index and the
role's own screens, following every link the role is shown (tests/world.py gives every table
a row, published and not). Pages of one kind (the same path with other ids) count once per
role, each with the rows the link led to. The admin's add pages count too.

Every page a role is shown a link to must answer it: no server error (the crawl, with
Django's test client, fails on a 5xx). axe checks each kind of page once across the five
roles, in Chromium, as one of the roles that reach it (the one with the fewest pages to check
so far, so that each role's own menu and buttons are checked on a share of its pages): every
kind any role can reach is axe-checked at least once, in about a third of the axe runs that
checking every kind as every role took. Chromium opens only the pages it checks: that the
others answer 200 is the crawl's to see, and opening them again in a browser proved nothing
more.
"""

from __future__ import annotations

import html
import re
from collections import deque
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.test import Client

from tests.kept import rows_counted, world_served
from tests.world import prompt_texts_seed, release_rows_create, scenario_version, user_create

pytestmark = pytest.mark.browser

LINK = re.compile(r'href="([^"]+)"')
STAFF_AREAS = ("/admin/", "/review/", "/runs/", "/publish/")
SKIP = ("/admin/logout/", "/admin/password_change/", "/admin/jsi18n/", "/admin/r/")
# Downloads and exports are files, not pages.
NOT_PAGES = re.compile(r"(\.csv|\.zip|\.yaml|/download/|/export/|/worksheet/|/template/)")
ROLES = {"curator": "cora", "operator": "olga", "auditor": "ann", "publisher": "pat",
         "superuser": "root"}
START = ["/admin/", "/review/", "/runs/", "/publish/"]
MAX_PAGES = 400


def page_kind(path: str) -> str:
    """/admin/runs_app/release/12/change/ and .../13/change/ are one kind of page, as are two
    texts' pages by their codes (audits_app.text_codes); a query string (a filter, a sort)
    makes a page of another kind only by its keys."""
    parts = urlsplit(path)
    keys = ",".join(sorted(key.split("=")[0] for key in parts.query.split("&") if key))
    path = re.sub(r"/t[0-9a-f]{12}/", "/TEXT/", re.sub(r"/[a-z]+\.\d+/", "/CODE/", parts.path))
    return re.sub(r"/\d+/", "/N/", path) + "?" + keys


def staff_pages(client: Client) -> list[str]:
    """One URL per kind of staff page this client can open (GET 200, HTML)."""
    seen: set[str] = set()
    kinds: dict[str, str] = {}
    queue = deque(START)
    while queue and len(seen) < MAX_PAGES:
        path = queue.popleft()
        if path in seen or page_kind(path) in kinds:
            continue
        seen.add(path)
        response = client.get(path)
        assert response.status_code < 500, f"{path} answered {response.status_code}"
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        kinds[page_kind(path)] = path
        for link in LINK.findall(response.content.decode()):
            parts = urlsplit(html.unescape(link))
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if (not parts.netloc and target.startswith(STAFF_AREAS)
                    and not target.startswith(SKIP) and not NOT_PAGES.search(target)
                    and "_popup" not in target):
                queue.append(target)
    assert len(seen) < MAX_PAGES, "the crawl did not finish"
    return sorted(kinds.values())


def axe_assignment(kinds_by_role: dict[str, set[str]]) -> dict[str, set[str]]:
    """The kinds of page each role axe-checks: every kind exactly once, by a role that
    reaches it, the one with the fewest so far (ties in ROLES order)."""
    checks: dict[str, set[str]] = {role: set() for role in kinds_by_role}
    for kind in sorted(set().union(*kinds_by_role.values())):
        role = min((role for role in ROLES if kind in kinds_by_role.get(role, ())),
                   key=lambda role: len(checks[role]))
        checks[role].add(kind)
    return checks


def staff_world() -> dict[str, tuple[str, list[str], set[str]]]:
    """Every table given a row, published and not, and each role's session cookie, pages
    (staff_pages) and kinds of them to axe-check (axe_assignment). The crawls run before
    Playwright starts: its event loop makes the ORM refuse to run."""
    from django.contrib.auth.models import User

    prompt_texts_seed()
    ann, bob = user_create("ann", "auditor"), user_create("bob", "auditor")
    for role in ("curator", "operator", "publisher"):
        user_create(ROLES[role], role)
    user_create("root", None, superuser=True)
    version = scenario_version()
    release_rows_create(code="pub.0", version=version, ann=ann, bob=bob, publish=True)
    release_rows_create(code="draft.0", version=version, ann=ann, bob=bob, publish=False)
    pages, sessions = {}, {}
    for role in ROLES:
        client = Client()
        client.force_login(User.objects.get(username=ROLES[role]))
        pages[role] = staff_pages(client)
        sessions[role] = client.cookies[settings.SESSION_COOKIE_NAME].value
    checks = axe_assignment({role: {page_kind(path) for path in paths}
                             for role, paths in pages.items()})
    return {role: (sessions[role], pages[role], checks[role]) for role in ROLES}


@pytest.fixture(scope="module")
def kept_staff_world(request, django_db_setup, django_db_blocker):
    """Built, and every role crawled, once for the module (tests/kept.py): the tests only
    read it, through the live server."""
    yield from world_served(request, django_db_blocker, staff_world)


@pytest.fixture
def role_pages(request, kept_staff_world, db) -> tuple[str, list[str], set[str]]:
    """The test's role (its `role` parameter; the curator otherwise): a session cookie, the
    pages to open and the kinds of them to axe-check."""
    callspec = getattr(request.node, "callspec", None)
    role = callspec.params["role"] if callspec is not None else "curator"
    before = rows_counted()
    yield kept_staff_world[role]
    assert rows_counted() == before, "a test changed the world the others read"


def axe_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    result = Axe().run(page)
    return [f"{violation['id']} ({violation['impact']}): "
            + "; ".join(node["target"][0] for node in violation["nodes"][:5])
            for violation in result.response["violations"]]


@pytest.mark.parametrize("role", list(ROLES))
def test_axe_finds_nothing_on_any_staff_page(role, role_pages, chromium, served_live_server):
    live_server = served_live_server
    session, paths, checked = role_pages
    assert len(paths) >= 3, paths  # the crawl found the role's pages
    # The kinds given to this role to check are among those this world shows it.
    assert checked <= {page_kind(path) for path in paths}, checked
    page = chromium(1280, 900)
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session,
                               "url": live_server.url}])
    problems = {}
    for path in paths:
        if page_kind(path) not in checked:
            continue
        response = page.goto(live_server.url + path)
        assert response is not None and response.status == 200, path
        if found := axe_violations(page):
            problems[path] = found
    assert not problems, "\n".join(f"{path}: {found}" for path, found in problems.items())


def test_each_kind_of_page_is_axe_checked_once_by_a_role_that_reaches_it():
    reached = {"curator": {"a", "b", "c"}, "operator": {"b", "c", "d"}, "auditor": {"c"},
               "superuser": {"a", "b", "c", "d", "e"}}
    checks = axe_assignment(reached)
    assigned = [kind for kinds in checks.values() for kind in kinds]
    assert sorted(assigned) == ["a", "b", "c", "d", "e"]
    assert all(checks[role] <= reached[role] for role in reached)
    assert max(map(len, checks.values())) <= 2  # shared out, not all on the superuser


WIDEST = """() => {
  const wide = [...document.querySelectorAll('#content *')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .map(e => e.tagName + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : ''));
  const boxes = [...document.querySelectorAll('.inline-group .tabular')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.closest('.inline-group').id);
  return {page: document.documentElement.scrollWidth, wide: wide.slice(0, 8), boxes};
}"""


def test_the_scenario_change_page_fits_1280_px(role_pages, chromium, served_live_server):
    live_server = served_live_server
    session, paths, _ = role_pages
    change = next(path for path in paths
                  if re.fullmatch(r"/admin/scenarios_app/scenario/\d+/change/", path))
    page = chromium(1280, 900)
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session,
                               "url": live_server.url}])
    page.goto(live_server.url + change)
    measured = page.evaluate(WIDEST)
    assert measured == {"page": 1280, "wide": [], "boxes": []}, measured
    # Each knowledge question: a radio button per option, one of them checked.
    for index in range(4):
        radios = page.locator(f"input[name='knowledge_questions-{index}-options_correct']")
        assert radios.count() >= 4
        assert page.locator(
            f"input[name='knowledge_questions-{index}-options_correct']:checked").count() == 1
