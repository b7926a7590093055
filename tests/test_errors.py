"""Error pages in the site's layout, server errors logged with a reference, and changes
under a published release refused with a message instead of a 500."""

from __future__ import annotations

import logging
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from audits_app.models import OutOfBandAudit
from audits_app.tests.factories import published_release_create
from tests.error_urls import INTERNALS

pytestmark = pytest.mark.django_db
WAYS_BACK = ['href="/"', 'href="/api/v1/docs/"']


def assert_site_page_with_ways_back(body: str) -> None:
    assert "<header>" in body and "BaitBench" in body  # the site's layout
    for link in WAYS_BACK:
        assert link in body, link


def test_404_says_why_and_offers_the_way_back(client):
    missing_release = client.get("/releases/no-such.0/")
    no_page = client.get("/no/such/page/")

    assert missing_release.status_code == 404
    body = missing_release.content.decode()
    assert "No published release with this code." in body
    assert_site_page_with_ways_back(body)
    assert 'href="/admin/login/?next=/releases/no-such.0/"' in body
    assert no_page.status_code == 404
    assert "There is no page at this address." in no_page.content.decode()
    assert "Resolver404" not in no_page.content.decode()
    assert "tried" not in no_page.content.decode()


def test_a_missing_object_404_says_no_model_name(client):
    """get_object_or_404 words its 404 from the model's class: not the site's words."""
    response = client.get("/studies/0/")

    assert response.status_code == 404
    body = response.content.decode()
    assert "There is no page at this address." in body
    assert "ReadingStudy" not in body and "matches the given query" not in body


def test_an_unknown_api_address_is_answered_in_json_naming_where_the_endpoints_are(client):
    response = client.get("/api/v1/no-such-endpoint/")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": "There is no API endpoint at this address; /api/v1/ lists them."}


def test_the_release_list_has_an_address_under_releases_too(client):
    response = client.get("/releases/")

    assert response.status_code == 301 and response["Location"] == "/"


def test_403_says_which_role_is_missing(client):
    user = get_user_model().objects.create_user("reader", password="x", is_staff=True)
    client.force_login(user)

    response = client.get("/review/")

    assert response.status_code == 403
    body = response.content.decode()
    assert "the review screens are for auditors" in body
    assert "You are logged in as reader" in body
    assert "an administrator can give you the role it asks for" in body
    assert_site_page_with_ways_back(body)


def test_a_403_no_role_would_lift_does_not_send_the_user_for_a_role(client):
    """An auditor asking for a new batch of a published release has every role it takes: the
    release is closed to everyone, so the page must not suggest an administrator could help."""
    release = published_release_create().release
    auditor = get_user_model().objects.create_user("ann", password="x", is_staff=True)
    auditor.groups.add(Group.objects.get(name="auditor"))
    client.force_login(auditor)

    response = client.get(f"/review/releases/{release.code}/batches/new/")

    assert response.status_code == 403
    body = response.content.decode()
    assert f"release {release.code} is published: no new spot-checks" in body
    assert "You are logged in as ann" in body
    assert "an administrator can give you the role" not in body


def test_a_form_failing_its_csrf_check_gets_the_sites_page():
    response = Client(enforce_csrf_checks=True).post(
        "/admin/login/", {"username": "x", "password": "y"})

    assert response.status_code == 403
    body = response.content.decode()
    assert "Form not accepted" in body and "CSRF cookie not set" in body
    assert_site_page_with_ways_back(body)


@pytest.mark.urls("tests.error_urls")
def test_a_server_error_is_logged_with_its_traceback_and_shows_the_reference(caplog):
    client = Client(raise_request_exception=False)

    with caplog.at_level(logging.ERROR, logger="baitbench.errors"):
        response = client.get("/fails/?token=abc")

    assert response.status_code == 500
    body = response.content.decode()
    reference = re.search(r'<code class="reference">([0-9a-f]{8})</code>', body).group(1)
    assert_site_page_with_ways_back(body)
    assert INTERNALS not in body and "RuntimeError" not in body
    [record] = [r for r in caplog.records if r.name == "baitbench.errors"]
    assert record.getMessage() == f"server error {reference} on GET /fails/"
    assert record.exc_info[0] is RuntimeError
    assert "token=abc" not in record.getMessage()


@pytest.mark.urls("tests.error_urls")
def test_a_server_error_in_the_api_is_json_with_the_reference(caplog):
    client = Client(raise_request_exception=False)

    with caplog.at_level(logging.ERROR, logger="baitbench.errors"):
        response = client.get("/api/v1/fails/")

    assert response.status_code == 500
    answer = response.json()
    [record] = [r for r in caplog.records if r.name == "baitbench.errors"]
    assert answer == {"detail": "The server failed on this request.",
                      "reference": record.getMessage().split()[2]}
    assert INTERNALS not in response.content.decode()


@pytest.mark.urls("tests.error_urls")
def test_a_refused_change_returns_to_the_form_with_the_reason(client):
    response = client.post("/refuses/?tab=2", follow=False)

    assert response.status_code == 302 and response["Location"] == "/refuses/?tab=2"
    # The message waits for the next page in the site's layout.
    page = client.get("/no/such/page/").content.decode()
    assert "Not saved: release pub.0 is published and cannot change." in page


def test_adding_under_a_published_release_in_the_admin_is_refused_in_the_sites_layout(client):
    # Evidence is added only through /review/, and nothing under a published release at
    # all: the admin does not offer it, and says so with a page, not a server error.
    world = published_release_create(code="pub.0")
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    url = "/admin/audits_app/outofbandaudit/add/"

    response = client.post(url, {
        "release": world.release.pk, "auditor_name": "A. Auditor", "organisation": "Elsewhere",
        "audited_on": "2026-01-05", "method": "Read every text twice.",
        "verdicts-TOTAL_FORMS": "0", "verdicts-INITIAL_FORMS": "0",
    })

    assert response.status_code == 403
    page = response.content.decode()
    assert "<nav" in page and "Traceback" not in page
    assert not OutOfBandAudit.objects.exists()


def test_deleting_under_a_published_release_in_the_admin_is_refused_and_keeps_the_row(client):
    world = published_release_create(code="pub.0", publish=False)
    audit = OutOfBandAudit.objects.create(
        release=world.release, auditor_name="A. Auditor", organisation="Elsewhere",
        audited_on="2026-01-05", method="Read every text twice.")
    type(world.release).objects.filter(pk=world.release.pk).update(status="published")
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))

    response = client.post(f"/admin/audits_app/outofbandaudit/{audit.pk}/delete/",
                           {"post": "yes"})

    assert response.status_code == 403
    assert "Traceback" not in response.content.decode()
    assert OutOfBandAudit.objects.filter(pk=audit.pk).exists()


def test_a_form_too_large_to_accept_gets_the_sites_page_saying_so(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    user = get_user_model().objects.create_superuser("root", password="x")
    client.force_login(user)

    response = client.post("/admin/runs_app/release/add/", {"config_yaml": "x" * 4096})

    assert response.status_code == 400
    body = response.content.decode()
    assert "larger than this site accepts in a form (1.0 KB): nothing was saved" in body
    assert_site_page_with_ways_back(body)


def test_an_unknown_scoring_version_names_the_known_ones_and_no_server_folder():
    from django.conf import settings

    from runs_app.scoring_versions import ScoringFileError, load_scoring_file

    with pytest.raises(ScoringFileError) as refused:
        load_scoring_file("v99")
    [line] = refused.value.lines
    assert line.startswith("runs_app/scoring/v99.yaml: no such scoring version (there are v1, ")
    assert str(settings.BASE_DIR) not in line
