"""Published pages that a shared cache or CDN can carry, and conditional requests answered 304.

A published release never changes, so what an anonymous reader gets from its pages, CSVs,
chart, archive and API answers is fixed by three things: the snapshot (named by its hash), the
evidence added to a published release afterwards that some pages show (its contamination check,
reader trials reported since; whether its arena has closed and whether its reading studies'
texts were revealed, which makes the texts held for them public; on HTML pages, whether the
navigation links an open arena), and the code that renders them. The strong ETag is a hash of
those three and of the representation asked for (path, query, and for the API JSON or HTML),
so every web process of one deployment gives the same tag, a deployment that renders
differently gives another, and no answer's tag confirms another answer. `If-None-Match` is
checked before the view runs: a 304 costs at most the evidence stamp, for pages that show it
(one query; the publication's hash is kept per process once read), and builds nothing.

Each web process also keeps the rendered answers it gave anonymous readers (by URL, Accept
header and ETag, within RENDERED_CACHE_BYTES), so a page is built once per process and
snapshot, however many readers reach Python.

Never cached, `Cache-Control: private, no-store`: drafts (an unpublished release, whoever
asks), anything a signed-in user gets (staff see held-out material and their own navigation),
and any answer that carries something of the visitor's (a cookie, a CSRF token, a changed
session: `_personal`).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import BadRequest
from django.core.handlers.exception import response_for_exception
from django.db.models import Count, OuterRef, Subquery
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.utils.http import parse_etags

from audits_app.archive import signing
from audits_app.arena.selectors import public_arena_codes
from audits_app.models import PopulationWeights, Publication, ReadingStudy, StudyParticipant
from audits_app.pages import viewer as public
from audits_app.publication.held_cells import Holder
from runs_app.models import ContaminationCheck, ReaderTrial, Release

# Browsers check again after five minutes; shared caches may keep a page a day and serve it
# stale for another while they revalidate, since revalidating costs three queries.
PUBLISHED_CACHE_CONTROL = {
    "public": True, "max_age": 300, "s_maxage": 86400, "stale_while_revalidate": 86400,
}
RENDERING_SOURCES = ("audits_app", "runs_app", "scenarios_app", "baitbench_site", "templates")

View = Callable[..., HttpResponse]

# Rendered answers kept per process, by URL, method, Accept header and ETag: the tag changes
# whenever the answer would, so a kept answer is never stale. Bounded in bytes; the largest
# answers (a 200-model leaderboard's JSON is 28 MB and takes 0.4 s to encode) are the ones
# worth keeping, so one of them fits with room for the pages.
RENDERED_CACHE_BYTES = 96 * 2**20
RENDERED_ANSWER_MAX_BYTES = 32 * 2**20


@dataclass(frozen=True)
class _Kept:
    status: int
    headers: tuple[tuple[str, str], ...]
    content: bytes

    def response(self) -> HttpResponse:
        response = HttpResponse(self.content, status=self.status)
        for name, value in self.headers:
            response[name] = value
        return response


class _RenderedAnswers:
    """A least-recently-used store of rendered answers, at most RENDERED_CACHE_BYTES."""

    def __init__(self, limit: int) -> None:
        self.limit, self.size = limit, 0
        self.kept: OrderedDict[tuple[str, ...], _Kept] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[str, ...]) -> _Kept | None:
        with self.lock:
            kept = self.kept.get(key)
            if kept is not None:
                self.kept.move_to_end(key)
            return kept

    def put(self, key: tuple[str, ...], response: HttpResponse) -> None:
        if response.streaming:
            return
        content = response.content
        if len(content) > RENDERED_ANSWER_MAX_BYTES:
            return
        kept = _Kept(response.status_code, tuple(response.items()), content)
        with self.lock:
            if key in self.kept:
                return
            self.kept[key] = kept
            self.size += len(content)
            while self.size > self.limit:
                _, dropped = self.kept.popitem(last=False)
                self.size -= len(dropped.content)

    def clear(self) -> None:
        with self.lock:
            self.kept.clear()
            self.size = 0


_rendered = _RenderedAnswers(RENDERED_CACHE_BYTES)


def forget_rendered() -> None:
    """Drop every kept answer and publication (tests that count what building a page costs;
    on SQLite a rolled-back test's ids and codes are used again)."""
    _rendered.clear()
    with _identities_lock:
        _identities.clear()


@functools.cache
def rendering_version() -> str:
    """Hash of the code and templates that render pages: the same in every process of one
    deployment (contents, not modification times, which differ between machines)."""
    digest = hashlib.sha256()
    root = Path(settings.BASE_DIR)
    for folder in RENDERING_SOURCES:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in {".py", ".html", ".txt", ".svg"} and "tests" not in path.parts:
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class PublishedIdentity:
    """What a published release's tag is made of that never changes: its snapshot hash."""

    snapshot_hash: str
    release: Release


_identities: dict[str, PublishedIdentity] = {}
_identities_lock = threading.Lock()


def published_identity(code: str) -> PublishedIdentity | None:
    """The publication's hash and release, kept per process once found: a publication is
    never changed or deleted, so a kept one stays true. Not finding one is never kept (the
    release may be published a moment later)."""
    with _identities_lock:
        found = _identities.get(code)
    if found is not None:
        return found
    publication = public.publication_get(code)
    if publication is None:
        return None
    found = PublishedIdentity(publication.snapshot_hash, publication.release)
    with _identities_lock:
        _identities[code] = found
    return found


def evidence_stamp(release: Release) -> str:
    """What a published release's pages show that was added after publication: when its
    contamination check last scanned and how many findings and probes it holds, and the newest
    reader trial reported in its language, its reading studies' newest completion, opening
    and closing (their figures and state are on the page), the newest population weights of
    its language (entries are only ever added; the newest weights the panel's figures), and
    whether its arena has closed and its reading studies' texts were revealed (which makes
    the texts held for them public; kept for `viewer.revealed_holders`). One query.

    Human reader results and spot-checks reach the public pages only through the snapshot,
    frozen at publication, so the snapshot's hash covers them."""
    check = ContaminationCheck.objects.filter(release=OuterRef("pk"))
    completed = StudyParticipant.objects.filter(study__release=OuterRef("pk"),
                                                completed_at__isnull=False)
    studies = ReadingStudy.objects.filter(release=OuterRef("pk"))
    trials = ReaderTrial.objects.filter(language=OuterRef("language"), reported_at__isnull=False)
    weights = PopulationWeights.objects.filter(language=OuterRef("language"))
    revealed_names = [f"revealed_{holder.value}" for holder in Holder]
    stamp = Release.objects.filter(pk=release.pk).annotate(
        scanned=Subquery(check.values("scanned_at")[:1]),
        found=Subquery(check.annotate(n=Count("findings")).values("n")[:1]),
        probed=Subquery(check.annotate(n=Count("probes")).values("n")[:1]),
        trial=Subquery(trials.order_by("-reported_at").values("pk")[:1]),
        study_reader=Subquery(completed.order_by("-completed_at").values("completed_at")[:1]),
        study_change=Subquery(studies.order_by("-opened_at").values("opened_at")[:1]),
        study_closed=Subquery(studies.filter(closed_at__isnull=False).order_by(
            "-closed_at").values("closed_at")[:1]),
        weights=Subquery(weights.order_by("-entered_at", "-pk").values("pk")[:1]),
        **public.reveal_subqueries(OuterRef("pk")),
    ).values("scanned", "found", "probed", "trial", "study_reader", "study_change",
             "study_closed", "weights", *revealed_names).first()
    if stamp is not None:
        public.revealed_remember(release.pk, {holder: stamp[f"revealed_{holder.value}"]
                                              for holder in Holder})
    return repr(stamp and list(stamp.values()))


def published_etag(snapshot_hash: str, evidence: str) -> str:
    digest = hashlib.sha256(f"{snapshot_hash}|{evidence}|{rendering_version()}".encode())
    return f'"{digest.hexdigest()[:40]}"'


def navigation_stamp() -> str:
    """What every HTML page's navigation shows that can change: whether an arena is open."""
    return f"arena:{bool(public_arena_codes())}"


def published_cache(view: View, *, evidence: bool = False, page: bool = False,
                    signed: bool = False) -> View:
    """Wrap a view whose URL names a release `code`: ETag, Cache-Control and 304 for anonymous
    readers of a published release (module docstring); `evidence` for answers that show what
    `evidence_stamp` covers, `page` for HTML pages (their navigation), `signed` for archives
    (signed by whichever key the instance has now)."""

    @functools.wraps(view)
    def cached(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method not in ("GET", "HEAD") or request.user.is_authenticated:
            return _never_cached(_answer(view, request, *args, **kwargs))
        publication = published_identity(kwargs["code"])
        if publication is None:  # a draft, or no such release: a 404 that may change
            return _never_cached(_answer(view, request, *args, **kwargs))
        # Held texts become public when their holder reveals them (the arena's closing,
        # reading studies' reveal; `viewer.snapshot_for_viewer`): the evidence stamp's query
        # says so too, where it is read anyway.
        revealed = sorted(public.revealed_holders(publication.release.pk))
        stamp = (evidence_stamp(publication.release) if evidence else
                 f"held-texts-revealed:{revealed}")
        stamp += navigation_stamp() if page else ""
        stamp += f"key:{signing.signing_key_id()}" if signed else ""
        return _conditional(view, request, args, kwargs,
                            published_etag(publication.snapshot_hash,
                                           stamp + _representation(request)))

    return cached


def catalogue_digest() -> str:
    """A hash of every publication (id and snapshot hash): what the pages made of all
    published releases (the front page, compare, a model's history, the scenario list) are
    fixed by, since a publication never changes. One query."""
    rows = Publication.objects.order_by("pk").values_list("pk", "snapshot_hash")
    return hashlib.sha256(repr(list(rows)).encode()).hexdigest()


def catalogue_cache(view: View, *, page: bool = False) -> View:
    """Wrap a view built from the published releases as a whole, not one named by the URL:
    the same ETag, Cache-Control and 304 as `published_cache`, tagged by `catalogue_digest`.
    Nothing a draft holds reaches an anonymous reader of these views, and nothing added to
    a release after publication is shown on them."""

    @functools.wraps(view)
    def cached(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method not in ("GET", "HEAD") or request.user.is_authenticated:
            return _never_cached(_answer(view, request, *args, **kwargs))
        stamp = "catalogue" + (navigation_stamp() if page else "") + _representation(request)
        return _conditional(view, request, args, kwargs, published_etag(catalogue_digest(), stamp))

    return cached


def _representation(request: HttpRequest) -> str:
    """Which representation the tag names: the path and query (the texts as JSON or as CSV,
    one page of a list or another, filtered by a model or not), and for the API, which
    answers one address as JSON or as the browsable HTML page by the Accept header, which
    of the two. The rest of the tag is shared by every answer of a release (or of the
    catalogue): without this, each answered 304 to another's tag, and a cache revalidating
    one would serve it for the other."""
    return f"|{request.get_full_path()}{_shape(request)}"


def _shape(request: HttpRequest) -> str:
    """The API answers the same address as JSON or as the browsable HTML page, by the Accept
    header: each gets its own tag, so a 304 never confirms one with the other's tag."""
    if not request.path.startswith("/api/"):
        return ""
    return "|html" if "text/html" in request.headers.get("Accept", "") else "|json"


def _conditional(view: View, request: HttpRequest, args: tuple, kwargs: dict,
                 etag: str) -> HttpResponse:
    """304 when the reader holds `etag`; else the kept answer, else the view's, kept."""
    # If-None-Match compares weakly (RFC 9110 13.1.2): W/"x" matches "x", as a proxy
    # that compresses an answer may have weakened its tag.
    wanted = {tag.removeprefix("W/")
              for tag in parse_etags(request.headers.get("If-None-Match", ""))}
    if etag in wanted or "*" in wanted:
        not_modified = _published(HttpResponseNotModified(), etag)
        if _shape(request):  # a 304 names what it varies on as its 200 does
            patch_vary_headers(not_modified, ("Accept",))
        return not_modified
    # The whole address, host and scheme too: the API's answers hold absolute links.
    key = (request.build_absolute_uri(), request.method, request.headers.get("Accept", ""), etag)
    kept = _rendered.get(key)
    if kept is not None:
        return _published(kept.response(), etag)
    response = _answer(view, request, *args, **kwargs)
    if hasattr(response, "render") and not response.is_rendered:
        response.render()  # now, so that a CSRF token used while rendering is seen
    if response.status_code != 200 or _personal(request, response):
        return _never_cached(response)
    _rendered.put(key, response)
    return _published(response, etag)


def _personal(request: HttpRequest, response: HttpResponse) -> bool:
    """The answer carries something of this visitor's: a cookie, or a CSRF token (which the
    middleware turns into a cookie only after the view, so the response cannot show it yet),
    or a session it changed."""
    session = getattr(request, "session", None)
    return bool(response.cookies or request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
                or (session is not None and session.modified))


def _answer(view: View, request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """The view's response; its 404 as the site's 404 page, so that it can be marked: a 404 is
    cacheable by default (RFC 9111), and a draft's 404 turns into a page when it is published.
    A 400 (a parameter the view refused, `audits_app.query_params`) is marked too: it is an
    answer to this visitor's mistake, never a published page."""
    try:
        return view(request, *args, **kwargs)
    except (Http404, BadRequest) as refused:
        return response_for_exception(request, refused)


def _published(response: HttpResponse, etag: str) -> HttpResponse:
    response["ETag"] = etag
    patch_cache_control(response, **PUBLISHED_CACHE_CONTROL)
    return response


def _never_cached(response: HttpResponse) -> HttpResponse:
    if "ETag" in response:
        del response["ETag"]
    patch_cache_control(response, private=True, no_store=True)
    return response
