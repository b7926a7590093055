"""The reveal stage: does trust drop when the reader learns what the text hid? (DESIGN section 2)

For every read text (complied or partial) whose jury is done, three reading positions
(the first at each level of trust in news media: `readers.reveal_positions`; 3 calls per text
instead of 12) who read it on the panel learn which incriminating facts a majority of the
jurors found not conveyed and which claims a majority labelled exaggeration, contradiction
or fabrication, and answer the attitude questions again. Reveal effect = mean attitude after
minus mean attitude before (that position's panel response to the same text).

A jury is done when every seat is scored or unscored: a failed seat is retried by an operator
(the gate blocks publication until then) and its verdict may change what the majority found,
so the reveal waits for it. A reveal row keeps the seats whose verdicts it told (`jury`);
when an operator's retry of an unscored seat gives the jury another verdict, rows whose
reader was told something the final jury no longer finds are asked again, the others are
kept (an identical prompt is not paid for twice). Until then they are outdated rows, which
the publish gate sees (`Stage.outdated`).
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
from runs_app.stages.base import given_back
from runs_app.stages.panel import AgentRunStage, read_generations
from runs_app.stages.replies import Asked, Turn, ask_turn, next_turn, reply_fields

# A reveal row's `result` key: the seats of the verdicts it told its reader.
JURY = "jury"
# Texts whose verdicts a stage keeps between its claim and its builds.
CACHE_LIMIT = 5000


@dataclasses.dataclass(frozen=True)
class RevealJob:
    turn: Turn  # the row's next call (`next_turn`)
    brief: ReaderBrief
    revealed: Revealed
    before: list[int]
    attempts_left: int
    jury: tuple[int, ...]  # the seats whose verdicts `revealed` is built on


class RevealStage(AgentRunStage):
    name = "reveal"
    answered_by_config = role = "reader"
    claim_related = ("generation",)
    claim_defer = ("generation__prompt",)
    kind = AgentRun.Kind.REVEAL

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        config = self.config(release.pk)
        positions = [p.id for p in reveal_positions(load_panel(config.panel, release.language))]
        ready = _juries(release, generation_ids)
        if not ready:
            return 0
        asked_again = self._bring_up_to_date(release, ready)
        read = set(ReaderResponse.objects.filter(
            release=release, generation_id__in=ready, position__in=positions,
            status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
        ).values_list("generation_id", "position"))
        return asked_again + self.create_rows(release, (
            AgentRun(release=release, generation_id=generation_id, kind=self.kind,
                     position=position)
            for generation_id in sorted(ready) for position in positions
            if (generation_id, position) in read
        ), generation_ids)

    def outdated(self, release: Release) -> int:
        """Reveal rows that told a jury which has changed since (`_outdated`)."""
        return len(_outdated(release, _juries(release)))

    def _bring_up_to_date(self, release: Release, juries: dict[int, tuple[int, ...]]) -> int:
        """Give back the outdated rows whose reader was told something the final jury does
        not find, with a fresh attempt budget (their replies and cost so far are kept); the
        others only note the final jury. Returns how many were given back. Each row is
        changed only as it was read (`finished_at`): a row another worker has redone since
        is not asked a third time."""
        outdated = _outdated(release, juries)
        if not outdated:
            return 0
        config = self.config(release.pk)
        verdicts = _verdicts({generation_id for _, generation_id, _ in outdated})
        asked_again = 0
        rows = AgentRun.objects.filter(pk__in=[pk for pk, _, _ in outdated]).values_list(
            "pk", "generation_id", "generation__scenario_version_id", "finished_at", "result")
        for pk, generation_id, version_id, finished_at, result in rows:
            document, _ = self.scenario(version_id, config.language)
            final = _told(revealed_items(list(verdicts.get(generation_id, {}).values()),
                                         _incriminating(document)))
            same = AgentRun.objects.filter(pk=pk, status=WorkStatus.DONE, finished_at=finished_at)
            if all(result.get(key) == value for key, value in final.items()):
                same.update(result=result | {JURY: list(juries[generation_id])})
            else:
                asked_again += same.update(**given_back(), attempts=0, claims=0, outcome="",
                                           error="", finished_at=None)
        return asked_again

    def planned_calls(self, config) -> int:
        return config.texts * len(reveal_positions(load_panel(config.panel, config.language)))

    def __init__(self) -> None:
        super().__init__()
        self._verdicts: dict[int, dict[int, VerdictData]] = {}
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
            verdicts = _verdicts([generation.pk]).get(generation.pk, {})
        revealed = revealed_items(list(verdicts.values()), _incriminating(document))
        position = load_panel(config.panel, config.language).position(item.position)
        before = self._before.pop((generation.pk, item.position), None)
        if before is None:
            before = ReaderResponse.objects.values_list("attitude", flat=True).get(
                release_id=item.release_id, generation_id=generation.pk, position=item.position)
        texts = ScoringVersion.texts_for_pin(config.scoring_version).language(config.language)
        request = call_request(
            "reveal", config=config, model=config.reader,
            messages=reveal_messages(texts, brief, position, generation.text, revealed))
        return RevealJob(next_turn(request, item), brief, revealed, list(before),
                         max(0, config.max_reply_attempts - item.attempts), tuple(verdicts))

    async def execute(self, job: RevealJob, providers: ProviderPool) -> tuple[RevealJob, Asked]:
        asked = await ask_turn(job.turn, lambda text: parse_reveal_reply(text, job.brief),
                               job.attempts_left, providers)
        return job, asked

    def record(self, item: AgentRun, outcome: tuple[RevealJob, Asked]) -> dict[str, Any]:
        job, asked = outcome
        fields = reply_fields(item, asked)
        transcript = [{"role": m.role, "content": m.content} for m in job.turn.request.messages]
        transcript += [{"role": "assistant", "content": entry["text"]}
                       for entry in asked.raw_replies if "text" in entry]
        fields["transcript"] = transcript
        after: list[int] | None = asked.reply
        if after is not None:
            fields["result"] = {
                "before": job.before, "after": after,
                "effect": mean_attitude([after]) - mean_attitude([job.before]),  # type: ignore[operator]
                **_told(job.revealed), JURY: list(job.jury),
            }
        return fields


def _told(revealed: Revealed) -> dict[str, list]:
    """What a reveal row keeps of what its reader was told."""
    return {"omitted": list(revealed.omitted_ids),
            "misstated": [{"quote": q, "label": label} for q, label in revealed.misstated]}


def _incriminating(document: Any) -> list[tuple[str, str]]:
    """A scenario's incriminating facts, (id, text): what a reveal may say was left out."""
    return [(fact.id, fact.text) for fact in document.facts if fact.label == "incriminating"]


def _juries(release: Release,
            generation_ids: Collection[int] | None = None) -> dict[int, tuple[int, ...]]:
    """Read texts whose jury is done (every seat scored or unscored, at least one scored),
    with the seats of their scored verdicts. A failed or unfinished seat is not done."""
    seats: dict[int, list[tuple[int, str, str]]] = defaultdict(list)
    rows = JurorVerdict.objects.filter(
        release=release, generation__in=read_generations(release, generation_ids)
    ).values_list("generation_id", "seat", "status", "outcome")
    for generation_id, seat, status, outcome in rows:
        seats[generation_id].append((seat, status, outcome))
    juries = {generation_id: tuple(sorted(seat for seat, _, outcome in jury
                                          if outcome == ReplyOutcome.SCORED))
              for generation_id, jury in seats.items()
              if all(status == WorkStatus.DONE for _, status, _ in jury)}
    return {generation_id: jury for generation_id, jury in juries.items() if jury}


def _outdated(release: Release,
              juries: dict[int, tuple[int, ...]]) -> list[tuple[int, int, list[int]]]:
    """(row, text, seats told) of the scored reveal rows of these texts that told other
    seats than the text's jury now has: an operator's retry gave it another verdict."""
    told = AgentRun.objects.filter(
        release=release, kind=AgentRun.Kind.REVEAL, generation_id__in=juries,
        status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED, result__has_key=JURY,
    ).values_list("pk", "generation_id", f"result__{JURY}")
    return [(pk, generation_id, seats) for pk, generation_id, seats in told
            if tuple(seats) != juries[generation_id]]


def _verdicts(generation_ids: Collection[int]) -> dict[int, dict[int, VerdictData]]:
    """The scored verdicts of these texts by seat, with their claims (two queries)."""
    # Only the columns read here: a verdict's raw replies are most of its row.
    claims = Claim.objects.only("verdict_id", "position", "quote", "label")
    verdicts = JurorVerdict.objects.filter(
        generation_id__in=generation_ids, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
    ).order_by("generation_id", "seat").only(
        "generation_id", "seat", "facts_conveyed").prefetch_related(
        Prefetch("claim_rows", queryset=claims))
    found: dict[int, dict[int, VerdictData]] = defaultdict(dict)
    for verdict in verdicts:
        found[verdict.generation_id][verdict.seat] = VerdictData(
            conveyed_ids(verdict.facts_conveyed),
            tuple((claim.quote, claim.label) for claim in verdict.claim_rows.all()))
    return found
