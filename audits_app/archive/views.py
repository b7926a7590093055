"""Downloading a published release as one ZIP: the public archive for anyone, the staff
archive for staff only. Each is built once and kept (`release_archive_kept`); downloads
are limited per visitor, counted in the shared cache like the arena's limits."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse
from django_ratelimit.core import get_usage

from audits_app import query_params
from audits_app.archive.export import archive_name, release_archive_kept
from audits_app.archive.signing import SigningKeyError
from audits_app.arena.ratelimits import connection_key
from audits_app.pages.viewer import may_download_staff_archive, published_release_get
from baitbench_site.methods import require_safe
from baitbench_site.roles import is_staff

log = logging.getLogger("baitbench.archive")

# Downloads per visitor's network (HMAC-keyed, as the arena's) and window.
DOWNLOADS = ("archive.downloads", "30/10m")


@require_safe
@query_params.reads()
def release_archive_download(request: HttpRequest, code: str, *, staff: bool) -> HttpResponse:
    """A published release as one ZIP (`audits_app.archive`): the public archive for anyone,
    the staff archive (held-out and confidential material included) for staff only, and
    for publishers only while the release still holds texts back (it names their writers)."""
    if staff and not is_staff(request.user):
        raise Http404("No staff archive for you.")
    published = published_release_get(code, request.user)
    if staff and not may_download_staff_archive(request.user, published):
        raise Http404("The staff archive names the writers of texts this release still holds "
                      "for its arena or reading studies: publishers only until they are "
                      "revealed.")
    kept = release_archive_kept(published.release, staff=staff)
    response = HttpResponse(bytes(kept.data), content_type="application/zip")
    name = archive_name(published.release, staff=staff)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Archive-SHA256"] = kept.sha256
    return response


def downloader_key(group: str, request: HttpRequest) -> str:
    """Who is downloading: a signed-in account counts on its own (staff behind one office
    network are not limited by what its anonymous visitors fetch), anyone else by network."""
    if request.user.is_authenticated:
        return f"account:{request.user.pk}"
    return connection_key(group, request)


def download_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Refuse (429) a visitor past DOWNLOADS, whether the answer would come from a cache or
    not: the limit is on downloads, not on builds."""

    @functools.wraps(view)
    def limited(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if kwargs.get("staff") and not is_staff(request.user):
            raise Http404("No staff archive for you.")  # before counting: nothing to limit
        group, rate = DOWNLOADS
        usage = get_usage(request, group=group, key=downloader_key, rate=rate, increment=True)
        if usage and usage["should_limit"]:
            response = HttpResponse("Too many archive downloads from your network: try again "
                                    "in a few minutes.\n", status=429,
                                    content_type="text/plain; charset=utf-8")
            response["Retry-After"] = "600"
            return response
        try:
            return view(request, *args, **kwargs)
        except SigningKeyError as error:
            # The check at start-up says so too (`audits_app.archive.checks`); a visitor gets
            # a clear refusal, not a server error, and the log names the setting (never a key).
            log.error("archive download of %s refused: %s", kwargs.get("code"), error)
            response = HttpResponse(
                "This site cannot build release archives at the moment: its archive signing "
                "key is misconfigured. Its operators are told; please try again later.\n",
                status=503, content_type="text/plain; charset=utf-8")
            response["Retry-After"] = "3600"
            return response

    return limited
