"""A pending spot-check's writer and jury class appear nowhere its auditor can look: every admin
page and review screen they can reach, followed link by link."""

from __future__ import annotations

import html
import re
from collections import deque
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from audits_app.admin import BLIND
from audits_app.models import SpotCheck
from tests.world import (
    BLIND_STRATUM,
    BLIND_WRITER,
    release_rows_create,
    scenario_version,
    user_create,
)

pytestmark = pytest.mark.django_db

LINK = re.compile(r'href="([^"]+)"')
SKIP = ("/admin/logout/", "/admin/password_change/", "/admin/jsi18n/")
MAX_PAGES = 600


def reachable(client: Client) -> dict[str, str]:
    """Every admin and review page this client can GET, following links from the indexes."""
    seen: dict[str, str] = {}
    queue = deque(["/admin/", "/review/"])
    while queue and len(seen) < MAX_PAGES:
        path = queue.popleft()
        if path in seen:
            continue
        response = client.get(path)
        seen[path] = response.content.decode() if response.status_code == 200 else ""
        for link in LINK.findall(seen[path]):
            parts = urlsplit(html.unescape(link))
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if (not parts.netloc and target.startswith(("/admin/", "/review/"))
                    and not target.startswith(SKIP)):
                queue.append(target)
    assert len(seen) < MAX_PAGES, "the crawl did not finish"
    return seen


@pytest.fixture
def world(db):
    ann, bob = user_create("ann", "auditor"), user_create("bob", "auditor")
    version = scenario_version()
    return {"ann": ann, "bob": bob,
            "draft": release_rows_create(code="draft.0", version=version, ann=ann, bob=bob,
                                         publish=False)}


def secrets_of(world) -> list[str]:
    """How a page would give the pending text's writer or jury class away: the stratum, the
    text's own title, its id in a link or a title (and, checked apart, the writer's id and
    name anywhere but the model registry)."""
    blind = world["draft"].blind_text
    return [BLIND_STRATUM, str(blind), f"/admin/runs_app/generation/{blind.pk}/",
            f"generation {blind.pk}"]


# Pages that list every model, whichever texts they wrote: the model registry, a release's
# configuration, and a list's filter by model. A writer's name there says nothing of a text.
REGISTRY = ("/admin/runs_app/llmmodel/", "/admin/runs_app/release/")
FILTERS = re.compile(r'<nav id="changelist-filter".*?</nav>', re.DOTALL)


def assert_blind(pages: dict[str, str], secrets: list[str],
                 writer: tuple[str, str] = BLIND_WRITER) -> None:
    leaks = [(path, secret) for path, body in pages.items() for secret in secrets
             if secret in body]
    named = [(path, name) for path, body in pages.items() if not path.startswith(REGISTRY)
             for name in writer if name in FILTERS.sub("", body)]
    assert leaks + named == []


def pending_check_for(world, user) -> SpotCheck:
    item = SpotCheck.objects.get(pk=world["draft"].checks["ann-pending"].pk).item
    return SpotCheck.objects.create(release=world["draft"].release, item=item,
                                    generation=world["draft"].blind_text, auditor=user)


def test_an_auditor_finds_no_trace_of_the_writer_or_jury_class(client, world):
    client.force_login(world["ann"])
    pages = reachable(client)

    assert f"/review/checks/{world['draft'].checks['ann-pending'].pk}/" in pages
    assert f"/admin/audits_app/spotcheck/{world['draft'].checks['ann-pending'].pk}/change/" in (
        pages)
    assert_blind(pages, secrets_of(world))
    batch_page = pages[f"/admin/audits_app/spotcheckbatch/"
                       f"{world['draft'].rows['audits_app_spotcheckbatch'].pk}/change/"]
    assert batch_page and "jury class" not in batch_page.lower()
    # Another auditor's checks are not among the pages either.
    assert not any(f"/spotcheck/{world['draft'].checks['bob-done'].pk}/" in path
                   for path in pages)


@pytest.mark.parametrize("who", ["auditor and operator", "superuser"])
def test_anyone_with_a_pending_check_is_blind_to_that_text(client, world, who):
    """Roles add up: an auditor who is also an operator (or a superuser given a check) may
    read texts and items in the admin, but not the one they are checking blind."""
    if who == "superuser":
        user = user_create("root", None, superuser=True)
    else:
        user = user_create("amos", "auditor")
        user.groups.add(Group.objects.get(name="operator"))
    pending_check_for(world, user)
    client.force_login(user)
    pages = reachable(client)

    assert "/admin/runs_app/generation/" in pages  # they may read texts...
    assert_blind(pages, secrets_of(world))  # ...but not this one
    # ...nor any other of its release: their list would show the pending text as a gap.
    for text in (world["draft"].open_text, world["draft"].blind_text):
        page = client.get(f"/admin/runs_app/generation/{text.pk}/change/")
        assert page.status_code == 302  # "doesn't exist", as for any text they may not see
    by_writer = client.get("/admin/runs_app/generation/", {"model__id__exact": str(
        world["draft"].open_text.model_id)}).context["cl"].result_list
    assert list(by_writer) == []
    # In its batch no item shows a stratum: neighbours would place the pending one.
    batch_page = pages[f"/admin/audits_app/spotcheckbatch/"
                       f"{world['draft'].rows['audits_app_spotcheckbatch'].pk}/change/"]
    assert BLIND in batch_page and "|C0|supported" not in batch_page
