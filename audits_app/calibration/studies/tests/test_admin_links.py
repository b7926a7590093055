"""The admin links a record's read-only relations only for a user who may open them: an
ethics review's page linked its reading study for curators, auditors and operators, and a
reading study's page linked its author's user record for publishers, each a 403."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin

from audits_app.calibration.studies.tests.conftest import study_approve
from tests.world import user_create

pytestmark = pytest.mark.django_db

CHANGE_LINK = re.compile(r'href="(/admin/[a-z_]+/[a-z_]+/[^"/]+/change/)"')
ROLES = ("curator", "operator", "auditor", "publisher")


def _first_change_pages(client) -> list[str]:
    """One record's change page of every model whose list the logged-in user may open."""
    pages = []
    for model in admin.site._registry:
        changelist = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        response = client.get(changelist)
        if response.status_code != 200:
            continue
        found = re.search(rf'href="({re.escape(changelist)}[^"/]+/change/)', response.content
                          .decode())
        if found:
            pages.append(found.group(1))
    return pages


@pytest.mark.parametrize("role", ROLES)
def test_no_change_page_links_a_page_its_reader_may_not_open(client, study, publisher, role):
    review = study_approve(study, publisher)
    client.force_login(user_create(f"{role}-2", role))
    pages = {*_first_change_pages(client),
             f"/admin/audits_app/ethicsreview/{review.pk}/change/",
             f"/admin/audits_app/readingstudy/{study.pk}/change/"}
    refused = []
    for page in sorted(pages):
        response = client.get(page)
        if response.status_code != 200:
            continue
        for link in set(CHANGE_LINK.findall(response.content.decode())) - {page}:
            if client.get(link).status_code != 200:
                refused.append(f"{page} -> {link}")
    assert not refused, refused


def test_a_relation_the_reader_may_not_open_is_named_as_plain_text(client, study, publisher):
    review = study_approve(study, publisher)
    page = f"/admin/audits_app/ethicsreview/{review.pk}/change/"
    client.force_login(user_create("audrey-2", "auditor"))
    html = client.get(page).content.decode()
    assert f"/admin/audits_app/readingstudy/{study.pk}/change/" not in html
    assert str(study) in html
    client.force_login(publisher)
    assert f'href="/admin/audits_app/readingstudy/{study.pk}/change/"' in client.get(
        page).content.decode()
