"""Answers a shared cache must never keep: a reading study's pages (they set the CSRF cookie and
the participant's), and every staff page, the staff archive that names the writers of blind
pairs first among them (`baitbench_site.cache_headers`)."""

from __future__ import annotations

import pytest
from django.test import Client

from audits_app.calibration.studies.views import COOKIE

pytestmark = pytest.mark.django_db


def directives(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


def never_stored(response) -> bool:
    said = directives(response)
    return {"private", "no-store"} <= said and "public" not in said


def staff_urls(study) -> list[str]:
    code = study.release.code
    return ["/runs/", "/review/", "/review/reader-trials/", "/publish/",
            f"/releases/{code}/publish/", f"/arena/{code}/manage/",
            f"/studies/{study.pk}/progress/", f"/studies/{study.pk}/responses.csv",
            f"/releases/{code}/archive-staff.zip"]


def test_staff_pages_and_downloads_are_never_stored(admin_client, open_study):
    for url in staff_urls(open_study):
        response = admin_client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        assert never_stored(response), (url, response.get("Cache-Control"))


def test_a_studys_pages_are_never_stored_from_consent_to_the_first_step(client, open_study):
    detail = client.get(f"/studies/{open_study.pk}/")
    assert detail.status_code == 200 and "csrftoken" in detail.cookies
    assert never_stored(detail), detail.get("Cache-Control")

    consented = client.post(f"/studies/{open_study.pk}/consent/", {"agree": "on"})
    assert consented.status_code == 302
    assert COOKIE.format(open_study.pk) in consented.cookies
    assert never_stored(consented), consented.get("Cache-Control")

    step = client.get(f"/studies/{open_study.pk}/go/")
    assert step.status_code == 200
    assert never_stored(step), step.get("Cache-Control")


def test_a_method_the_study_pages_do_not_take_is_405_and_consent_still_needs_a_token(
        open_study):
    browser = Client(enforce_csrf_checks=True)
    detail = browser.put(f"/studies/{open_study.pk}/")
    assert detail.status_code == 405 and detail["Allow"] == "GET, HEAD"
    go = browser.delete(f"/studies/{open_study.pk}/go/")
    assert go.status_code == 405 and go["Allow"] == "GET, HEAD, POST"
    assert browser.post(f"/studies/{open_study.pk}/consent/", {"agree": "on"}).status_code == 403
    assert browser.post(f"/studies/{open_study.pk}/go/", {}).status_code == 403


def test_head_answers_as_get_without_a_body_on_a_studys_page(client, open_study):
    """HEAD (a link checker's, a cache's) got 405 where GET got 200."""
    url = f"/studies/{open_study.pk}/"
    head = client.head(url)
    assert head.status_code == 200 and head.content == b""
    assert head["Content-Type"] == client.get(url)["Content-Type"]
