"""The spot-check admin: pages cost a constant number of queries (STYLE: no query per row)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audits_app.spotchecks.services import spotcheck_batch_create
from audits_app.tests.juries import build_jury


def change_page_queries(client, batch) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"/admin/audits_app/spotcheckbatch/{batch.pk}/change/")
    assert response.status_code == 200
    return len(captured)


def test_the_batch_page_does_not_query_per_item(client, small_demo_release):
    build_jury(small_demo_release)
    small = spotcheck_batch_create(release=small_demo_release, size=1, seed=1)
    large = spotcheck_batch_create(release=small_demo_release, size=4, seed=2)
    assert large.items.count() == 4
    client.force_login(User.objects.create_superuser("root", password="x"))
    change_page_queries(client, small)  # warms per-process caches (content types)

    assert change_page_queries(client, large) == change_page_queries(client, small)


def test_evidence_of_a_published_release_is_offered_no_delete(client, small_demo_release):
    from django.contrib.messages import get_messages

    from audits_app.models import SpotCheckBatch
    from runs_app.models import Release, ReleaseStatus

    build_jury(small_demo_release)
    batch = spotcheck_batch_create(release=small_demo_release, size=1, seed=1)
    client.force_login(User.objects.create_superuser("root", password="x"))
    url = "/admin/audits_app/spotcheckbatch/"
    assert f"{url}{batch.pk}/delete/" in client.get(f"{url}{batch.pk}/change/").content.decode()
    Release.objects.filter(pk=small_demo_release.pk).update(status=ReleaseStatus.PUBLISHED)
    assert f"{url}{batch.pk}/delete/" not in client.get(
        f"{url}{batch.pk}/change/").content.decode()
    response = client.post(url, {"action": "delete_selected", "_selected_action": [batch.pk]})
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"Nothing was deleted: {batch}: its release small.0 is published, and its evidence "
        f"is kept"]
    assert SpotCheckBatch.objects.filter(pk=batch.pk).exists()
