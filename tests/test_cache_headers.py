"""One rule for what a shared cache may keep (`baitbench_site.cache_headers`), and a method a
view does not take answered 405 before the CSRF check (`baitbench_site.methods`)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpResponse
from django.test import Client

from audits_app.tests.factories import published_release_create

pytestmark = pytest.mark.django_db

PUBLIC = {"public", "max-age=300", "s-maxage=86400"}


def directives(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


def never_stored(response) -> bool:
    return {"private", "no-store"} <= directives(response) and "public" not in directives(response)


@pytest.fixture
def published():
    return published_release_create(code="pub.0")


@pytest.fixture
def csrf_client():
    """A browser as a cross-site form would drive it: the CSRF check applies (the test
    client skips it unless asked)."""
    return Client(enforce_csrf_checks=True)


def test_an_answer_that_says_nothing_about_caching_is_never_stored(client):
    # A permanent redirect and a 404 are cacheable by default (RFC 9111): not here.
    for url, status in (("/releases/", 301), ("/favicon.ico", 301), ("/no-such-page/", 404)):
        response = client.get(url)
        assert response.status_code == status, url
        assert never_stored(response), (url, response.get("Cache-Control"))


def test_static_files_keep_whitenoises_own_caching(client, admin_client):
    for who in (client, admin_client):
        response = who.get("/static/favicon.svg")
        assert response.status_code == 200
        assert "public" in directives(response) and "no-store" not in directives(response)
        assert any(part.startswith("max-age=") for part in directives(response))


def test_published_answers_stay_cacheable_and_304_still_answers(client, published):
    url = f"/releases/{published.release.code}/"
    page = client.get(url)
    assert page.status_code == 200 and PUBLIC <= directives(page)
    again = client.get(url, HTTP_IF_NONE_MATCH=page["ETag"])
    assert again.status_code == 304 and again["ETag"] == page["ETag"]
    assert PUBLIC <= directives(again)


def rule_applied(request, *, cookie: bool = False) -> HttpResponse:
    from baitbench_site.cache_headers import CacheControlMiddleware

    def view(request):
        response = HttpResponse("shown", headers={"Cache-Control": "public, max-age=300"})
        if cookie:
            response.set_cookie("visitor", "1")
        return response

    return CacheControlMiddleware(view)(request)


def test_a_cookie_or_a_signed_in_user_makes_even_a_public_answer_private(rf):
    anonymous = rf.get("/")
    anonymous.user = AnonymousUser()
    assert directives(rule_applied(anonymous)) == {"public", "max-age=300"}
    assert directives(rule_applied(anonymous, cookie=True)) == {"private", "no-store"}

    signed_in = rf.get("/")
    signed_in.user = User(username="staff", is_staff=True)
    assert directives(rule_applied(signed_in)) == {"private", "no-store"}

    class Unreadable:  # the session store failed: whoever it was, never kept
        @property
        def is_authenticated(self):
            raise ConnectionError("session store down")

    unknown = rf.get("/")
    unknown.user = Unreadable()
    assert directives(rule_applied(unknown)) == {"private", "no-store"}


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_a_method_a_read_only_page_does_not_take_is_405_not_a_csrf_failure(
        csrf_client, published, method):
    code = published.release.code
    for url in (f"/releases/{code}/", f"/releases/{code}/archive.zip",
                f"/releases/{code}/leaderboard.csv", f"/releases/{code}/texts/"):
        response = getattr(csrf_client, method)(url)
        assert response.status_code == 405, (url, response.status_code)
        assert response["Allow"] == "GET, HEAD", url
        assert b"Not taken here" in response.content, url
        assert never_stored(response), url


def test_a_post_without_a_token_to_a_view_that_takes_posts_is_still_refused(
        csrf_client, published):
    code = published.release.code
    # Anonymous, to an operator's POST-only action and to a form's POST address.
    assert csrf_client.post(f"/runs/{code}/start/").status_code == 403
    assert csrf_client.post(f"/arena/{code}/consent/", {"agree": "on"}).status_code == 403
    # Signed in, to a page that takes GET and POST.
    csrf_client.force_login(User.objects.create_superuser("boss", password="pw"))
    assert csrf_client.post(f"/releases/{code}/publish/", {}).status_code == 403
    # A method that POST-only address does not take: 405, naming POST.
    put = csrf_client.put(f"/arena/{code}/consent/")
    assert put.status_code == 405 and put["Allow"] == "POST"


def test_every_view_but_the_admins_and_the_apis_declares_its_methods():
    """Every address of the site's own, public and staff, declares the methods it takes, so a
    method it does not take is a 405 before the CSRF check. The admin and the API's classes
    answer their own 405 (the API's are CSRF-exempt; the admin's are Django's)."""
    from django.urls import URLResolver, get_resolver

    from baitbench_site.methods import allowed_methods

    def patterns(resolver, prefix=""):
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                yield from patterns(entry, prefix + str(entry.pattern))
            else:
                yield prefix + str(entry.pattern), entry

    own = [(path, entry) for path, entry in patterns(get_resolver())
           if not path.startswith(("admin/", "api/"))]
    assert len(own) > 50
    undeclared = [path for path, entry in own if allowed_methods(entry.callback) is None]
    assert undeclared == []


def test_every_view_that_takes_get_takes_head():
    """HEAD answers as GET without the body (RFC 9110 9.3.2): the arena's and reading
    studies' pages, the operator's, took GET only and answered a link checker's or a
    cache's HEAD 405."""
    from django.urls import URLResolver, get_resolver

    from baitbench_site.methods import allowed_methods

    def patterns(resolver, prefix=""):
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                yield from patterns(entry, prefix + str(entry.pattern))
            else:
                yield prefix + str(entry.pattern), entry

    declared = [(path, allowed_methods(entry.callback)) for path, entry in
                patterns(get_resolver()) if allowed_methods(entry.callback)]
    assert len(declared) > 50
    assert [path for path, methods in declared if "GET" in methods
            and "HEAD" not in methods] == []


def test_a_staff_page_answers_a_method_it_does_not_take_with_405(csrf_client, published):
    csrf_client.force_login(User.objects.create_superuser("boss", password="pw"))
    code = published.release.code
    for url in ("/review/", "/publish/", "/staff/", f"/review/releases/{code}/agreement/",
                f"/review/releases/{code}/out-of-band/texts/", "/releases/"):
        response = csrf_client.post(url)
        assert response.status_code == 405, (url, response.status_code)
        assert response["Allow"] == "GET, HEAD", url
    # A form page takes POST: without a token that is the CSRF check's 403, as before.
    assert csrf_client.post(f"/review/releases/{code}/batches/new/").status_code == 403
    assert csrf_client.delete(f"/review/releases/{code}/batches/new/").status_code == 405


def test_no_view_uses_djangos_method_decorators_which_declare_nothing():
    """`django.views.decorators.http` keeps the methods to itself: the project's own
    (`baitbench_site.methods`) declare them on the view."""
    from pathlib import Path

    from django.conf import settings

    found = [str(path.relative_to(settings.BASE_DIR))
             for folder in ("audits_app", "runs_app", "scenarios_app", "baitbench_site")
             for path in (Path(settings.BASE_DIR) / folder).rglob("*.py")
             if "django.views.decorators.http" in path.read_text()
             and path.name != "methods.py"]
    assert found == []
