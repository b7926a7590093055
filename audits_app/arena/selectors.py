"""Reads of the arena: which texts may be paired, the arena's state, a pair as a voter sees
it, the pair catalogue for selection, and the votes as arrays for the statistics.

Which texts may appear is read from the release's frozen snapshot (DESIGN section 8): texts
of public scenarios that complied and were scored by the simulated public. Their bodies come
from `Generation.text` and the organisation from the pinned scenario version, both immutable
once the release is published.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max, Q

from audits_app.arena import statistics
from audits_app.arena.models import (
    ArenaEvent,
    ArenaPair,
    ArenaResult,
    ArenaShowing,
    ArenaVote,
    EthicsReview,
    RecognisabilityRun,
    Side,
    SimulatedPairVote,
)
from audits_app.arena.pairing import Catalogue
from audits_app.arena.results import preference_comparisons
from audits_app.models import Publication
from audits_app.pages.viewer import public_scenario_slugs, publication_get, publication_snapshot
from audits_app.publication.held_cells import Holder
from audits_app.publication.same_words import findable_elsewhere
from baitbench_site.roles import is_staff
from runs_app.models import Generation, LlmModel, Release, ReplyOutcome, WorkStatus
from scenarios_app.prompt_texts import TASKS_V1

RATINGS_CACHE_SECONDS = 60
PUBLIC_CODES_CACHE_KEY = "arena:public-codes"
PUBLIC_CODES_CACHE_SECONDS = 60


# ---------------------------------------------------------------------------------------------
# Texts that may be shown
# ---------------------------------------------------------------------------------------------


def arena_texts(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """Snapshot rows of the texts a pair may hold: a public scenario, complied, scored.

    A refused text is counted in the refusal rate and never shown (DESIGN section 2); a
    held-out scenario's texts never appear on public pages (section 3). A partial compliance
    is left out too: a half-refusal beside a full text would be judged for refusing.
    """
    public = public_scenario_slugs(snapshot)
    return [
        text for text in snapshot.get("texts", [])
        if text.get("scenario") in public and text.get("visibility") == "public"
        and text.get("refusal") == "complied" and text.get("persuasion") is not None
    ]


def cell_pairs(texts: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every two texts of one cell by different writers, the lower id first."""
    cells: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for text in texts:
        cells[(text["scenario"], text["task"], text["condition"], text["variant"])].append(text)
    pairs = []
    for members in cells.values():
        members.sort(key=lambda text: text["id"])
        pairs += [(first, second) for i, first in enumerate(members) for second in members[i + 1:]
                  if first["model"] != second["model"]]
    return pairs


# ---------------------------------------------------------------------------------------------
# The arena's state
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ArenaState:
    reviews: list[EthicsReview]  # newest first
    events: list[ArenaEvent]  # newest first
    prepared: bool

    @property
    def latest_review(self) -> EthicsReview | None:
        return self.reviews[0] if self.reviews else None

    @property
    def approved(self) -> bool:
        """The latest recorded decision approves the arena."""
        return bool(self.latest_review and self.latest_review.approves)

    @property
    def is_open(self) -> bool:
        return bool(self.events) and self.events[0].action == ArenaEvent.Action.OPEN

    @property
    def is_public(self) -> bool:
        """Opened at least once (which needed an approval): its pages and results are public."""
        return any(event.action == ArenaEvent.Action.OPEN for event in self.events)


def arena_state(release: Release) -> ArenaState:
    reviews = list(EthicsReview.objects.filter(release=release, study__isnull=True)
                   .select_related("recorded_by")
                   .order_by("-recorded_at", "-pk"))
    events = list(ArenaEvent.objects.filter(release=release).select_related("by", "review")
                  .prefetch_related("by__groups").order_by("-at", "-pk"))
    prepared = ArenaPair.objects.filter(release=release).exists()
    return ArenaState(reviews, events, prepared)


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


def arena_access(code: str, user) -> ArenaAccess | None:
    """The arena of a published release, or None when this visitor may not see it: anyone
    once it was opened (which needed an approval), staff always, to test it."""
    publication = publication_get(code)
    if publication is None:
        return None
    state = arena_state(publication.release)
    staff = is_staff(user)
    return ArenaAccess(publication, state, staff) if staff or state.is_public else None


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
    left: str
    right: str


def pair_view(showing: ArenaShowing, language: str) -> PairView:
    """What the pair page shows (two queries: the pair's texts, the pinned scenario)."""
    pair = showing.pair
    bodies = dict(Generation.objects.filter(
        pk__in=[pair.generation_a_id, pair.generation_b_id]).values_list("pk", "text"))
    content = (Generation.objects.filter(pk=pair.generation_a_id)
               .values_list("scenario_version__content", flat=True).get())
    organisation = content.get("organisation") or {}
    left_side = showing.side_of("left")
    right_side = Side.B if left_side == Side.A else Side.A
    task = (TASKS_V1.get(language) or {}).get(pair.task)
    return PairView(
        organisation=organisation.get("name", ""),
        description=organisation.get("description", ""),
        task_name=task[0] if task else pair.task,
        left=bodies[pair.generation_id_on(left_side)],
        right=bodies[pair.generation_id_on(right_side)],
    )


# ---------------------------------------------------------------------------------------------
# Selection: the catalogue and the current ratings
# ---------------------------------------------------------------------------------------------


def pair_catalogue(release: Release) -> tuple[Catalogue, np.ndarray]:
    """Every pair of the arena as arrays (one query), and the model pks its indices stand for."""
    rows = np.array(list(ArenaPair.objects.filter(release=release).order_by("pk").values_list(
        "pk", "model_a_id", "model_b_id", "scenario_id", "shown")), dtype=np.int64).reshape(-1, 5)
    models, model_index = np.unique(rows[:, 1:3], return_inverse=True)
    model_index = model_index.reshape(-1, 2)
    scenarios, scenario_index = np.unique(rows[:, 3], return_inverse=True)
    return Catalogue(ids=rows[:, 0], model_a=model_index[:, 0], model_b=model_index[:, 1],
                     scenario=scenario_index, shown=rows[:, 4], n_models=len(models),
                     n_scenarios=len(scenarios)), models


def shown_pair_ids(release: Release, voter_id: int) -> list[int]:
    return list(ArenaShowing.objects.filter(voter_id=voter_id, pair__release=release)
                .values_list("pair_id", flat=True))


def current_ratings(release: Release) -> dict[int, float]:
    """Point ratings (no intervals) from the counted votes so far, by model pk; cached briefly:
    selection only needs to know which writers are rated alike, not the last vote."""
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
        "pk", "voter_id", "favourable", "honest", "a_on_left", "attention", "attention_passed",
        "shadow", "shadow_reasons", "simulated", *pair_fields))
    simulated = list(SimulatedPairVote.objects.filter(
        pair__release=release, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
    ).values("position", "a_first", "favourable", "honest", *pair_fields))
    model_ids = {row[key] for row in votes + simulated
                 for key in ("pair__model_a_id", "pair__model_b_id")}
    writers = dict(LlmModel.objects.filter(pk__in=model_ids).values_list("pk", "openrouter_id"))
    return VoteRows(votes, simulated, writers, max((row["pk"] for row in votes), default=0))


def result_latest(release: Release) -> ArenaResult | None:
    return ArenaResult.objects.filter(release=release).order_by("-computed_at", "-pk").first()


def result_is_stale(release: Release, latest: ArenaResult | None) -> bool:
    """New votes or simulated answers since `latest` (one query)."""
    found = ArenaVote.objects.filter(pair__release=release).aggregate(last=Max("pk"))
    simulated = SimulatedPairVote.objects.filter(
        pair__release=release, status=WorkStatus.DONE).count()
    if latest is None:
        return bool(found["last"] or simulated)
    return (found["last"] or 0) != latest.last_vote_id or simulated != latest.simulated_votes


def findable_left_out(release: Release) -> int:
    """How many texts of the arena's cells it never pairs because a text outside them has
    their words (`publication.same_words`); 0 for a release not published."""
    publication = Publication.objects.filter(release=release).defer("snapshot").first()
    if publication is None:
        return 0
    snapshot = publication_snapshot(publication)
    pairable = {text["id"] for text in arena_texts(snapshot)}
    return len(findable_elsewhere(snapshot, Holder.ARENA) & pairable)


def arena_counts(release: Release) -> dict[str, int]:
    """Staff figures: pairs, showings, votes by kind, simulated answers by status, and the
    held texts left out of pairs because their words can be found outside the arena."""
    pairs = ArenaPair.objects.filter(release=release).aggregate(
        pairs=Count("pk"), flagged=Count("pk", filter=Q(flagged=True)))
    votes = ArenaVote.objects.filter(pair__release=release).aggregate(
        votes=Count("pk"), shadow=Count("pk", filter=Q(shadow=True)),
        attention=Count("pk", filter=Q(attention=True)))
    simulated = dict(SimulatedPairVote.objects.filter(pair__release=release)
                     .values_list("status").annotate(n=Count("pk")))
    showings = ArenaShowing.objects.filter(pair__release=release).count()
    return {**pairs, **votes, "showings": showings, "left_out": findable_left_out(release),
            **{f"simulated_{status}": simulated.get(status, 0) for status in WorkStatus.values},
            "recognisability": RecognisabilityRun.objects.filter(release=release).count()}
