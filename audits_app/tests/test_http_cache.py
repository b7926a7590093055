"""Published pages a shared cache can carry: strong ETags, Cache-Control and 304s; drafts and
staff pages never cached."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.utils import timezone

from audits_app.http_cache import published_cache
from audits_app.pages import views
from audits_app.tests.factories import published_release_create
from runs_app.models import ContaminationCheck

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    # A release to compare it with: a release compared with itself is refused (400).
    published_release_create(code="prev.0", model_count=3)
    return published_release_create(code="pub.0")


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(user)
    return client


def published_urls(world) -> list[str]:
    code = world.release.code
    return [f"/releases/{code}/", f"/releases/{code}/chart.svg",
            f"/releases/{code}/leaderboard.csv", f"/releases/{code}/texts/",
            f"/releases/{code}/texts/{world.public_text_ids[0]}/",
            f"/releases/{code}/archive.zip",
            f"/api/v1/releases/{code}/", f"/api/v1/releases/{code}/leaderboard/",
            f"/api/v1/releases/{code}/texts/", f"/api/v1/releases/{code}/texts.csv",
            *catalogue_urls(world)]


def catalogue_urls(world) -> list[str]:
    """Answers made of every publication, not of the one release a URL names."""
    code, model = world.release.code, "fixture/candid"
    return ["/", f"/releases/prev.0/compare/{code}/", f"/releases/prev.0/compare/{code}.csv",
            f"/models/{model}/", f"/models/{model}.csv", "/api/v1/releases/",
            "/api/v1/scenarios/", f"/api/v1/releases/prev.0/compare/{code}/",
            f"/api/v1/models/{model}/"]


def cache_directives(response) -> set[str]:
    return {part.strip() for part in response["Cache-Control"].split(",")}


def test_published_answers_carry_a_strong_etag_that_shared_caches_may_keep(client, world):
    for url in published_urls(world):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response["ETag"].startswith('"') and response["ETag"].endswith('"'), url
        assert {"public", "max-age=300", "s-maxage=86400"} <= cache_directives(response), url
        assert "private" not in cache_directives(response), url
        assert client.get(url)["ETag"] == response["ETag"], url


def test_a_conditional_request_answers_304_without_building_the_page(
    client, world, monkeypatch, django_assert_max_num_queries
):
    url = f"/releases/{world.release.code}/"
    etag = client.get(url)["ETag"]

    def never(*args, **kwargs):
        raise AssertionError("the page was built for a conditional request that matched")

    monkeypatch.setattr(views, "release_page", never)
    with django_assert_max_num_queries(3):
        response = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == etag
    assert "public" in cache_directives(response)


def test_a_refused_parameter_is_never_cached_and_the_valid_address_still_is(client, world):
    code = world.release.code
    # The API refuses it; a page redirects to its address without it (`query_params.reads`).
    for url, status in ((f"/releases/{code}/", 301), (f"/releases/{code}/texts/", 301),
                        (f"/api/v1/releases/{code}/", 400),
                        (f"/api/v1/releases/{code}/texts/", 400),
                        (f"/releases/{code}/leaderboard.csv", 301), ("/", 301)):
        refused = client.get(url, {"bogus": "1"})
        assert refused.status_code == status, url
        assert "ETag" not in refused, url
        assert {"private", "no-store"} <= cache_directives(refused), url
        etag = client.get(url)["ETag"]
        again = client.get(url, HTTP_IF_NONE_MATCH=etag)
        assert again.status_code == 304 and again["ETag"] == etag, url


def test_a_weakened_tag_still_matches(client, world):
    # If-None-Match compares weakly: a proxy that compressed the answer may send W/"tag".
    url = f"/releases/{world.release.code}/leaderboard.csv"
    etag = client.get(url)["ETag"]
    assert client.get(url, HTTP_IF_NONE_MATCH=f"W/{etag}").status_code == 304
    assert client.get(url, HTTP_IF_NONE_MATCH=f'"other", W/{etag}').status_code == 304


def test_a_stale_tag_gets_the_whole_page(client, world):
    url = f"/releases/{world.release.code}/leaderboard.csv"
    whole = client.get(url).content
    response = client.get(url, HTTP_IF_NONE_MATCH='"not-this-one"')
    assert response.status_code == 200
    assert response.content == whole and whole


def test_the_page_tag_changes_when_a_contamination_check_is_added_and_the_chart_does_not(
    client, world
):
    code = world.release.code
    page, chart = client.get(f"/releases/{code}/")["ETag"], client.get(
        f"/releases/{code}/chart.svg")["ETag"]
    ContaminationCheck.objects.create(release=world.release, scanned_at=timezone.now())
    assert client.get(f"/releases/{code}/")["ETag"] != page
    assert client.get(f"/releases/{code}/chart.svg")["ETag"] == chart
    response = client.get(f"/releases/{code}/", HTTP_IF_NONE_MATCH=page)
    assert response.status_code == 200


def test_a_draft_is_never_cached(client, staff_client, small_demo_release):
    code = small_demo_release.code
    urls = [f"/releases/{code}/", f"/api/v1/releases/{code}/",
            f"/api/v1/releases/{code}/leaderboard/"]
    for url in urls:
        response = staff_client.get(url)
        assert response.status_code == 200, url
        assert "ETag" not in response, url
        assert {"private", "no-store"} <= cache_directives(response), url
    staff_client.logout()
    for url in urls:
        missing = client.get(url)
        assert missing.status_code == 404, url
        assert {"private", "no-store"} <= cache_directives(missing), url


def test_staff_views_of_a_published_release_are_never_cached(staff_client, world):
    url = f"/releases/{world.release.code}/"
    anonymous_tag = '"anything"'
    response = staff_client.get(url, HTTP_IF_NONE_MATCH=anonymous_tag)
    assert response.status_code == 200
    assert "ETag" not in response
    assert {"private", "no-store"} <= cache_directives(response)


def test_a_second_reader_gets_the_kept_answer_without_building_it(
    client, world, monkeypatch, django_assert_max_num_queries
):
    url = f"/releases/{world.release.code}/"
    first = client.get(url)

    def never(*args, **kwargs):
        raise AssertionError("the page was built again for the same snapshot")

    monkeypatch.setattr(views, "release_page", never)
    with django_assert_max_num_queries(3):
        second = client.get(url)
    assert second.status_code == 200
    assert second.content == first.content
    assert second["ETag"] == first["ETag"]
    assert second["Content-Type"] == first["Content-Type"]


def test_an_answer_with_the_visitors_csrf_token_is_never_cached_or_kept(world, rf):
    built = []

    def with_token(request, code):
        built.append(code)
        return HttpResponse(get_token(request))

    view = published_cache(with_token)
    for _ in range(2):
        request = rf.get(f"/releases/{world.release.code}/form/")
        request.user = AnonymousUser()
        response = view(request, code=world.release.code)
        assert "ETag" not in response
        assert {"private", "no-store"} <= cache_directives(response)
    assert len(built) == 2


def test_answers_made_of_every_release_change_their_tag_when_one_more_is_published(
        client, world):
    before = {url: client.get(url)["ETag"] for url in catalogue_urls(world)}
    for url, etag in before.items():
        assert client.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 304, url

    published_release_create(code="pub.1")

    for url, etag in before.items():
        response = client.get(url, HTTP_IF_NONE_MATCH=etag)
        assert response.status_code == 200 and response["ETag"] != etag, url
    assert "pub.1" in client.get("/").content.decode()


def test_staff_get_the_catalogue_pages_uncached(staff_client, world):
    for url in catalogue_urls(world):
        response = staff_client.get(url)
        assert response.status_code == 200, url
        assert "ETag" not in response and "no-store" in cache_directives(response), url


def test_the_json_tag_never_confirms_the_browsable_api_page(client, world):
    url = "/api/v1/releases/"
    as_json = client.get(url, HTTP_ACCEPT="application/json")
    as_page = client.get(url, HTTP_ACCEPT="text/html")
    assert as_json["Content-Type"].startswith("application/json")
    assert as_page["Content-Type"].startswith("text/html")
    # The browsable page carries the visitor's CSRF token: never kept, and no tag.
    assert "ETag" not in as_page and "no-store" in cache_directives(as_page)
    refused = client.get(url, HTTP_ACCEPT="text/html", HTTP_IF_NONE_MATCH=as_json["ETag"])
    assert refused.status_code == 200 and refused["Content-Type"].startswith("text/html")
    matched = client.get(url, HTTP_ACCEPT="application/json",
                         HTTP_IF_NONE_MATCH=as_json["ETag"])
    assert matched.status_code == 304 and "Accept" in matched["Vary"]


def test_each_representation_has_its_own_tag_and_a_304_only_for_its_own(client, world):
    """A tag names one representation: the list, another page of it, a filtered one and the
    CSV of the same texts all sent one tag, and each answered 304 to the others' tag, so a
    cache that revalidated would serve one for another."""
    code, model = world.release.code, "fixture/candid"
    groups = [
        [f"/api/v1/releases/{code}/texts/", f"/api/v1/releases/{code}/texts/?limit=1",
         f"/api/v1/releases/{code}/texts/?offset=100",
         f"/api/v1/releases/{code}/texts/?model={model}", f"/api/v1/releases/{code}/texts.csv"],
        [f"/releases/{code}/texts/", f"/releases/{code}/texts/?page=2"],
        [f"/releases/prev.0/compare/{code}.csv", f"/models/{model}.csv"],
    ]
    for urls in groups:
        tags = {}
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, url
            tags[url] = response["ETag"]
        assert len(set(tags.values())) == len(urls), tags
        for url in urls:
            for other, etag in tags.items():
                status = client.get(url, HTTP_IF_NONE_MATCH=etag).status_code
                assert status == (304 if other == url else 200), (url, other)
