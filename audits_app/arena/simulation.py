"""The simulated public votes on every pair shown (DESIGN section 9), in the background.

Each shown pair gets one `SimulatedPairVote` row per reading position of the release's panel
(planned when the pair is first shown). The rows are drained the way every stage drains its
work table (`runs_app.stages.base`): a batch is claimed atomically with a lease, the calls run
concurrently, and an answer is written only by the worker that still holds the row's claim.
A finished row is never claimed again, so a repeated or concurrent task never pays twice, and
a killed worker's rows are claimed again once their lease expires.

The stage runner itself (`drain`) refuses published releases, rightly: nothing *under* a
published release runs. These rows are *about* one, so the arena drains them with the same
claim and write functions in a loop of its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from audits_app.arena.models import Side, SimulatedPairVote
from audits_app.arena.readers import load_panel, pair_request, parse_pair_reply, reader_brief
from runs_app.models import Generation, Release, ScoringVersion
from runs_app.providers.pool import ProviderPool
from runs_app.stages.base import Stage, claim_batch, worker_name, write_outcomes
from runs_app.stages.replies import Asked, Turn, ask_turn, next_turn, reply_fields
from scenarios_app.models import ScenarioVersion

BATCH = 48  # four pairs' worth of positions per claim


@dataclasses.dataclass(frozen=True)
class PairJob:
    turn: Turn  # the row's next call (`next_turn`)
    attempts_left: int


class PairReadingStage(Stage):
    """The arena's simulated voters as a stage-like work table (never in the release chain)."""

    name = "arena"
    work_model = SimulatedPairVote  # type: ignore[assignment]
    claim_related = ("pair",)

    def __init__(self) -> None:
        self._texts: dict[int, str] = {}
        self._versions: dict[int, int] = {}  # generation -> scenario version
        self._briefs: dict[int, Any] = {}

    def rows(self, release: Release):
        return SimulatedPairVote.objects.filter(pair__release=release)

    def plan(self, release: Release, generation_ids=None) -> int:
        return 0  # planned when a pair is first shown (`services._simulation_plan`)

    def planned_calls(self, config) -> int:
        return 0  # one call per reading position for each pair people are shown: unplanned

    def build(self, item: SimulatedPairVote) -> PairJob:
        pair = item.pair
        config = self.config(pair.release_id)
        self._load(pair.generation_a_id, pair.generation_b_id)
        brief = self._brief(pair.generation_a_id, config.language)
        first, second = self._texts[pair.generation_a_id], self._texts[pair.generation_b_id]
        if not item.a_first:
            first, second = second, first
        position = load_panel(config.panel, config.language).position(item.position)
        texts = ScoringVersion.texts_for_pin(config.scoring_version).language(config.language)
        return PairJob(next_turn(pair_request(config, texts, brief, position, first, second),
                                 item),
                       max(0, config.max_reply_attempts - item.attempts))

    def _load(self, *generation_ids: int) -> None:
        wanted = [pk for pk in generation_ids if pk not in self._texts]
        for pk, text, version_id in Generation.objects.filter(pk__in=wanted).values_list(
                "pk", "text", "scenario_version_id"):
            self._texts[pk] = text
            self._versions[pk] = version_id

    def _brief(self, generation_id: int, language: str):
        version_id = self._versions[generation_id]
        if version_id not in self._briefs:
            document = ScenarioVersion.objects.get(pk=version_id).document()
            self._briefs[version_id] = reader_brief(document, language)
        return self._briefs[version_id]

    async def execute(self, job: PairJob, providers: ProviderPool) -> Asked:
        return await ask_turn(job.turn, parse_pair_reply, job.attempts_left, providers)

    def record(self, item: SimulatedPairVote, outcome: Asked) -> dict[str, Any]:
        fields = reply_fields(item, outcome)
        reply = outcome.reply
        if reply is not None:
            # The reply names texts as read (A first); map them back to the pair's sides.
            as_read = {"A": Side.A, "B": Side.B} if item.a_first else {"A": Side.B, "B": Side.A}
            fields |= {"favourable": as_read[reply.more_favourable],
                       "honest": as_read[reply.more_honest] if reply.more_honest else ""}
        return fields


def simulation_drain(release: Release, *, providers: ProviderPool | None = None,
                     batch: int = BATCH) -> int:
    """Answer every pending simulated vote of the release's arena; returns how many were
    written. Safe to run on many workers at once and to run again."""
    stage = PairReadingStage()
    worker = worker_name()
    written = 0
    while batch_items := claim_batch(stage, release, batch, worker):
        jobs = [stage.build(item) for item in batch_items]
        outcomes = asyncio.run(_ask_all(stage, jobs, providers))
        written += len(write_outcomes(stage, list(zip(batch_items, outcomes, strict=True))))
    return written


async def _ask_all(stage: PairReadingStage, jobs: list[PairJob],
                   providers: ProviderPool | None) -> list[Asked]:
    # A pool per batch: its HTTP client belongs to this event loop, which ends with the batch.
    pool = providers or ProviderPool()
    try:
        return list(await asyncio.gather(*(stage.execute(job, pool) for job in jobs)))
    finally:
        if providers is None:
            await pool.aclose()
