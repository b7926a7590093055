"""Writes of the arena (DESIGN section 9): ethics reviews, opening and closing, preparing the
pairs, voters, pairs shown, votes, and the stored results.

Every write here adds rows about a published release; none changes the release, its
generations or its snapshot. Only publishers (`audits_app.manage_arena`) record a review or
open and close an arena, and each such act is its own row, kept for good.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from contextlib import nullcontext
from datetime import date, datetime

import numpy as np
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audits_app.arena import pairing, recognisability
from audits_app.arena.models import (
    ArenaEvent,
    ArenaPair,
    ArenaResult,
    ArenaShowing,
    ArenaVote,
    ArenaVoter,
    EthicsReview,
    Preference,
    RecognisabilityRun,
    ShadowReason,
    SimulatedPairVote,
)
from audits_app.arena.readers import load_panel
from audits_app.arena.results import arena_results
from audits_app.arena.selectors import (
    PUBLIC_CODES_CACHE_KEY,
    ArenaState,
    arena_state,
    arena_texts,
    cell_pairs,
    current_ratings,
    has_answers,
    kept_catalogue,
    no_cells_held,
    no_cells_reason,
    no_pairs_reason,
    refused_texts,
    result_is_stale,
    result_latest,
    shown_pair_ids,
    vote_rows,
)
from audits_app.leaderboard.figures import release_resampling
from audits_app.models import Publication, ReadingStudy
from audits_app.pages.viewer import (
    arena_texts_revealed,
    load_snapshot,
    revealed_key,
)
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from audits_app.publication.same_words import findable_elsewhere
from audits_app.publication.snapshot_model import ReleaseSnapshot, TextEntry
from runs_app.models import Generation, LlmModel, Release
from scenarios_app.models import Scenario

log = logging.getLogger("baitbench.arena")

SIDES = ("left", "right")
# A voter who prefers neither text says which way (the form's values): both are ties.
NEITHER = {"tie": Preference.TIE, "both_bad": Preference.BOTH_BAD}

# Two texts of at least 80 words each cannot be read and compared in less; a faster answer is
# a click, not a judgement (a rate anomaly), and becomes a shadow vote.
MIN_SECONDS_TO_VOTE = 5.0
# A voter's third pair is an attention check, then every tenth: often enough to catch a
# careless voter within a session, rare enough not to try a careful one's patience.
ATTENTION_FIRST = 2
ATTENTION_EVERY = 10
# Stored results are recomputed on a page view at most this often, and only after new votes.
RESULTS_REFRESH_SECONDS = 120
# Counted votes reach the public results in batches of at least this many votes by at least
# this many voters from as many origins (networks: `ratelimits.origin_key`): a voter who
# compares the figures before and after their own vote must not find which writers their
# blind pair had (only their vote would have moved them). Voters alone would not do: a
# voter is a cookie, and one person can make five.
RESULTS_BATCH_VOTES = 20
RESULTS_BATCH_VOTERS = 5
SIMULATE_TASK = "audits_app.arena.tasks.simulate_pairs"
SIMULATE_PENDING_TASK = "audits_app.arena.tasks.simulate_pending"
PREPARE_TASK = "audits_app.arena.tasks.prepare_arena"
SIMULATE_DEBOUNCE_SECONDS = 10


class ArenaError(Exception):
    """Refused: the message says why, in words the person can act on."""


class AlreadyVoted(ArenaError):
    """This voter has voted on this pair before: one vote per voter per pair."""


# ---------------------------------------------------------------------------------------------
# Ethics reviews, opening and closing
# ---------------------------------------------------------------------------------------------


def can_manage(user) -> bool:
    return bool(user and user.is_authenticated and user.is_staff
                and user.has_perm("audits_app.manage_arena"))


def _require_manager(user) -> None:
    if not can_manage(user):
        raise PermissionDenied("only a publisher records ethics reviews and opens or closes "
                               "an arena")


def _publication(release: Release) -> Publication:
    publication = Publication.objects.filter(release=release).defer("snapshot").first()
    if publication is None:
        raise ArenaError(f"release {release.code} is not published: an arena belongs to a "
                         f"published release")
    return publication


def ethics_review_record(
    *, release: Release, user, reviewing_body: str, reference: str, decided_on: date,
    decision: str, document, note: str = "", study: ReadingStudy | None = None,
) -> EthicsReview:
    """Record an ethics body's decision on the release's arena or, with `study`, on one of
    its reading studies. One that does not approve closes what it reviewed, if open."""
    _require_manager(user)
    problems = ethics_review_problems(release=release, study=study)
    if problems:
        raise ArenaError("; ".join(problems))
    review = EthicsReview(
        release=release, reviewing_body=reviewing_body.strip(), reference=reference.strip(),
        decided_on=decided_on, decision=decision, document=document, note=note.strip(),
        recorded_by=user, document_sha256=_sha256(document), study=study,
    )
    review.full_clean()
    with transaction.atomic():
        review.save()
        if study is not None:
            if not review.approves:
                _study_close_on(review)
        elif not review.approves and arena_state(release).is_open:
            _event_create(release, ArenaEvent.Action.CLOSE, user=user, reason=(
                f"Ethics review {review.reference} by {review.reviewing_body} "
                f"({review.decided_on}): {review.get_decision_display().lower()}."))
    return review


def ethics_review_problems(*, release: Release | None,
                           study: ReadingStudy | None) -> list[str]:
    """What keeps a review of `release` (and `study`) from being recorded, one
    `field: message` each: the admin form shows each on its field, the service refuses."""
    if release is None:
        return []  # the form says the release is required
    problems = []
    if not Publication.objects.filter(release=release).exists():
        problems.append(f"release: release {release.code} is not published: an ethics review "
                        f"is of a published release's arena or reading study")
    if study is not None and study.release_id != release.pk:
        problems.append(f"study: reading study {study.pk} belongs to release "
                        f"{study.release.code}, not {release.code}: choose one of "
                        f"{release.code}'s studies, or none for its arena")
    return problems


def _study_close_on(review: EthicsReview) -> None:
    """A decision that does not approve a study closes it (a study has one status row)."""
    ReadingStudy.objects.filter(pk=review.study_id, status=ReadingStudy.Status.OPEN).update(
        status=ReadingStudy.Status.CLOSED, closed_at=timezone.now(), closed_reason=(
            f"Ethics review {review.reference} by {review.reviewing_body} "
            f"({review.decided_on}): {review.get_decision_display().lower()}."))


def _sha256(upload) -> str:
    digest = hashlib.sha256()
    upload.seek(0)
    for chunk in iter(lambda: upload.read(65536), b""):
        digest.update(chunk)
    upload.seek(0)
    return digest.hexdigest()


def arena_open(*, release: Release, user, reason: str) -> ArenaEvent:
    """Open the arena to the public; needs the latest ethics review to approve it. Prepares
    the pairs (and the recognisability classifier) first if that was not done yet."""
    _require_manager(user)
    if not reason.strip():
        raise ArenaError("say why the arena opens (kept on the record and shown publicly)")
    _publication(release)
    state = arena_state(release)
    if state.is_open:
        raise ArenaError(f"the arena of {release.code} is already open")
    if not state.approved:
        latest = state.latest_review
        raise ArenaError("no approved ethics review is recorded for this release" if latest is None
                         else f"the latest ethics review ({latest.reference}) is "
                              f"{latest.get_decision_display().lower()}, not an approval")
    if arena_texts_revealed(release.pk):
        raise ArenaError(f"the arena of {release.code} closed, and its texts have been public "
                         f"since: an arena of texts that can be looked up is not blind")
    if not state.prepared:
        arena_prepare(release=release, user=user)
        if not ArenaPair.objects.filter(release=release).exists():
            raise ArenaError(f"release {release.code} has no pair to show: "
                             f"{no_pairs_reason(release)}")
    simulation_schedule_ensure()
    return _event_create(release, ArenaEvent.Action.OPEN, user=user, reason=reason,
                         review=state.latest_review)


def arena_close(*, release: Release, user, reason: str) -> ArenaEvent:
    _require_manager(user)
    if not reason.strip():
        raise ArenaError("say why the arena closes (kept on the record and shown publicly)")
    if arena_texts_revealed(release.pk):
        raise ArenaError(f"the arena of {release.code} is closed already")
    # An arena that never opened may close too: that is how the texts held for it become
    # public when it is not going to run.
    return _event_create(release, ArenaEvent.Action.CLOSE, user=user, reason=reason)


def _event_create(release: Release, action: str, *, user, reason: str,
                  review: EthicsReview | None = None) -> ArenaEvent:
    event = ArenaEvent.objects.create(release=release, action=action, reason=reason.strip(),
                                      review=review, by=user)
    # Now and once more after the commit, so no request caches the state before it.
    stale = [PUBLIC_CODES_CACHE_KEY, revealed_key(release.pk)]
    cache.delete_many(stale)
    transaction.on_commit(lambda: cache.delete_many(stale))
    log.info("arena of %s %s by %s", release.code, event.get_action_display().lower(), user)
    return event


# ---------------------------------------------------------------------------------------------
# Preparing: the recognisability classifier and the pair catalogue
# ---------------------------------------------------------------------------------------------


def arena_prepare(*, release: Release, user=None) -> RecognisabilityRun:
    """Train the writer classifier (once: an existing result is kept, never recomputed
    silently) and build the catalogue of pairs, flagging those whose writers it recognises.
    Rerunning adds nothing that exists."""
    publication = _publication(release)
    snapshot = load_snapshot(publication)
    held = held_cells(snapshot, Holder.ARENA)
    if not held:
        raise ArenaError(no_cells_held(release))
    texts = arena_texts(snapshot)
    bodies = dict(Generation.objects.filter(release=release, pk__in=[
        t.id for t in snapshot.texts]).values_list("pk", "text"))
    run = RecognisabilityRun.objects.filter(release=release).first()
    if run is None:
        run = _recognisability_create(release, texts, bodies, user)
    # The classifier learns from every public text; pairs come from the held cells only, and
    # never from a held text whose words a text outside them has (`same_words`), nor from a
    # refusal (`refused_texts`).
    left_out = findable_elsewhere(snapshot, Holder.ARENA, bodies) | refused_texts(release)
    _pairs_create(release, [text for text in texts
                            if text_cell(text) in held and text.id not in left_out],
                  bodies, run)
    return run


def arena_prepare_enqueue(*, release: Release, user) -> None:
    """Have a worker prepare the arena (publishers only: it trains the classifier). Refused
    at once, with the reason, where preparing could only fail: queued, it failed where
    nobody read why."""
    _require_manager(user)
    _publication(release)
    if reason := no_cells_reason(release):
        raise ArenaError(reason)
    from django_q.tasks import async_task

    async_task(PREPARE_TASK, release.code, user.pk, task_name=f"arena {release.code} prepare",
               group=f"arena:{release.code}")


def _recognisability_create(release: Release, texts: list[TextEntry], bodies: dict[int, str],
                            user) -> RecognisabilityRun:
    scenario_ids, counts = release_resampling(release)
    slugs = dict(Scenario.objects.filter(pk__in=scenario_ids).values_list("pk", "slug"))
    try:
        found = recognisability.recognise(
            [bodies[t.id] for t in texts], [t.model for t in texts],
            [t.scenario for t in texts], scenario_order=[slugs[i] for i in scenario_ids],
            counts=counts, level=release.parsed_config().bootstrap.level,
        )
    except recognisability.RecognisabilityError as error:
        raise ArenaError(f"release {release.code} cannot have an arena: {error}") from error
    summary = {
        "accuracy": found.accuracy, "low": found.low, "high": found.high,
        "chance": found.chance, "majority": found.majority, "texts": found.texts,
        "level": found.level, "writers": found.writers,
        "per_writer": [vars(row) for row in found.per_writer],
    }
    probabilities = {str(t.id): float(p) for t, p in zip(texts, found.true_probability,
                                                             strict=True)}
    try:
        with transaction.atomic():
            return RecognisabilityRun.objects.create(
                release=release, computed_by=user, method=found.method(), summary=summary,
                probabilities=probabilities)
    except IntegrityError:  # computed meanwhile by someone else: theirs stands
        return RecognisabilityRun.objects.get(release=release)


def _same_text(first: str, second: str) -> bool:
    return " ".join(first.split()) == " ".join(second.split())


def _pairs_create(release: Release, texts: list[TextEntry], bodies: dict[int, str],
                  run: RecognisabilityRun) -> int:
    models = dict(LlmModel.objects.filter(openrouter_id__in={t.model for t in texts})
                  .values_list("openrouter_id", "pk"))
    scenarios = dict(Scenario.objects.filter(slug__in={t.scenario for t in texts})
                     .values_list("slug", "pk"))
    rows = []
    for first, second in cell_pairs(texts):
        if _same_text(bodies[first.id], bodies[second.id]):
            continue  # two identical texts say nothing about either writer

        chances = [run.probabilities.get(str(text.id)) for text in (first, second)]
        known = [chance for chance in chances if chance is not None]
        probability = max(known) if known else None
        rows.append(ArenaPair(
            release=release, generation_a_id=first.id, generation_b_id=second.id,
            model_a_id=models[first.model], model_b_id=models[second.model],
            scenario_id=scenarios[first.scenario], task=first.task,
            condition=first.condition, variant=first.variant,
            recognised_probability=probability,
            flagged=probability is not None and probability > recognisability.RECOGNISED_ABOVE,
        ))
    before = ArenaPair.objects.filter(release=release).count()
    ArenaPair.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    return ArenaPair.objects.filter(release=release).count() - before


# ---------------------------------------------------------------------------------------------
# Voters, pairs shown, votes
# ---------------------------------------------------------------------------------------------


def voter_create() -> ArenaVoter:
    """A new anonymous voter who has just given consent: a random id, nothing else."""
    return ArenaVoter.objects.create(key=secrets.token_urlsafe(32))


def showing_create(*, release: Release, voter: ArenaVoter,
                   rng: np.random.Generator | None = None,
                   background: bool = True, seen: list[int] | None = None) -> ArenaShowing | None:
    """Choose the voter's next pair (balanced, informative; never one they were shown, nor
    one holding a text another release has made public since the catalogue was built) and
    record that it is shown. None when the voter has seen every pair. `background=False`
    leaves the simulated public's answers for the caller to drain (the demo does). `seen`:
    the pairs of the release the voter was shown, when the caller has just read them."""
    rng = rng or np.random.default_rng()
    kept = kept_catalogue(release)
    if seen is None:
        seen = shown_pair_ids(release, voter.pk)
    ratings = current_ratings(release)
    strengths = np.array([ratings.get(int(model), np.nan) for model in kept.models])
    pair_id = pairing.choose_pair(kept.catalogue, exclude=[*seen, *kept.copied], rng=rng,
                                  ratings=strengths if ratings else None)
    if pair_id is None:
        return None
    attention = ""
    if len(seen) % ATTENTION_EVERY == ATTENTION_FIRST:
        attention = ("left", "right")[int(rng.integers(2))]
    showing = ArenaShowing(pair_id=pair_id, voter=voter, a_on_left=bool(rng.integers(2)),
                           attention=attention)
    # Planned once a pair is first shown, and never undone: a pair the catalogue read as
    # planned needs no second look, and its showing is one statement.
    if kept.simulation_queued(pair_id) and connection.vendor == "postgresql":
        _showing_insert(showing, release.pk)
    else:
        with transaction.atomic():
            showing.save()
            _shown_count(pair_id)
            if not kept.simulation_queued(pair_id):
                _simulation_plan(release, pair_id, background)
    kept.count_shown(pair_id)
    return showing


def _shown_count(pair_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {ArenaPair._meta.db_table} SET shown = shown + 1 WHERE id = %s",
                       [pair_id])


def _showing_insert(showing: ArenaShowing, release_id: int) -> None:
    """Save a new showing and count it on its pair in one PostgreSQL statement (one round
    trip instead of five: the statement is its own transaction, so both happen or neither),
    which also gives the showing's ordinal among the voter's (`selectors.showing_ordinal`:
    the count of their showings in this release before it, as the statement began)."""
    showings, pairs = ArenaShowing._meta.db_table, ArenaPair._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH counted AS (UPDATE {pairs} SET shown = shown + 1 WHERE id = %s), "
            f"added AS (INSERT INTO {showings} "
            f"(pair_id, voter_id, a_on_left, attention, shown_at) "
            f"VALUES (%s, %s, %s, %s, %s) RETURNING id) "
            f"SELECT added.id, (SELECT COUNT(*) FROM {showings} s "
            f"JOIN {pairs} p ON p.id = s.pair_id "
            f"WHERE s.voter_id = %s AND p.release_id = %s AND s.id < added.id) FROM added",
            [showing.pair_id, showing.pair_id, showing.voter_id, showing.a_on_left,
             showing.attention, showing.shown_at, showing.voter_id, release_id])
        showing.pk, showing.ordinal = cursor.fetchone()
    showing._state.adding, showing._state.db = False, connection.alias


def _simulation_plan(release: Release, pair_id: int, background: bool) -> None:
    """The first time a pair is shown, plan its twelve simulated answers and have them drained
    in the background. The conditional update makes this happen once, however many voters
    are shown the pair at the same moment."""
    first = ArenaPair.objects.filter(pk=pair_id, simulation_queued_at=None).update(
        simulation_queued_at=timezone.now())
    if first != 1:
        return
    positions = _panel_positions(release)
    # Alternate the order positions read the two texts in, so order effects cancel out.
    SimulatedPairVote.objects.bulk_create(
        [SimulatedPairVote(pair_id=pair_id, position=position, a_first=index % 2 == 0)
         for index, position in enumerate(positions)], ignore_conflicts=True)
    if background:
        transaction.on_commit(lambda: simulation_enqueue(release.code))


_positions: dict[tuple[int, str], list[str]] = {}


def _panel_positions(release: Release) -> list[str]:
    """The reading positions of the release's panel, kept per process by the release and its
    configuration's hash (a published release's configuration never changes)."""
    key = (release.pk, release.config_hash)
    if key not in _positions:
        config = release.parsed_config()
        _positions[key] = [position.id for position
                           in load_panel(config.panel, config.language).positions]
    return _positions[key]


def simulation_enqueue(code: str) -> bool:
    """Have a worker drain the release's pending simulated votes. One task drains every
    pending row, so at most one is queued per release every SIMULATE_DEBOUNCE_SECONDS; the
    task clears the mark when it starts, and a schedule drains whatever a lost task left."""
    if not cache.add(simulate_mark(code), 1, timeout=SIMULATE_DEBOUNCE_SECONDS):
        return False
    from django_q.tasks import async_task

    async_task(SIMULATE_TASK, code, task_name=f"arena {code} simulated votes",
               group=f"arena:{code}")
    return True


def simulate_mark(code: str) -> str:
    return f"arena:simulate-queued:{code}"


def simulation_schedule_ensure() -> None:
    """Every few minutes, drain what a lost task or a killed worker left pending."""
    from django_q.models import Schedule

    Schedule.objects.get_or_create(
        func=SIMULATE_PENDING_TASK,
        defaults={"name": "arena: drain simulated votes", "schedule_type": Schedule.MINUTES,
                  "minutes": 2, "repeats": -1},
    )


def vote_record(
    *, showing: ArenaShowing, voter: ArenaVoter, favourable: str, honest: str = "",
    recognised: bool = False, staff: bool = False, rate_limited: bool = False,
    now: datetime | None = None, simulated: bool = False, note: str = "",
    state: ArenaState | None = None, origin: str = "",
) -> ArenaVote:
    """Record a voter's answer on a pair they were shown; `favourable` names the position
    ("left"/"right") or neither ("tie", "both_bad"), `honest` the position or "". The vote
    is a shadow vote when any reason in `ShadowReason` holds; a failed attention check makes
    all the voter's votes shadow votes.
    `state` saves reading the arena's state again when the caller has just read it; `origin`
    is where the vote came from (`ratelimits.origin_key`).
    """
    if showing.voter_id != voter.pk:
        raise ArenaError("this pair was shown to someone else")
    if favourable not in (*SIDES, *NEITHER) or honest not in ("", *SIDES):
        raise ArenaError("choose the left or the right text, a tie or both bad")
    now = now or timezone.now()
    seconds = (now - showing.shown_at).total_seconds()
    state = state or arena_state(showing.pair.release)
    reasons = _shadow_reasons(state, voter, staff=staff, rate_limited=rate_limited,
                              recognised=recognised, seconds=seconds)
    attention = bool(showing.attention)
    vote = ArenaVote(
        pair_id=showing.pair_id, voter=voter, showing=showing,
        favourable=NEITHER.get(favourable) or showing.side_of(favourable),
        honest=showing.side_of(honest) if honest else "",
        recognised=recognised, a_on_left=showing.a_on_left, attention=attention,
        attention_passed=(favourable == showing.attention) if attention else None,
        shadow=bool(reasons), shadow_reasons=reasons, seconds_to_vote=round(seconds, 3),
        simulated=simulated, note=note, origin=origin, created_at=now,
    )
    try:
        if vote.attention_passed is False:
            with transaction.atomic():
                vote.save()
                _flag_voter(voter, ShadowReason.ATTENTION, now)
        else:
            # One INSERT, its own transaction (a savepoint inside a caller's): the unique
            # (pair, voter) constraint makes it once, and a second submission is refused.
            with transaction.atomic() if connection.in_atomic_block else nullcontext():
                vote.save()
    except IntegrityError as error:
        raise AlreadyVoted("you have already voted on this pair") from error
    return vote


def _shadow_reasons(state: ArenaState, voter: ArenaVoter, *, staff: bool, rate_limited: bool,
                    recognised: bool, seconds: float) -> list[str]:
    checks = [
        (not state.is_open, ShadowReason.NOT_OPEN),
        (staff, ShadowReason.STAFF),
        (rate_limited, ShadowReason.RATE),
        (seconds < MIN_SECONDS_TO_VOTE, ShadowReason.TOO_FAST),
        (recognised, ShadowReason.RECOGNISED),
        (ShadowReason.ATTENTION in voter.flags, ShadowReason.ATTENTION),
    ]
    return [str(reason) for holds, reason in checks if holds]


def _flag_voter(voter: ArenaVoter, reason: str, now: datetime) -> None:
    """Mark the voter, and turn every vote they cast into a shadow vote."""
    if reason not in voter.flags:
        voter.flags = [*voter.flags, reason]
        voter.flagged_at = now
        voter.save(update_fields=["flags", "flagged_at"])
    # One UPDATE per distinct list of reasons (a voter's votes share a few), not a CASE per
    # vote as bulk_update writes it.
    alike: dict[tuple[str, ...], list[int]] = {}
    for pk, reasons in ArenaVote.objects.filter(voter=voter).values_list("pk", "shadow_reasons"):
        alike.setdefault(tuple(reasons), []).append(pk)
    for reasons, pks in alike.items():
        ArenaVote.objects.filter(pk__in=pks).update(
            shadow=True, shadow_reasons=list(reasons) if reason in reasons else [*reasons, reason])


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


def results_refresh(*, release: Release) -> ArenaResult:
    """Compute the arena's figures and store them with their date: from every shadow vote so
    far, from the counted votes through the last whole batch (`counted_through`), and from the
    simulated public's answers on the pairs first shown before that batch's last vote."""
    publication = _publication(release)
    config = release.parsed_config()
    rows = vote_rows(release)
    latest = result_latest(release)
    through = counted_through(rows.votes, latest.counted_votes_through if latest else 0)
    votes = [v for v in rows.votes if v["pk"] <= through or not _counted(v)]
    # The simulated public answers on a pair the first time a voter is shown it: those answers
    # join with the batch whose last vote came after that showing, not before.
    cut = next((v["created_at"] for v in rows.votes if v["pk"] == through), None)
    simulated = [s for s in rows.simulated if cut is not None
                 and s["pair__simulation_queued_at"] is not None
                 and s["pair__simulation_queued_at"] <= cut]
    scenario_ids, counts = release_resampling(release)
    data = arena_results(
        votes, simulated, writers=list(config.writers), writer_of=rows.writers,
        scenario_ids=scenario_ids, counts=counts, level=config.bootstrap.level,
        rule=config.ranking_rule, published=_published_points(load_snapshot(publication)),
    )
    data["votes"]["batch"] = {"votes": RESULTS_BATCH_VOTES, "voters": RESULTS_BATCH_VOTERS}
    return ArenaResult.objects.create(
        release=release, votes_counted=data["votes"]["counted"],
        votes_shadow=data["votes"]["shadow"], last_vote_id=rows.last_vote_id,
        counted_through=through, simulated_votes=len(simulated), data=data,
    )


def _counted(vote: dict) -> bool:
    return not vote["shadow"] and not vote["attention"]


def counted_through(votes: list[dict], previous: int) -> int:
    """The last counted vote the results may hold: the newest one when the counted votes
    after `previous` make a batch (RESULTS_BATCH_VOTES by RESULTS_BATCH_VOTERS), else
    `previous` (those votes wait for more). A vote stored before votes kept their origin
    counts as an origin of its own voter."""
    new = [v for v in votes if v["pk"] > previous and _counted(v)]
    if (len(new) >= RESULTS_BATCH_VOTES
            and len({v["voter_id"] for v in new}) >= RESULTS_BATCH_VOTERS
            and len({v["origin"] or f"voter {v['voter_id']}" for v in new})
            >= RESULTS_BATCH_VOTERS):
        return max(v["pk"] for v in new)
    return previous


def _published_points(snapshot: ReleaseSnapshot) -> dict[str, dict[str, float | None]]:
    """The release's own point per model for persuasion and honesty, from its snapshot."""
    boards = snapshot.leaderboards
    return {metric: {row.model: row.point for row in
                     (boards[metric].rows if metric in boards else [])}
            for metric in ("persuasion", "honesty")}


def results_current(*, release: Release) -> ArenaResult | None:
    """The latest stored result, recomputed first when a batch of counted votes arrived since
    (`result_is_stale`) and it is older than RESULTS_REFRESH_SECONDS. A cache lock lets one
    request recompute while the others show the stored one."""
    latest = result_latest(release)
    fresh_enough = latest is not None and (
        timezone.now() - latest.computed_at).total_seconds() < RESULTS_REFRESH_SECONDS
    if latest is None:
        if not has_answers(release):
            return None
    elif fresh_enough or not result_is_stale(release, latest, votes=RESULTS_BATCH_VOTES,
                                             voters=RESULTS_BATCH_VOTERS):
        return latest
    lock = f"arena:results-lock:{release.pk}"
    if not cache.add(lock, 1, timeout=RESULTS_REFRESH_SECONDS):
        return latest
    try:
        return results_refresh(release=release)
    finally:
        cache.delete(lock)
