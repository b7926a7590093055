"""The arena's answers that a shared cache must never keep: the consent page (it sets the CSRF
cookie), the results, their CSV and the API answers that change with every vote, and the
management page; and a form sent to a page that is only read is a 405 before the CSRF check."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

# Public, anonymous, and made of what changes over time (votes, calibration).
CHANGING = ["/arena/arena.0/results/", "/arena/arena.0/results.csv",
            "/api/v1/releases/arena.0/arena/", "/api/v1/releases/arena.0/calibration/"]


def directives(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


def never_stored(response) -> bool:
    said = directives(response)
    return {"private", "no-store"} <= said and "public" not in said


def test_the_consent_page_sets_the_csrf_cookie_and_is_never_stored(client, open_arena):
    response = client.get("/arena/arena.0/")
    assert response.status_code == 200
    assert "csrftoken" in response.cookies
    assert never_stored(response), response.get("Cache-Control")


def test_answers_that_change_with_the_votes_are_never_stored(client, open_arena):
    for url in CHANGING:
        response = client.get(url)
        assert response.status_code == 200, url
        assert never_stored(response), (url, response.get("Cache-Control"))
        assert "ETag" not in response, url


def test_the_management_page_is_never_stored(admin_client, open_arena):
    response = admin_client.get("/arena/arena.0/manage/")
    assert response.status_code == 200
    assert never_stored(response), response.get("Cache-Control")


def test_a_form_sent_to_the_results_is_405_and_the_vote_still_needs_its_token(open_arena):
    browser = Client(enforce_csrf_checks=True)
    for url in ("/arena/arena.0/results/", "/arena/arena.0/results.csv", "/arena/arena.0/"):
        for method in ("post", "put", "delete"):
            response = getattr(browser, method)(url)
            assert response.status_code == 405, (method, url, response.status_code)
            assert response["Allow"] == "GET, HEAD", url
    # The consent and vote forms take POST: without a token the CSRF check refuses them.
    assert browser.post("/arena/arena.0/consent/", {"agree": "on"}).status_code == 403
    assert browser.post("/arena/arena.0/vote/", {}).status_code == 403


def test_head_answers_as_get_without_a_body_on_the_arenas_pages(client, open_arena):
    """HEAD (a link checker's, a cache's) got 405 where GET got 200."""
    for url in ("/arena/", "/arena/arena.0/", "/arena/arena.0/results/",
                "/arena/arena.0/results.csv"):
        got = client.get(url)
        head = client.head(url)
        assert (head.status_code, got.status_code) == (200, 200), url
        assert head.content == b"" and head["Content-Type"] == got["Content-Type"], url
