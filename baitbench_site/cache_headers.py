"""One rule for what a shared cache (a CDN, a proxy) may keep: every Django response passes here.

- An answer that sets a cookie, or is given to a signed-in user, is `Cache-Control: private,
  no-store`, whatever the view said: a cache that kept it would hand someone else the
  visitor's cookie (a CSRF token, an arena voter's or a reading study's key, a session) or
  what only staff may see (unpublished releases, the writers of blind pairs).
- An answer that says nothing about caching is `private, no-store` too. RFC 9111 lets a cache
  keep a 200, 301, 404 or 405 it was told nothing about, and guess how long it stays fresh
  from Last-Modified; no page here was written for that.
- An answer a view made explicitly cacheable (`audits_app.http_cache`: a published release's
  pages, CSVs, chart, archive and API answers, with a strong ETag; their 304s) keeps its
  headers when it goes to an anonymous reader and sets no cookie. So does WhiteNoise's static
  file (`Cache-Control: max-age=…, public`, `immutable` for hashed names): WhiteNoise answers
  before sessions and authentication, with no cookie, so its headers pass unchanged.

Public answers that change over time (an arena's results while it is open, its CSV and API
answer, the calibration API, reading studies' pages) say nothing, so they are `no-store`, not
`no-cache`. `no-cache` lets a cache keep a copy it must revalidate before each use; that pays
only when revalidating is cheap, with a validator the view can check without building the
answer (as `http_cache` checks a published page's ETag before the view runs). These answers
have none: live votes and study completions are what they are made of, so telling whether a
copy is still current costs as much as building it, and `no-cache` would save at most the
bytes, while leaving copies on disk in every cache on the way. A time-varying answer that
gains a cheap validator should opt in to caching as `http_cache` does, explicitly.

Placed first in MIDDLEWARE, outside SecurityMiddleware and WhiteNoise, so that it sees every
response Django gives (HTTPS redirects, WhiteNoise's files, CSRF failures, error pages), after
the session, CSRF and messages middleware have added their cookies.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

NEVER_STORED = "private, no-store"


class CacheControlMiddleware:
    """The module's rule."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        said = response.get("Cache-Control")
        if said is None or response.cookies or signed_in(request):
            if not never_stored(said):
                response["Cache-Control"] = NEVER_STORED
        return response


def signed_in(request: HttpRequest) -> bool:
    """Whether the answer went to a signed-in user. WhiteNoise's files and answers refused
    before authentication ran have no `user`: nobody's. When the user cannot be read (the
    session store or the database failed, which the answer may be the error page of), the
    answer is taken to be someone's: a cache must not keep it."""
    user = getattr(request, "user", None)
    try:
        return bool(user is not None and user.is_authenticated)
    except Exception:  # noqa: BLE001  (whatever failed, the safe answer is "someone's")
        return True


def never_stored(cache_control: str | None) -> bool:
    """Whether the header already says `private` and `no-store` (Django's `never_cache`
    says more: `max-age=0, no-cache, no-store, must-revalidate, private`)."""
    if cache_control is None:
        return False
    directives = {part.strip().split("=", 1)[0].lower() for part in cache_control.split(",")}
    return {"private", "no-store"} <= directives
