"""The HTTP methods a view takes, declared on the view, and a 405 for any other before CSRF.

Django's `CsrfViewMiddleware.process_view` runs before the view: a POST, PUT, PATCH or DELETE
to a read-only page without a CSRF token was answered 403 (a failed CSRF check) although the
page takes no such method at all (405 Method Not Allowed, with an `Allow` header, is the
answer HTTP asks for). Which methods a view takes cannot be read reliably from Django's own
`require_http_methods` (it keeps the list in a closure) nor guessed from the URL, so the
project's decorators below declare it on the view function as `allowed_methods`
(`functools.wraps` carries it out through every wrapper: login_required, `published_cache`,
`query_params.reads`), and `MethodNotAllowedFirstMiddleware`, placed just before
CsrfViewMiddleware, answers 405 to a method the view does not declare, before the CSRF check.

A view that declares nothing (the admin, the API's classes, which are CSRF-exempt and answer
their own 405) is left as before. A view that takes the method is untouched too: its CSRF
check runs exactly as before (a POST without a token to a POST view is still 403). Only
methods the CSRF check applies to are answered here; a GET to a POST-only address is the
view's to answer (`post_only` sends it to the form).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators import http as django_http

View = Callable[..., HttpResponse]

# The methods CsrfViewMiddleware never checks (RFC 9110's safe methods).
CSRF_SAFE = ("GET", "HEAD", "OPTIONS", "TRACE")


def declare(view: View, methods: Iterable[str]) -> View:
    """Mark `view` as taking only `methods` (the view must refuse any other itself)."""
    view.allowed_methods = tuple(methods)  # type: ignore[attr-defined]
    return view


def require_http_methods(methods: Iterable[str]) -> Callable[[View], View]:
    """Django's `require_http_methods`, the methods declared on the view."""
    methods = list(methods)

    def decorator(view: View) -> View:
        return declare(django_http.require_http_methods(methods)(view), methods)

    return decorator


require_POST = require_http_methods(["POST"])
# A page: GET, and HEAD (what a link checker or a cache sends), as Django's `require_safe`.
# No GET-only decorator: HEAD answers as GET without the body (RFC 9110 9.3.2), and the
# arena's and reading studies' pages that took GET alone answered HEAD 405.
require_safe = require_http_methods(["GET", "HEAD"])
# A page with a form posted back to it.
require_form = require_http_methods(["GET", "HEAD", "POST"])


def allowed_methods(view: View) -> tuple[str, ...] | None:
    """The methods `view` declares, or None when it declares none."""
    return getattr(view, "allowed_methods", None)


class MethodNotAllowedFirstMiddleware:
    """405 with `Allow` to a method the view does not declare, before the CSRF check (the
    module docstring). Its empty body becomes the site's 405 page in
    `errors.MethodNotAllowedMiddleware`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view: View, args, kwargs) -> HttpResponse | None:
        if request.method in CSRF_SAFE:
            return None
        allowed = allowed_methods(view)
        if allowed is None or request.method in allowed:
            return None
        return HttpResponseNotAllowed(allowed)
