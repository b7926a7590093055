"""Addresses that only take a form's POST, and what a person who opens one gets instead.

A browser opens such an address by GET when someone reloads a page the POST answered (an
error shown at /vote/), follows a shared link or types it: Django's `require_POST` answers an
empty 405, a blank page. A GET or HEAD is sent on, with 303, to the page that holds the form;
any other method gets 405 (with the human page of `errors.MethodNotAllowedMiddleware`). The
POST itself is untouched: CSRF and rate limits apply as before. POST is declared on the view
(`methods.declare`), so that a PUT or DELETE gets its 405 before the CSRF check's 403.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import resolve_url

from baitbench_site.methods import declare

View = Callable[..., HttpResponse]


def post_only(get_goes_to: str) -> Callable[[View], View]:
    """`get_goes_to`: the URL name of the page with the form, reversed with the view's own
    URL arguments (an arena's code, a study's id)."""

    def decorator(view: View) -> View:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method in ("GET", "HEAD"):
                response = HttpResponse(status=303)
                response["Location"] = resolve_url(get_goes_to, *args, **kwargs)
                return response
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            return view(request, *args, **kwargs)

        return declare(wrapped, ["POST"])

    return decorator
