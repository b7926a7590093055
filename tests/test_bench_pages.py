"""bench/pages.py times each page as the page itself: every answer it times must be the page
(200, or 304 to a conditional request), and its archive downloads are not refused by the
site's download limit, which a dozen downloads per release from one client passed."""

from __future__ import annotations

import pytest
from django.test import Client

from audits_app.archive import views as archive_views
from audits_app.tests.factories import published_release_create
from bench import pages as pages_bench

pytestmark = pytest.mark.django_db


def test_every_page_of_a_release_is_timed_as_the_page_itself(monkeypatch):
    monkeypatch.setattr(archive_views, "DOWNLOADS", archive_views.DOWNLOADS)  # restored after
    pages_bench.lift_archive_limit()
    client = Client()
    for code in ("small.0", "large.0"):  # small.0 is compared with the others
        published_release_create(code=code, model_count=4)
        for url in pages_bench.release_pages(code):
            assert pages_bench.measure(client, url)[3] == 200
            etag = client.get(url).headers.get("ETag")
            if etag:
                assert pages_bench.measure(client, url, 304, HTTP_IF_NONE_MATCH=etag)[3] == 304
    # The bench's three releases download from one client: some 40 downloads, past 30.
    for _ in range(2):
        pages_bench.measure(client, "/releases/small.0/archive.zip")


def test_a_refused_page_stops_the_bench(monkeypatch):
    monkeypatch.setattr(archive_views, "DOWNLOADS", ("archive.downloads", "2/10m"))
    published_release_create(code="small.0", model_count=4)

    with pytest.raises(AssertionError, match="archive.zip answered 429, not 200"):
        pages_bench.measure(Client(), "/releases/small.0/archive.zip")
