"""Answers a shared cache must never keep: a reading study's pages (they set the CSRF cookie and
the participant's), and every staff page, the staff archive that names the writers of blind
pairs first among them (`baitbench_site.cache_headers`)."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def directives(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


def never_stored(response) -> bool:
    said = directives(response)
    return {"private", "no-store"} <= said and "public" not in said


def test_a_method_the_study_pages_do_not_take_is_405_and_consent_still_needs_a_token(
        open_study):
    browser = Client(enforce_csrf_checks=True)
    detail = browser.put(f"/studies/{open_study.pk}/")
    assert detail.status_code == 405 and detail["Allow"] == "GET"
    go = browser.delete(f"/studies/{open_study.pk}/go/")
    assert go.status_code == 405 and go["Allow"] == "GET, POST"
    assert browser.post(f"/studies/{open_study.pk}/consent/", {"agree": "on"}).status_code == 403
    assert browser.post(f"/studies/{open_study.pk}/go/", {}).status_code == 403
