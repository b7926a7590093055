"""The arena's pages (DESIGN section 9): consent, blind pairs, votes, results, and the
publisher's page to prepare, open and close an arena.

Until a release's arena has been opened (which needs an approved ethics review) anonymous
visitors get 404 on every page of it; staff may test it, and their votes are shadow votes.
Voters are anonymous: a random id in a signed cookie. Every form is a plain POST with a CSRF
token, so the arena works without JavaScript and by keyboard alone. Nothing a voter is sent
names or identifies a writer: the vote form refers to the pair shown by a signed token.
"""

from __future__ import annotations

import functools
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from audits_app import query_params
from audits_app.arena import ratelimits, selectors, services
from audits_app.arena.csv_export import results_csv
from audits_app.arena.forms import ConsentForm, ReasonForm, VoteForm
from audits_app.arena.models import ArenaShowing, ArenaVoter, EthicsReview
from audits_app.arena.presentation import results_context
from audits_app.arena.selectors import ArenaAccess, VoterShowings
from audits_app.models import Publication
from audits_app.pages import viewer as public
from baitbench_site.methods import require_form, require_safe
from baitbench_site.post_only import post_only
from runs_app.models import Release

COOKIE = "baitbench_arena_voter"
COOKIE_SALT = "audits_app.arena.voter"
COOKIE_MAX_AGE = int(timedelta(days=365).total_seconds())
TOKEN_SALT = "audits_app.arena.pair"
TOKEN_MAX_AGE = int(timedelta(hours=6).total_seconds())


def _arena(request: HttpRequest, code: str) -> ArenaAccess:
    """The release's arena as this visitor may see it; 404 when it is not public to them."""
    arena = selectors.arena_access(code, request.user)
    if arena is None:
        raise Http404("No arena for this release.")
    return arena


def _voter(request: HttpRequest) -> ArenaVoter | None:
    key = request.get_signed_cookie(COOKIE, default=None, salt=COOKIE_SALT)
    return selectors.voter_by_key(key) if key else None


def _token(showing: ArenaShowing, voter: ArenaVoter, arena: ArenaAccess) -> str:
    # Signed per voter: a token is useless to anyone else. It carries which of this voter's
    # own showings in this arena it is (the voter knows that already), never the showing's
    # id: ids run in sequence across all voters and would tell how many pairs were shown,
    # and to whom.
    # A showing just saved on PostgreSQL knows its ordinal already (`_showing_insert`).
    ordinal = getattr(showing, "ordinal", None)
    if ordinal is None:
        ordinal = selectors.showing_ordinal(showing, arena.release.pk)
    return signing.dumps(ordinal, salt=f"{TOKEN_SALT}:{voter.key}")


def _showing_from(token: str, known: VoterShowings) -> ArenaShowing | None:
    try:
        ordinal = signing.loads(token, salt=f"{TOKEN_SALT}:{known.voter.key}",
                                max_age=TOKEN_MAX_AGE)
    except signing.BadSignature:
        return None
    if not isinstance(ordinal, int) or ordinal < 0:
        return None
    return known.at(ordinal)


def _limited(request: HttpRequest, arena: ArenaAccess, limit: tuple[str, str]) -> HttpResponse:
    """The 429 of a hard limit, with Retry-After: the seconds until its window ends."""
    response = _page(request, "limited.html", arena, status=429)
    response["Retry-After"] = str(ratelimits.retry_after(request, limit))
    return response


def _page(request: HttpRequest, template: str, arena: ArenaAccess, status: int = 200,
          **context) -> HttpResponse:
    return render(request, f"arena/{template}", {"arena": arena, **context}, status=status)


# ---------------------------------------------------------------------------------------------
# Voters
# ---------------------------------------------------------------------------------------------


@require_safe
@query_params.reads()
def arena_index(request: HttpRequest) -> HttpResponse:
    """Arenas that are public (and, for staff, every published release's arena)."""
    staff = public.is_staff(request.user)
    codes = selectors.arena_codes()
    if not codes and not staff:
        raise Http404("No arena is open.")
    releases = public.published_releases() if staff else []
    return render(request, "arena/index.html", {
        "arenas": [{"code": code, "open": is_open} for code, is_open in codes.items()],
        "staff_releases": [row["code"] for row in releases if row["code"] not in codes],
    })


@require_safe
@query_params.reads()
def arena_detail(request: HttpRequest, code: str) -> HttpResponse:
    """What the arena is, what is stored, and the consent form (or a link to go on)."""
    arena = _arena(request, code)
    return _page(request, "detail.html", arena, form=ConsentForm(), voter=_voter(request),
                 nothing_left=_nothing_left(arena))


def _nothing_left(arena: ArenaAccess) -> bool:
    """Voting, but no pair can be shown: another release made every paired text public."""
    return arena.voting and selectors.pairs_left(arena.release) == 0


@post_only(get_goes_to="arena:detail")
def arena_consent(request: HttpRequest, code: str) -> HttpResponse:
    arena = _arena(request, code)
    form = ConsentForm(request.POST)
    if not form.is_valid() or _nothing_left(arena):
        return _page(request, "detail.html", arena, status=400, form=form, voter=None,
                     nothing_left=_nothing_left(arena))
    voter = _voter(request)
    if voter is None:
        if ratelimits.voter_limited(request):
            return _limited(request, arena, ratelimits.VOTERS_HARD)
        voter = services.voter_create()
    response = redirect("arena:pair", code=arena.code)
    response.set_signed_cookie(COOKIE, voter.key, salt=COOKIE_SALT, max_age=COOKIE_MAX_AGE,
                               httponly=True, samesite="Lax", secure=request.is_secure())
    return response


def _voting(request: HttpRequest, code: str,
            closed_status: int) -> tuple[ArenaAccess, VoterShowings] | HttpResponse:
    """The arena, and the voter with the pairs they were shown in it (one query), or the page
    to answer instead: consent first; closed."""
    key = request.get_signed_cookie(COOKIE, default=None, salt=COOKIE_SALT)
    arena, known = selectors.arena_voting_access(code, request.user, key or None)
    if arena is None:
        raise Http404("No arena for this release.")
    if known is None:
        return redirect("arena:detail", code=arena.code)
    if not arena.voting:
        return _page(request, "closed.html", arena, status=closed_status)
    return arena, known


@require_safe
@query_params.reads()
def arena_pair(request: HttpRequest, code: str) -> HttpResponse:
    found = _voting(request, code, closed_status=200)
    if isinstance(found, HttpResponse):
        return found
    arena, known = found
    voter = known.voter
    # A reload (no vote since the last pair was shown) shows that pair again, as the 409 of a
    # resent vote does: same pair and sides, a fresh token; no new showing, so nothing is
    # counted again (the pair's showings, the pairs limit) and the simulated public is not
    # asked again.
    pending = selectors.pending_showing(known, arena.release)
    if pending is not None:
        return _pair_page(request, arena, pending, voter, _blank())
    if ratelimits.pair_limited(request):
        return _limited(request, arena, ratelimits.PAIRS_HARD)
    showing = services.showing_create(release=arena.release, voter=voter, seen=known.seen)
    if showing is None:  # every pair seen, or none left to see: the done page says which
        return _page(request, "done.html", arena, nothing_left=_nothing_left(arena))
    return _pair_page(request, arena, showing, voter, _blank())


@functools.cache
def _blank() -> VoteForm:
    """An unbound vote form, made once per process: every pair page shows one, and making a
    form (copying its fields) cost more than showing it. Everything a page reads of it is
    worked out here, so pages only read it, whichever thread shows it."""
    form = VoteForm()
    form.errors  # noqa: B018 (no errors: an unbound form)
    for name in form.fields:
        form[name].initial  # noqa: B018
    return form


def _pair_page(request: HttpRequest, arena: ArenaAccess, showing: ArenaShowing, voter: ArenaVoter,
               form: VoteForm, status: int = 200, answered_vote: bool = False) -> HttpResponse:
    view = selectors.pair_view(showing, arena.release)
    return _page(request, "pair.html", arena, status=status, view=view, form=form,
                 token=_token(showing, voter, arena), attention=showing.attention,
                 answered_vote=answered_vote)


@post_only(get_goes_to="arena:pair")
def arena_vote(request: HttpRequest, code: str) -> HttpResponse:
    found = _voting(request, code, closed_status=403)
    if isinstance(found, HttpResponse):
        return found
    arena, known = found
    voter = known.voter
    showing = _showing_from(request.POST.get("pair", ""), known)
    if showing is None:
        return _page(request, "expired.html", arena, status=400)
    form = VoteForm(request.POST)
    if not form.is_valid():
        return _pair_page(request, arena, showing, voter, form, status=400)
    # The next pair is counted against its limit here too, in the same round trip to the
    # cache: this answer shows it.
    limits = ratelimits.vote_limits(request, voter.key, showing.pair_id, next_pair=True)
    if limits.hard:
        return _limited(request, arena, ratelimits.VOTES_HARD)
    try:
        services.vote_record(
            showing=showing, voter=voter, favourable=form.cleaned_data["favourable"],
            honest=form.cleaned_data["honest"], recognised=form.cleaned_data["recognised"],
            staff=arena.staff, rate_limited=limits.soft, state=arena.state,
            origin=ratelimits.origin_key(request),
        )
    except services.AlreadyVoted:
        # The same form sent again: without JavaScript, a reload of the page the vote answered
        # with. Still 409, but showing the pair that answer showed (the voter's latest, if
        # unanswered), so the pair being read is not lost. No new showing, nothing new shown.
        resumed = _unanswered_after(known, showing, arena)
        if resumed is None:
            return _page(request, "already.html", arena, status=409)
        messages.warning(request, "You have already answered on the previous pair: your "
                                  "first answer is kept. Here is the pair you were reading.")
        return _pair_page(request, arena, resumed, voter, _blank(), status=409,
                          answered_vote=True)
    # Straight on to the next pair, the confirmation on top of it: no page to click through.
    messages.success(request, "Thank you: your answer is recorded. Here is the next pair.")
    # The answer is the next pair itself (one round trip a vote, not a redirect and a GET).
    # Sending the same form again still records nothing: its token names the pair just
    # answered, and the second INSERT is refused (409). The page puts the pair's own address
    # in the browser's history (`replace_state.js`), so a reload asks for a pair by GET and
    # never sends the vote again. No pair to show (limited, or every pair seen): the pair
    # page says which, as before.
    # The pairs shown were read with the voter, before this vote: a vote shows no pair.
    showing = None if limits.next_pair else services.showing_create(
        release=arena.release, voter=voter, seen=known.seen)
    if showing is None:
        return redirect("arena:pair", code=arena.code)
    return _pair_page(request, arena, showing, voter, _blank(), answered_vote=True)


def _unanswered_after(known: VoterShowings, answered: ArenaShowing,
                      arena: ArenaAccess) -> ArenaShowing | None:
    """The voter's pending showing in the arena (`selectors.pending_showing`, as a reload
    of the pair page shows it), if it came after `answered` (read with the voter, before
    this request's vote)."""
    pending = selectors.pending_showing(known, arena.release)
    return pending if pending is not None and pending.pk > answered.pk else None


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@require_safe
@query_params.reads()
def arena_results(request: HttpRequest, code: str) -> HttpResponse:
    arena = _arena(request, code)
    result = services.results_current(release=arena.release)
    context = results_context(arena.publication, arena.state, result, staff=arena.staff)
    return _page(request, "results.html", arena, **context)


@require_safe
@query_params.reads()
def arena_results_csv(request: HttpRequest, code: str) -> HttpResponse:
    arena = _arena(request, code)
    result = services.results_current(release=arena.release)
    names = public.model_names(public.load_snapshot(arena.publication))
    response = HttpResponse(results_csv(result, names), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{arena.code}-arena.csv"'
    return response


# ---------------------------------------------------------------------------------------------
# Publishers: prepare, open, close; the ethics decision letter
# ---------------------------------------------------------------------------------------------

MANAGE_ACTIONS = ("prepare", "open", "close", "refresh")


@login_required
@require_form
def arena_manage(request: HttpRequest, code: str) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("the arena's management page is for staff")
    release = get_object_or_404(Release, code=code)
    error, form, status = "", ReasonForm(), 200
    if request.method == "POST":
        if not services.can_manage(request.user):
            raise PermissionDenied("preparing, opening and closing an arena needs the "
                                   "publisher role")
        form = ReasonForm(request.POST)
        action = request.POST.get("action", "")
        try:
            _manage(release, request.user, action, form)
        except (services.ArenaError, ValidationError) as refusal:
            error, status = _message(refusal), 400
        else:
            if action == "prepare":
                messages.info(request, "Queued: a worker trains the classifier and builds the "
                                       "pairs (seconds to a minute). Reload this page to see "
                                       "them. Without a running worker, use `manage.py "
                                       f"arena_classifier {code}`.")
            return redirect(reverse("arena:manage", kwargs={"code": code}))
    return render(request, "arena/manage.html", {
        "release": release, "published": Publication.objects.filter(release=release).exists(),
        "state": selectors.arena_state(release), "counts": selectors.arena_counts(release),
        "no_pairs": selectors.no_pairs_reason(release),
        "no_cells": selectors.no_cells_reason(release),
        "form": form, "error": error, "can_manage": services.can_manage(request.user),
    }, status=status)


def _manage(release: Release, user, action: str, form: ReasonForm) -> None:
    if action not in MANAGE_ACTIONS:
        raise services.ArenaError(f"unknown action {action!r}")
    if action == "prepare":
        # Training the classifier takes from seconds to a minute: a worker does it.
        services.arena_prepare_enqueue(release=release, user=user)
    elif action == "refresh":
        services.results_refresh(release=release)
    elif not form.is_valid():
        raise services.ArenaError("say why (kept on the record and shown publicly)")
    elif action == "open":
        if not selectors.arena_state(release).prepared:
            if reason := selectors.no_pairs_reason(release):
                raise services.ArenaError(
                    f"the arena has no pairs to vote on: preparing ran and built none, "
                    f"because {reason}")
            raise services.ArenaError(
                f"prepare the arena first (the Prepare button, or `manage.py arena_classifier "
                f"{release.code}`), then open it")
        services.arena_open(release=release, user=user, reason=form.cleaned_data["reason"])
    else:
        services.arena_close(release=release, user=user, reason=form.cleaned_data["reason"])


def _message(refusal: Exception) -> str:
    if isinstance(refusal, ValidationError):
        return "; ".join(refusal.messages)
    return str(refusal)


@login_required
@require_safe
def ethics_document(request: HttpRequest, code: str, review_id: int) -> FileResponse:
    """The decision letter, for staff: it may name people; the page shows its hash."""
    if not request.user.is_staff:
        raise PermissionDenied("the decision letter is for staff")
    review = get_object_or_404(EthicsReview, pk=review_id, release__code=code)
    return FileResponse(review.document.open("rb"), as_attachment=True,
                        filename=f"{code}-ethics-{review.pk}.pdf", content_type="application/pdf")
