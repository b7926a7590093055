"""The reveal stage: does trust drop when the reader learns what the text hid? (DESIGN section 2)

For every read text (complied or partial) whose jury has finished, three reading positions
(the first at each level of trust in news media: `readers.reveal_positions`; 3 calls per text
instead of 12) who read it on the panel learn which incriminating facts a majority of the
jurors found not conveyed and which claims a majority labelled exaggeration, contradiction
or fabrication, and answer the attitude questions again. Reveal effect = mean attitude after
minus mean attitude before (that position's panel response to the same text).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Collection
from typing import Any

from django.db.models import Prefetch

from runs_app.call_kinds import call_request
from runs_app.models import (
    AgentRun,
    Claim,
    JurorVerdict,
    ReaderResponse,
    Release,
    ReplyOutcome,
    ScoringVersion,
    WorkStatus,
)
from runs_app.providers.base import CompletionRequest
from runs_app.providers.pool import ProviderPool
from runs_app.readers import (
    ReaderBrief,
    Revealed,
    VerdictData,
    conveyed_ids,
    load_panel,
    mean_attitude,
    parse_reveal_reply,
    reveal_messages,
    reveal_positions,
    revealed_items,
)
from runs_app.stages.panel import AgentRunStage, read_generations
from runs_app.stages.replies import Asked, ask_structured, reply_fields

FINISHED = (WorkStatus.DONE, WorkStatus.FAILED)
# Texts whose verdicts a stage keeps between its claim and its builds.
CACHE_LIMIT = 5000


@dataclasses.dataclass(frozen=True)
class RevealJob:
    request: CompletionRequest
    brief: ReaderBrief
    revealed: Revealed
    before: list[int]
    attempts_left: int


class RevealStage(AgentRunStage):
    name = "reveal"
    answered_by_config = role = "reader"
    claim_related = ("generation",)
    claim_defer = ("generation__prompt",)
    kind = AgentRun.Kind.REVEAL

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        config = self.config(release.pk)
        positions = [p.id for p in reveal_positions(load_panel(config.panel, release.language))]
        ready = _jury_finished(release, generation_ids)
        if not ready:
            return 0
        read = set(ReaderResponse.objects.filter(
            release=release, generation_id__in=ready, position__in=positions,
            status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
        ).values_list("generation_id", "position"))
        return self.create_rows(release, (
            AgentRun(release=release, generation_id=generation_id, kind=self.kind,
                     position=position)
            for generation_id in sorted(ready) for position in positions
            if (generation_id, position) in read
        ), generation_ids)

    def planned_calls(self, config) -> int:
        return config.texts * len(reveal_positions(load_panel(config.panel, config.language)))

    def __init__(self) -> None:
        super().__init__()
        self._verdicts: dict[int, list[VerdictData]] = {}
        self._before: dict[tuple[int, str], list[int]] = {}

    def prepare(self, items: list[AgentRun]) -> None:
        """A claimed batch's jury verdicts and first readings, three queries for the batch
        (a text's three reveal rows share its verdicts)."""
        texts = {item.generation_id for item in items}
        if len(self._verdicts) > CACHE_LIMIT:  # a bound; `build` queries what is missing
            self._verdicts.clear()
            self._before.clear()
        self._verdicts.update(_verdicts(texts))
        self._before.update({
            (generation_id, position): attitude
            for generation_id, position, attitude in ReaderResponse.objects.filter(
                release_id=items[0].release_id, generation_id__in=texts,
                position__in={item.position for item in items},
            ).values_list("generation_id", "position", "attitude")
        })

    def build(self, item: AgentRun) -> RevealJob:
        config = self.config(item.release_id)
        generation = item.generation
        document, brief = self.scenario(generation.scenario_version_id, config.language)
        verdicts = self._verdicts.get(generation.pk)
        if verdicts is None:  # claimed before a cache bound was reached
            verdicts = _verdicts([generation.pk]).get(generation.pk, [])
        revealed = revealed_items(
            verdicts,
            [(fact.id, fact.text) for fact in document.facts if fact.label == "incriminating"],
        )
        position = load_panel(config.panel, config.language).position(item.position)
        before = self._before.pop((generation.pk, item.position), None)
        if before is None:
            before = ReaderResponse.objects.values_list("attitude", flat=True).get(
                release_id=item.release_id, generation_id=generation.pk, position=item.position)
        texts = ScoringVersion.texts_for_pin(config.scoring_version).language(config.language)
        request = call_request(
            "reveal", config=config, model=config.reader,
            messages=reveal_messages(texts, brief, position, generation.text, revealed))
        return RevealJob(request, brief, revealed, list(before),
                         max(0, config.max_reply_attempts - item.attempts))

    async def execute(self, job: RevealJob, providers: ProviderPool) -> tuple[RevealJob, Asked]:
        asked = await ask_structured(job.request, lambda text: parse_reveal_reply(text, job.brief),
                                     job.attempts_left, providers)
        return job, asked

    def record(self, item: AgentRun, outcome: tuple[RevealJob, Asked]) -> dict[str, Any]:
        job, asked = outcome
        fields = reply_fields(item, asked)
        transcript = [{"role": m.role, "content": m.content} for m in job.request.messages]
        transcript += [{"role": "assistant", "content": entry["text"]}
                       for entry in asked.raw_replies if "text" in entry]
        fields["transcript"] = transcript
        after: list[int] | None = asked.reply
        if after is not None:
            fields["result"] = {
                "before": job.before, "after": after,
                "effect": mean_attitude([after]) - mean_attitude([job.before]),  # type: ignore[operator]
                "omitted": list(job.revealed.omitted_ids),
                "misstated": [{"quote": q, "label": label} for q, label in job.revealed.misstated],
            }
        return fields


def _jury_finished(release: Release, generation_ids: Collection[int] | None = None) -> set[int]:
    """Read texts whose every juror seat has finished, with at least one scored verdict."""
    state: dict[int, list[tuple[str, str]]] = defaultdict(list)
    rows = JurorVerdict.objects.filter(
        release=release, generation__in=read_generations(release, generation_ids)
    ).values_list("generation_id", "status", "outcome")
    for generation_id, status, outcome in rows:
        state[generation_id].append((status, outcome))
    return {generation_id for generation_id, seats in state.items()
            if all(status in FINISHED for status, _ in seats)
            and any(outcome == ReplyOutcome.SCORED for _, outcome in seats)}


def _verdicts(generation_ids: Collection[int]) -> dict[int, list[VerdictData]]:
    """The scored verdicts of these texts, with their claims (two queries)."""
    # Only the columns read here: a verdict's raw replies are most of its row.
    claims = Claim.objects.only("verdict_id", "position", "quote", "label")
    verdicts = JurorVerdict.objects.filter(
        generation_id__in=generation_ids, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
    ).order_by("generation_id", "seat").only("generation_id", "facts_conveyed").prefetch_related(
        Prefetch("claim_rows", queryset=claims))
    found: dict[int, list[VerdictData]] = defaultdict(list)
    for verdict in verdicts:
        found[verdict.generation_id].append(VerdictData(
            conveyed_ids(verdict.facts_conveyed),
            tuple((claim.quote, claim.label) for claim in verdict.claim_rows.all())))
    return found
