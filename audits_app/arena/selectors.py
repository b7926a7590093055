"""Reads of the arena: which texts may be paired, the arena's state, a pair as a voter sees
it, the pair catalogue for selection, and the votes as arrays for the statistics.

Which texts may appear is read from the release's frozen snapshot (DESIGN section 8): texts
of public scenarios that complied and were scored by the simulated public. Their bodies come
from `Generation.text` and the organisation from the pinned scenario version, both immutable
once the release is published.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
import time
from collections import defaultdict
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    Q,
)
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.html import linebreaks
from django.utils.safestring import mark_safe

from audits_app.arena import statistics
from audits_app.arena.models import (
    ArenaEvent,
    ArenaPair,
    ArenaResult,
    ArenaShowing,
    ArenaVote,
    ArenaVoter,
    EthicsReview,
    RecognisabilityRun,
    Side,
    SimulatedPairVote,
)
from audits_app.arena.pairing import Catalogue
from audits_app.arena.results import preference_comparisons
from audits_app.models import Publication
from audits_app.pages.viewer import load_snapshot, public_scenario_slugs, publication_get
from audits_app.publication.held_cells import Cell, Holder, held_cells, text_cell
from audits_app.publication.same_words import WordsIndex, findable_elsewhere, public_elsewhere
from audits_app.publication.snapshot_model import ReleaseSnapshot, TextEntry
from baitbench_site.roles import is_staff
from runs_app.models import (
    Generation,
    LlmModel,
    RefusalCheck,
    Release,
    ReplyOutcome,
    WorkStatus,
)
from scenarios_app.prompt_texts import TASKS_V1

RATINGS_CACHE_SECONDS = 60
PUBLIC_CODES_CACHE_KEY = "arena:public-codes"
PUBLIC_CODES_CACHE_SECONDS = 60


# ---------------------------------------------------------------------------------------------
# Texts that may be shown
# ---------------------------------------------------------------------------------------------


def arena_texts(snapshot: ReleaseSnapshot) -> list[TextEntry]:
    """Snapshot rows of the texts a pair may hold: a public scenario, complied, scored.

    A refused text is counted in the refusal rate and never shown (DESIGN section 2); a
    held-out scenario's texts never appear on public pages (section 3). A partial compliance
    is left out too: a half-refusal beside a full text would be judged for refusing.
    """
    public = public_scenario_slugs(snapshot)
    return [
        text for text in snapshot.texts
        if text.scenario in public and text.visibility == "public"
        and text.refusal == "complied" and text.persuasion is not None
    ]


def refused_texts(release: Release) -> set[int]:
    """Ids of the release's texts that a refusal stands against, whatever the snapshot's score
    says: the refusal check's stored verdict is refused or partial, or the provider reported a
    refusal. A refusal is the same few sentences on every scenario, so it names its writer
    to anyone who has seen one; `arena_texts` leaves out what the scores call a refusal, and
    the catalogue leaves these out too, should a score and its check ever disagree."""
    return set(Generation.objects.filter(release=release).filter(
        Q(refusal_check__verdict__in=[RefusalCheck.Verdict.REFUSED, RefusalCheck.Verdict.PARTIAL])
        | ~Q(writer_refusal="")).values_list("pk", flat=True))


def cell_pairs(texts: list[TextEntry]) -> list[tuple[TextEntry, TextEntry]]:
    """Every two texts of one cell by different writers, the lower id first."""
    cells: dict[Cell, list[TextEntry]] = defaultdict(list)
    for text in texts:
        cells[text_cell(text)].append(text)
    pairs = []
    for members in cells.values():
        members.sort(key=lambda text: text.id)
        pairs += [(first, second) for i, first in enumerate(members) for second in members[i + 1:]
                  if first.model != second.model]
    return pairs


def _texts(count: int) -> str:
    return f"{count} text" + ("" if count == 1 else "s")


def no_cells_held(release: Release) -> str:
    """Why the release can have no arena, when it holds no cells for one."""
    return (f"release {release.code} holds no cells for an arena (`arena.held_share` is 0 in "
            f"its file): every text of it is public, so no pair of them would be blind")


def no_cells_reason(release: Release) -> str:
    """Why the published release can have no arena at all ("" when it holds cells for one,
    or is not published)."""
    publication = Publication.objects.filter(release=release).first()
    if publication is None or held_cells(load_snapshot(publication), Holder.ARENA):
        return ""
    return no_cells_held(release)


def no_pairs_reason(release: Release) -> str:
    """Why preparing built no pair, in words ("" while pairs exist, or before preparing ran,
    or for a release not published): the arena's held cells hold no text a pair may show, or
    every such text is left out (its words are public elsewhere, or it is a refusal), or the
    texts left give no two of one cell by different writers with different words."""
    if ArenaPair.objects.filter(release=release).exists() \
            or not RecognisabilityRun.objects.filter(release=release).exists():
        return ""
    publication = Publication.objects.filter(release=release).first()
    if publication is None:
        return ""
    snapshot = load_snapshot(publication)
    held = held_cells(snapshot, Holder.ARENA)
    texts = [text for text in arena_texts(snapshot) if text_cell(text) in held]
    if not texts:
        return (f"the arena's {len(held)} held cell{'s' if len(held) != 1 else ''} hold no "
                f"text a pair may show (a public scenario's text that complied and was scored)")
    ids = {text.id for text in texts}
    findable = findable_elsewhere(snapshot, Holder.ARENA) & ids
    refused = (refused_texts(release) & ids) - findable
    left = [text for text in texts if text.id not in findable | refused]
    parts = []
    if findable:
        parts.append(f"{'every one' if len(findable) == len(texts) else len(findable)} of "
                     f"them has words a public text outside the arena's cells also has (here "
                     f"or in another published release), so a voter could find its writer by "
                     f"searching for them")
    if refused:
        parts.append(f"{len(refused)} {'is a refusal' if len(refused) == 1 else 'are refusals'}")
    if not parts:
        return (f"the {_texts(len(texts))} in the arena's held cells give no two texts of one "
                f"cell by different writers with different words")
    reason = f"of the {_texts(len(texts))} in the arena's held cells, " + "; ".join(parts)
    if not left:
        return reason + ": none is left to pair"
    return (reason + f"; the {_texts(len(left))} left give no two texts of one cell by "
                     f"different writers with different words")


# ---------------------------------------------------------------------------------------------
# The arena's state
# ---------------------------------------------------------------------------------------------


class ArenaState:
    """Ethics reviews and opening/closing events of a release's arena (newest first), and
    whether its pairs are prepared.

    `arena_state` reads everything at once. `arena_access`, on every voter's request, reads
    only what voting needs (the latest event's action, whether it ever opened, whether pairs
    exist) inside the same query as the publication; the reviews and the events are then read
    when a page asks for them. Nothing is kept between requests, so nothing can be stale.
    """

    def __init__(self, release_id: int, *, prepared: bool,
                 reviews: list[EthicsReview] | None = None,
                 events: list[ArenaEvent] | None = None,
                 latest_action: str | None = None, opened: bool | None = None):
        self.release_id, self.prepared = release_id, prepared
        self._reviews, self._events = reviews, events
        self._latest_action, self._opened = latest_action, opened

    @functools.cached_property
    def reviews(self) -> list[EthicsReview]:  # newest first
        if self._reviews is not None:
            return self._reviews
        return list(EthicsReview.objects.filter(release_id=self.release_id, study__isnull=True)
                    .select_related("recorded_by").order_by("-recorded_at", "-pk"))

    @functools.cached_property
    def events(self) -> list[ArenaEvent]:  # newest first
        if self._events is not None:
            return self._events
        return list(ArenaEvent.objects.filter(release_id=self.release_id)
                    .select_related("by", "review").prefetch_related("by__groups")
                    .order_by("-at", "-pk"))

    @property
    def latest_review(self) -> EthicsReview | None:
        return self.reviews[0] if self.reviews else None

    @property
    def approved(self) -> bool:
        """The latest recorded decision approves the arena."""
        return bool(self.latest_review and self.latest_review.approves)

    @property
    def is_open(self) -> bool:
        if self._events is None and self._opened is not None:
            return self._latest_action == ArenaEvent.Action.OPEN
        return bool(self.events) and self.events[0].action == ArenaEvent.Action.OPEN

    @property
    def is_public(self) -> bool:
        """Opened at least once (which needed an approval): its pages and results are public."""
        if self._events is None and self._opened is not None:
            return self._opened
        return any(event.action == ArenaEvent.Action.OPEN for event in self.events)


def arena_state(release: Release) -> ArenaState:
    reviews = list(EthicsReview.objects.filter(release=release, study__isnull=True)
                   .select_related("recorded_by")
                   .order_by("-recorded_at", "-pk"))
    events = list(ArenaEvent.objects.filter(release=release).select_related("by", "review")
                  .prefetch_related("by__groups").order_by("-at", "-pk"))
    prepared = ArenaPair.objects.filter(release=release).exists()
    return ArenaState(release.pk, prepared=prepared, reviews=reviews, events=events)


@dataclasses.dataclass(frozen=True)
class ArenaAccess:
    """A release's arena as one visitor may see it."""

    publication: Publication
    state: ArenaState
    staff: bool

    @property
    def release(self) -> Release:
        return self.publication.release

    @property
    def code(self) -> str:
        return self.publication.release.code

    @property
    def voting(self) -> bool:
        """Votes are taken: from anyone while open, from staff (as shadow votes) to test it."""
        return self.state.prepared and (self.state.is_open or self.staff)

    @property
    def pair_url(self) -> str:
        return arena_url("arena:pair", self.code)

    @property
    def vote_url(self) -> str:
        return arena_url("arena:vote", self.code)


def arena_url(name: str, code: str) -> str:
    """`reverse(name, kwargs={"code": code})`, worked out once per process for each page of an
    arena (script prefix and URLconf): the pair page, shown with every vote, links two."""
    return _arena_url(name, code, get_script_prefix(), get_urlconf())


@functools.lru_cache(maxsize=256)
def _arena_url(name: str, code: str, prefix: str, urlconf) -> str:
    return reverse(name, kwargs={"code": code}, urlconf=urlconf)


# A publication is never changed or deleted (the database refuses both), nor is its release
# once published: found once by its code, it is kept per process. Only finding one is kept;
# a code with no publication yet is asked about again.
_publications: dict[str, Publication] = {}
_publications_lock = threading.Lock()


def _publication(code: str) -> Publication | None:
    with _publications_lock:
        found = _publications.get(code)
    if found is None:
        found = publication_get(code)
        if found is not None:
            with _publications_lock:
                _publications[code] = found
    return found


def _voting_state_sql(release_id: int) -> tuple[str, list]:
    """The columns of `_voting_state`'s one row: the latest event's action, whether the arena
    ever opened, whether it has pairs."""
    event, pair = ArenaEvent._meta.db_table, ArenaPair._meta.db_table
    return (f"(SELECT action FROM {event} WHERE release_id = %s "
            f"ORDER BY at DESC, id DESC LIMIT 1) AS latest, "
            f"EXISTS (SELECT 1 FROM {event} WHERE release_id = %s AND action = %s) AS opened, "
            f"EXISTS (SELECT 1 FROM {pair} WHERE release_id = %s) AS prepared",
            [release_id, release_id, ArenaEvent.Action.OPEN.value, release_id])


def _state_from(release_id: int, latest, opened, prepared) -> ArenaState:
    return ArenaState(release_id, prepared=bool(prepared), latest_action=latest,
                      opened=bool(opened))


def _voting_state(release_id: int) -> ArenaState:
    """What voting needs of the arena's state, read in one small query on every request (never
    kept: opening and closing must count at once, in every process)."""
    columns, params = _voting_state_sql(release_id)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns}", params)
        return _state_from(release_id, *cursor.fetchone())


def arena_access(code: str, user) -> ArenaAccess | None:
    """The arena of a published release, or None when this visitor may not see it: anyone
    once it was opened (which needed an approval), staff always, to test it. One query when
    the publication is known to this process: the arena's state."""
    publication = _publication(code)
    if publication is None:
        return None
    state = _voting_state(publication.release_id)
    staff = is_staff(user)
    return ArenaAccess(publication, state, staff) if staff or state.is_public else None


def arena_voting_access(code: str, user,
                        key: str | None) -> tuple[ArenaAccess | None, VoterShowings | None]:
    """`arena_access`, and the voter with this key with their showings in the arena
    (None without a key or a voter), in one query: a vote needs the voter, the showing it
    answers (by its ordinal, `showing_ordinal`) and the pairs already shown
    (`shown_pair_ids`) for the next one."""
    publication = _publication(code)
    if publication is None:
        return None, None
    release_id = publication.release_id
    if key is None:
        state, known = _voting_state(release_id), None
    else:
        columns, params = _voting_state_sql(release_id)
        voter_columns, voter_from, voter_params = _voter_showings_sql(release_id, key)
        with connection.cursor() as cursor:
            # The state's one row, beside the voter's (if any) and their showings (if any).
            cursor.execute(f"SELECT state.*, {voter_columns} FROM (SELECT {columns}) state "
                           f"{voter_from} ORDER BY s.id", [*params, *voter_params])
            found = cursor.fetchall()
        state = _state_from(release_id, *found[0][:3])
        known = _voter_showings(key, [row[3:] for row in found if row[3] is not None])
    staff = is_staff(user)
    if not (staff or state.is_public):
        return None, None
    return ArenaAccess(publication, state, staff), known


def arena_codes() -> dict[str, bool]:
    """Releases whose arena was ever opened (public), newest opening first, and whether each
    is open now. Events are few: one query, folded here."""
    latest: dict[str, str] = {}
    for code, action in (ArenaEvent.objects.order_by("-at", "-pk")
                         .values_list("release__code", "action")):
        latest.setdefault(code, action)
    opened = (ArenaEvent.objects.filter(action=ArenaEvent.Action.OPEN).order_by("-at")
              .values_list("release__code", flat=True))
    return {code: latest[code] == ArenaEvent.Action.OPEN for code in dict.fromkeys(opened)}


def public_arena_codes() -> list[str]:
    """`arena_codes`' keys, cached for a minute: every page's navigation asks. Opening or
    closing an arena clears the cache."""
    codes = cache.get(PUBLIC_CODES_CACHE_KEY)
    if codes is None:
        codes = list(arena_codes())
        cache.set(PUBLIC_CODES_CACHE_KEY, codes, PUBLIC_CODES_CACHE_SECONDS)
    return codes


# ---------------------------------------------------------------------------------------------
# A pair as a voter sees it: texts and the organisation, nothing about the writers
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PairView:
    organisation: str
    description: str
    task_name: str
    left: str  # HTML: the text's paragraphs, escaped (`PairText.html`)
    right: str


def pair_view(showing: ArenaShowing, release: Release) -> PairView:
    """What the pair page shows: the pair's texts and the organisation, read once per process
    (published texts never change) and then kept with the release's catalogue."""
    kept = kept_catalogue(release)
    row = kept.row.get(showing.pair_id)
    if row is None:  # a pair added since the catalogue was read: read it now
        pair = ArenaPair.objects.only("generation_a_id", "generation_b_id", "task").get(
            pk=showing.pair_id, release=release)
        generations, task = (pair.generation_a_id, pair.generation_b_id), pair.task
    else:
        generations, task = tuple(int(g) for g in kept.generations[row]), kept.tasks[row]
    texts = kept.texts(generations)
    left_side = showing.side_of("left")
    left, right = (0, 1) if left_side == Side.A else (1, 0)
    organisation = texts[generations[0]].organisation
    task_names = (TASKS_V1.get(release.language) or {}).get(task)
    return PairView(
        organisation=organisation.get("name", ""),
        description=organisation.get("description", ""),
        task_name=task_names[0] if task_names else task,
        left=texts[generations[left]].html,
        right=texts[generations[right]].html,
    )


# ---------------------------------------------------------------------------------------------
# Selection: the catalogue and the current ratings
# ---------------------------------------------------------------------------------------------

# The fixed part of a release's catalogue (which pairs, their writers, scenario, texts) is kept
# per process: pairs are added when the arena is prepared, all at once, and none ever changes
# or goes (the database refuses a DELETE, `baitbench_site.immutability`), nor does a published
# text. How often each pair was shown changes with every showing: those counts are read again
# at most every SHOWN_REFRESH_SECONDS, with the pair ids (pairs added since are then taken in),
# and this process adds its own showings in between. Selection balances loads in steps of
# `pairing.LOAD_STEP`; a second's showings by other processes shift it by a few at most.
SHOWN_REFRESH_SECONDS = 1.0
_kept: dict[int, KeptCatalogue] = {}
_kept_lock = threading.Lock()


@dataclasses.dataclass(frozen=True)
class PairText:
    body: str
    organisation: dict[str, Any]

    @functools.cached_property
    def html(self) -> str:
        """The body as the page shows it (`linebreaks`, escaped), made once per process: a
        published text never changes, and every showing of it would make it again."""
        return mark_safe(linebreaks(self.body, autoescape=True))


class KeptCatalogue:
    """A release's pair catalogue as one process keeps it (see SHOWN_REFRESH_SECONDS)."""

    def __init__(self, release_id: int, rows: np.ndarray, tasks: list[str], queued: np.ndarray):
        # rows: pk, model_a, model_b, scenario, shown, generation_a, generation_b
        self.release_id = release_id
        self.models, model_index = np.unique(rows[:, 1:3], return_inverse=True)
        model_index = model_index.reshape(-1, 2)
        scenarios, scenario_index = np.unique(rows[:, 3], return_inverse=True)
        self.catalogue = Catalogue(
            ids=rows[:, 0].copy(), model_a=model_index[:, 0], model_b=model_index[:, 1],
            scenario=scenario_index, shown=rows[:, 4].copy(), n_models=len(self.models),
            n_scenarios=len(scenarios))
        self.generations = rows[:, 5:7].copy()
        self.tasks = tasks
        self.queued = queued.copy()
        self.row = {int(pk): index for index, pk in enumerate(self.catalogue.ids)}
        self.read_at = time.monotonic()
        self._texts: dict[int, PairText] = {}
        self.copied: list[int] = []  # pairs never shown: see `copied_elsewhere`
        self._copied_for: WordsIndex | None = None
        self._scenarios: frozenset[str] | None = None  # the pairs' texts' scenarios

    def copied_elsewhere(self, code: str) -> None:
        """Note the pairs holding a text whose words, or nearly, another published release
        shows now (`same_words.public_elsewhere`): a release published, or texts revealed,
        after the catalogue was built. Looked up again only when that changes."""
        texts = Generation.objects.filter(pk__in=np.unique(self.generations).tolist())
        if self._scenarios is None:
            self._scenarios = frozenset(texts.values_list("scenario_version__scenario__slug",
                                                          flat=True).distinct())
        index = public_elsewhere(code, self._scenarios)
        if index is self._copied_for:
            return
        copied = {pk for pk, slug, body in texts.values_list(
            "pk", "scenario_version__scenario__slug", "text") if index.finds(slug, body)}
        self.copied = [int(pk) for pk, pair in zip(self.catalogue.ids, self.generations,
                                                   strict=True)
                       if copied.intersection(pair.tolist())]
        self._copied_for = index

    def refresh(self, ids: np.ndarray, shown: np.ndarray, queued: np.ndarray) -> bool:
        """Take the counts just read; False when the pairs are not the ones kept."""
        if not np.array_equal(ids, self.catalogue.ids):
            return False
        self.catalogue.shown[:] = shown
        self.queued[:] = queued
        self.read_at = time.monotonic()
        return True

    def count_shown(self, pair_id: int) -> None:
        """This process showed the pair (its simulated answers are planned by now)."""
        row = self.row.get(pair_id)
        if row is not None:
            with _kept_lock:
                self.catalogue.shown[row] += 1
                self.queued[row] = True

    def simulation_queued(self, pair_id: int) -> bool:
        row = self.row.get(pair_id)
        return row is not None and bool(self.queued[row])

    def texts(self, generations: tuple[int, ...]) -> dict[int, PairText]:
        missing = [pk for pk in generations if pk not in self._texts]
        if missing:
            for pk, body, content in Generation.objects.filter(
                    pk__in=missing, release_id=self.release_id).values_list(
                    "pk", "text", "scenario_version__content"):
                self._texts[pk] = PairText(body, (content or {}).get("organisation") or {})
        return {pk: self._texts[pk] for pk in generations}


def _catalogue_rows(release_id: int, fixed: bool):
    pairs = ArenaPair.objects.filter(release_id=release_id).order_by("pk")
    queued = ExpressionWrapper(Q(simulation_queued_at__isnull=False),
                               output_field=BooleanField())
    if not fixed:
        found = list(pairs.annotate(queued=queued).values_list("pk", "shown", "queued"))
        array = np.array([row[:2] for row in found], dtype=np.int64).reshape(-1, 2)
        return array[:, 0], array[:, 1], np.array([row[2] for row in found], dtype=bool)
    found = list(pairs.annotate(queued=queued).values_list(
        "pk", "model_a_id", "model_b_id", "scenario_id", "shown", "generation_a_id",
        "generation_b_id", "task", "queued"))
    rows = np.array([row[:7] for row in found], dtype=np.int64).reshape(-1, 7)
    return rows, [row[7] for row in found], np.array([row[8] for row in found], dtype=bool)


def kept_catalogue(release: Release) -> KeptCatalogue:
    """The release's catalogue, its show counts (and the pairs copied elsewhere) at most
    SHOWN_REFRESH_SECONDS old."""
    with _kept_lock:
        kept = _kept.get(release.pk)
        if kept is not None and time.monotonic() - kept.read_at < SHOWN_REFRESH_SECONDS:
            return kept
        if kept is None or not kept.refresh(*_catalogue_rows(release.pk, fixed=False)):
            kept = _kept[release.pk] = KeptCatalogue(release.pk, *_catalogue_rows(
                release.pk, fixed=True))
        kept.copied_elsewhere(release.code)
        return kept


def forget_catalogues() -> None:
    """Drop every kept catalogue, publication and ratings (tests: SQLite reuses a rolled-back test's
    ids, and every test publishes its releases anew)."""
    with _kept_lock:
        _kept.clear()
    _ratings.clear()
    with _publications_lock:
        _publications.clear()


def pair_catalogue(release: Release) -> tuple[Catalogue, np.ndarray]:
    """Every pair of the arena as arrays, and the model pks its indices stand for."""
    kept = kept_catalogue(release)
    return kept.catalogue, kept.models


# The voter's requests read these by hand-written SQL: each is one indexed lookup, and building
# it through the ORM cost more than running it.

def shown_pair_ids(release: Release, voter_id: int) -> list[int]:
    """The pairs of the release this voter was shown."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.pair_id FROM {ArenaShowing._meta.db_table} s "
            f"JOIN {ArenaPair._meta.db_table} p ON p.id = s.pair_id "
            f"WHERE s.voter_id = %s AND p.release_id = %s", [voter_id, release.pk])
        return [row[0] for row in cursor.fetchall()]


def voter_by_key(key: str) -> ArenaVoter | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, flags FROM {ArenaVoter._meta.db_table} WHERE key = %s",
                       [key])
        row = cursor.fetchone()
    return None if row is None else _loaded(ArenaVoter, id=row[0], key=key,
                                            flags=_json(row[1]))


@dataclasses.dataclass(frozen=True)
class VoterShowings:
    """A voter and the pairs of one release they were shown, oldest first
    (`arena_voting_access`): what a voter's request needs of them, read at once."""

    voter: ArenaVoter
    rows: list[tuple]  # (id, pair_id, a_on_left, attention, shown_at), by id

    @property
    def seen(self) -> list[int]:
        """The pairs of the release this voter was shown (`shown_pair_ids`)."""
        return [row[1] for row in self.rows]

    def at(self, ordinal: int) -> ArenaShowing | None:
        """The voter's showing in this release with this ordinal (`showing_ordinal`)."""
        if not 0 <= ordinal < len(self.rows):
            return None
        pk, pair_id, a_on_left, attention, shown_at = self.rows[ordinal]
        showing = _loaded(ArenaShowing, id=pk, pair_id=pair_id, voter_id=self.voter.pk,
                          a_on_left=bool(a_on_left), attention=attention,
                          shown_at=_datetime(shown_at))
        showing.voter = self.voter
        return showing


def _voter_showings_sql(release_id: int, key: str) -> tuple[str, str, list]:
    """The voter's columns, and the joins that find them and their showings in the release."""
    showings, pairs = ArenaShowing._meta.db_table, ArenaPair._meta.db_table
    # The flags as text: one row per showing repeats them, decoded once (`_voter_showings`).
    return ("v.id, CAST(v.flags AS TEXT), s.id, s.pair_id, s.a_on_left, s.attention, s.shown_at",
            f"LEFT JOIN {ArenaVoter._meta.db_table} v ON v.key = %s LEFT JOIN ("
            f"SELECT s.id, s.voter_id, s.pair_id, s.a_on_left, s.attention, s.shown_at "
            f"FROM {showings} s JOIN {pairs} p ON p.id = s.pair_id WHERE p.release_id = %s"
            f") s ON s.voter_id = v.id", [key, release_id])


def _voter_showings(key: str, rows: list[tuple]) -> VoterShowings | None:
    if not rows:
        return None
    voter = _loaded(ArenaVoter, id=rows[0][0], key=key, flags=_json(rows[0][1]))
    return VoterShowings(voter, [row[2:] for row in rows if row[2] is not None])


def _loaded(model, **values):
    """A model instance from a row read by hand (only the fields named are loaded): as the
    ORM's own reading makes it, without its query machinery."""
    return model.from_db(connection.alias, list(values), list(values.values()))


def _json(value):
    # psycopg decodes a jsonb column itself; SQLite hands back its text.
    return json.loads(value) if isinstance(value, str) else value


def has_voted(voter_id: int, pair_id: int) -> bool:
    """Whether this voter has answered on this pair (one vote per voter per pair)."""
    return ArenaVote.objects.filter(voter_id=voter_id, pair_id=pair_id).exists()


def pending_showing(known: VoterShowings, release: Release) -> ArenaShowing | None:
    """The voter's latest showing in this release while they have not answered it: the pair
    page shows it again (same pair, same sides, same attention check) rather than drawing
    and counting another, so a reload is not a new showing. None once answered, and for a
    pair that holds a text another release has made public since it was shown
    (`copied_elsewhere`: never shown again)."""
    latest = known.at(len(known.rows) - 1)
    if latest is None or has_voted(known.voter.pk, latest.pair_id):
        return None
    if latest.pair_id in kept_catalogue(release).copied:
        return None
    return latest


def showing_ordinal(showing: ArenaShowing, release_id: int) -> int:
    """How many of the voter's showings in this release came before this one."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM {ArenaShowing._meta.db_table} s "
            f"JOIN {ArenaPair._meta.db_table} p ON p.id = s.pair_id "
            f"WHERE s.voter_id = %s AND p.release_id = %s AND s.id < %s",
            [showing.voter_id, release_id, showing.pk])
        return cursor.fetchone()[0]


def _datetime(value):
    """As the ORM reads a datetime column: PostgreSQL's is aware already; SQLite's is made
    so by the backend's own converter."""
    convert = getattr(connection.ops, "convert_datetimefield_value", None)
    return value if convert is None else convert(value, None, connection)


# Each process keeps the ratings it read from the cache this long: every pair chosen asks, and
# a round trip to the cache per pair cost more than the choice.
RATINGS_KEPT_SECONDS = 5.0
_ratings: dict[int, tuple[float, dict[int, float]]] = {}


def current_ratings(release: Release) -> dict[int, float]:
    """Point ratings (no intervals) from the counted votes so far, by model pk; cached briefly:
    selection only needs to know which writers are rated alike, not the last vote."""
    kept = _ratings.get(release.pk)
    if kept is not None and time.monotonic() - kept[0] < RATINGS_KEPT_SECONDS:
        return kept[1]
    found = _current_ratings(release)
    _ratings[release.pk] = (time.monotonic(), found)
    return found


def _current_ratings(release: Release) -> dict[int, float]:
    key = f"arena:ratings:{release.pk}"
    found = cache.get(key)
    if found is not None:
        return found
    rows = list(ArenaVote.objects.filter(pair__release=release, shadow=False, attention=False)
                .values_list("pair__model_a_id", "pair__model_b_id", "favourable")
                .annotate(n=Count("pk")))
    models = sorted({model for a, b, _, _ in rows for model in (a, b)})
    found = {}
    if models:
        index = {model: i for i, model in enumerate(models)}
        wins = np.zeros((len(models), len(models)))
        for a, b, favourable, n in rows:
            for winner, loser, weight in preference_comparisons(index[a], index[b], favourable):
                wins[winner, loser] += weight * n
        found = dict(zip(models, statistics.fit(wins).tolist(), strict=True))
    cache.set(key, found, RATINGS_CACHE_SECONDS)
    return found


# ---------------------------------------------------------------------------------------------
# Votes for the statistics
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class VoteRows:
    """People's votes and the simulated public's answers, as plain rows."""

    votes: list[dict[str, Any]]
    simulated: list[dict[str, Any]]
    writers: dict[int, str]  # LlmModel pk -> model id
    last_vote_id: int


def vote_rows(release: Release) -> VoteRows:
    pair_fields = ("pair_id", "pair__model_a_id", "pair__model_b_id", "pair__scenario_id",
                   "pair__flagged")
    votes = list(ArenaVote.objects.filter(pair__release=release).order_by("pk").values(
        "pk", "voter_id", "origin", "favourable", "honest", "a_on_left", "attention",
        "attention_passed", "shadow", "shadow_reasons", "simulated", "created_at",
        *pair_fields))
    simulated = list(SimulatedPairVote.objects.filter(
        pair__release=release, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
    ).values("position", "a_first", "favourable", "honest", "pair__simulation_queued_at",
             *pair_fields))
    model_ids = {row[key] for row in votes + simulated
                 for key in ("pair__model_a_id", "pair__model_b_id")}
    writers = dict(LlmModel.objects.filter(pk__in=model_ids).values_list("pk", "openrouter_id"))
    return VoteRows(votes, simulated, writers, max((row["pk"] for row in votes), default=0))


def result_latest(release: Release) -> ArenaResult | None:
    return ArenaResult.objects.filter(release=release).order_by("-computed_at", "-pk").first()


def result_is_stale(release: Release, latest: ArenaResult, *, votes: int, voters: int) -> bool:
    """A batch of counted votes after those `latest` holds (at least `votes` by at least
    `voters` from as many origins; one query). Shadow votes and the simulated public's
    answers wait for the next batch: figures that moved between batches would say which pair
    someone was just shown. The same rule as `services.counted_through`, which applies it to
    the rows themselves (where a vote of before origins were kept counts as its voter's own
    origin; here all such votes count as one, so a batch of them may wait a little longer)."""
    found = votes_after(release, latest).aggregate(
        votes=Count("pk"), voters=Count("voter", distinct=True),
        origins=Count("origin", distinct=True))
    return found["votes"] >= votes and min(found["voters"], found["origins"]) >= voters


def votes_after(release: Release, latest: ArenaResult):
    """The counted votes that `latest` does not hold yet: they wait for the next batch."""
    return ArenaVote.objects.filter(pair__release=release, shadow=False, attention=False,
                                    pk__gt=latest.counted_votes_through)


def has_answers(release: Release) -> bool:
    """Any vote, or any answer of the simulated public, in the release's arena."""
    return (ArenaVote.objects.filter(pair__release=release).exists()
            or SimulatedPairVote.objects.filter(pair__release=release,
                                                status=WorkStatus.DONE).exists())


def pairs_left(release: Release) -> int:
    """Pairs a new voter could be shown: every pair of the catalogue but those holding a
    text another release has made public since it was built (`copied_elsewhere`)."""
    kept = kept_catalogue(release)
    return len(kept.catalogue.ids) - len(set(kept.copied))


def findable_left_out(release: Release) -> int:
    """How many texts of the arena's cells it never pairs because a text outside them has
    their words (`publication.same_words`); 0 for a release not published."""
    publication = Publication.objects.filter(release=release).defer("snapshot").first()
    if publication is None:
        return 0
    snapshot = load_snapshot(publication)
    pairable = {text.id for text in arena_texts(snapshot)}
    return len(findable_elsewhere(snapshot, Holder.ARENA) & pairable)


def arena_counts(release: Release) -> dict[str, int]:
    """Staff figures: pairs (and those a voter can still be shown), showings, votes by kind,
    simulated answers by status, and the held texts left out of pairs because their words can
    be found outside the arena."""
    pairs = ArenaPair.objects.filter(release=release).aggregate(
        pairs=Count("pk"), flagged=Count("pk", filter=Q(flagged=True)))
    votes = ArenaVote.objects.filter(pair__release=release).aggregate(
        votes=Count("pk"), shadow=Count("pk", filter=Q(shadow=True)),
        attention=Count("pk", filter=Q(attention=True)))
    simulated = dict(SimulatedPairVote.objects.filter(pair__release=release)
                     .values_list("status").annotate(n=Count("pk")))
    showings = ArenaShowing.objects.filter(pair__release=release).count()
    return {**pairs, **votes, "showings": showings, "left_out": findable_left_out(release),
            "pairs_left": pairs_left(release) if pairs["pairs"] else 0,
            **{f"simulated_{status}": simulated.get(status, 0) for status in WorkStatus.values},
            "recognisability": RecognisabilityRun.objects.filter(release=release).count()}
