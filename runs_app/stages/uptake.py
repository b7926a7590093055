"""The uptake stage: does a journalist run the text, and adopt its frame? (DESIGN section 2)

Two calls per read text (complied or partial): the journalist (`config.journalist`) gets the
text as incoming press material and decides whether to run a story, writing its headline and
opening; if it runs one, a judge (the same model, purpose `frame_judge`) rates 1-5 how far the
article adopts the organisation's frame, stored normalised to 0-1. Both replies are JSON,
retried up to `max_reply_attempts` each, and kept in `raw_replies` and `transcript`; a story
in another language than the release's is an invalid reply (`parse_journalist_reply`).

Every call is a claim of the row (`replies.ask_turn`), a repair turn too: the story is written
(the row pending again, the story in `result` with `judge_due`) before the judge is asked, so a
judge that fails, an operator's retry or a killed worker never asks (and pays) the journalist
twice, and an invalid reply is written before its repair turn is sent. A judge whose
replies never validate leaves the row unscored (its frame is not measured) with the story
kept and the judge still due: the story counts for uptake, and a retry asks only the judge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from runs_app.call_kinds import call_request
from runs_app.models import AgentRun, Release, ReplyOutcome, ScoringVersion, WorkStatus
from runs_app.providers.base import CompletionRequest
from runs_app.providers.pool import ProviderPool
from runs_app.readers import (
    JournalistReply,
    JudgeReply,
    frame_adoption,
    journalist_messages,
    judge_messages,
    parse_journalist_reply,
    parse_json_reply,
)
from runs_app.stages.base import given_back, parked
from runs_app.stages.panel import AgentRunStage, read_generations
from runs_app.stages.replies import (
    Asked,
    Kept,
    Turn,
    ask_turn,
    next_turn,
    reply_fields,
    usage_fields,
)


@dataclasses.dataclass(frozen=True)
class UptakeJob:
    turn: Turn  # the journalist's next call; the frame judge's once the story is kept
    language: str  # the release's: a story in another is invalid
    attempts_left: int  # of the one asked, journalist or judge
    # The journalist's story, kept on the row by an earlier claim: only the judge is asked.
    story: JournalistReply | None = None


@dataclasses.dataclass
class UptakeOutcome:
    job: UptakeJob
    journalist: Asked | None  # None when the story was kept from an earlier claim
    judge: Asked | None = None


# `result` keys of a row whose story is kept and whose frame judge is still to be asked;
# `judge_from` is the row's `attempts` when the judge's turn began (its budget counts after it).
JUDGE_DUE, JUDGE_FROM = "judge_due", "judge_from"


class UptakeStage(AgentRunStage):
    name = "uptake"
    answered_by_config = role = "journalist"
    claim_related = ("generation",)
    claim_defer = ("generation__prompt",)
    kind = AgentRun.Kind.UPTAKE

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        return self.create_rows(release, (
            AgentRun(release=release, generation=generation, kind=self.kind, position="")
            for generation in read_generations(release, generation_ids).only("pk")
        ), generation_ids)

    def planned_calls(self, config) -> int:
        return config.texts * 2  # the journalist, then the frame judge if it runs a story

    def build(self, item: AgentRun) -> UptakeJob:
        config = self.config(item.release_id)
        generation = item.generation
        _, brief = self.scenario(generation.scenario_version_id, config.language)
        texts = ScoringVersion.texts_for_pin(config.scoring_version).language(config.language)
        if not item.result.get(JUDGE_DUE):
            request = call_request("journalist", config=config, model=config.journalist,
                                   messages=journalist_messages(texts, brief, generation.text))
            return UptakeJob(next_turn(request, item), config.language,
                             max(0, config.max_reply_attempts - item.attempts))
        story = JournalistReply.model_validate(
            {key: item.result[key] for key in ("runs_story", "headline", "opening", "reason")})
        # The judge's calls since it began, or since an operator's retry (`retried`).
        judged = Kept(max(0, item.attempts - item.result.get(JUDGE_FROM, 0)),
                      [entry for entry in item.raw_replies if entry.get("call") == "frame_judge"])
        request = call_request("frame_judge", config=config, model=config.journalist,
                               messages=judge_messages(texts, generation.text, story.headline,
                                                       story.opening))
        return UptakeJob(next_turn(request, judged), config.language,
                         max(0, config.max_reply_attempts - judged.attempts), story)

    async def execute(self, job: UptakeJob, providers: ProviderPool) -> UptakeOutcome:
        """One call per claim: the journalist's, or once its story is kept the frame
        judge's. A story is paid for: it is written before the judge is asked, so a judge
        that fails (or a worker that dies meanwhile) never makes the journalist be asked,
        and paid, again."""
        if job.story is None:
            journalist = await ask_turn(
                job.turn, lambda text: parse_journalist_reply(text, job.language),
                job.attempts_left, providers)
            return UptakeOutcome(job, journalist)
        judge = await ask_turn(job.turn, lambda text: parse_json_reply(text, JudgeReply),
                               job.attempts_left, providers)
        return UptakeOutcome(job, None, judge)

    def record(self, item: AgentRun, outcome: UptakeOutcome) -> dict[str, Any]:
        if outcome.journalist is None:
            return self._record_judge(item, outcome)
        fields = reply_fields(item, outcome.journalist)
        story: JournalistReply | None = outcome.journalist.reply
        transcript = _transcript(outcome.job.turn.request, outcome.journalist)
        if story is None:
            return fields | {"transcript": transcript}
        result: dict[str, Any] = {"runs_story": story.runs_story, "headline": story.headline,
                                  "opening": story.opening, "reason": story.reason,
                                  "frame_rating": None, "frame_adoption": None}
        if not story.runs_story:
            return fields | {"transcript": transcript, "result": result}
        # The story is kept; the row goes back to pending for its frame judge.
        return fields | given_back() | {
            "transcript": transcript, "outcome": "", "error": "",
            "result": result | {JUDGE_DUE: True, JUDGE_FROM: fields["attempts"]}}

    def retried(self, ids: list[int]) -> None:
        """A retried row whose judge is due counts the judge's budget from the retry: with
        `judge_from` left where the judge first began, the budget came whole only some calls
        late, and the calls in between asked the question afresh instead of repairing."""
        for row in AgentRun.objects.filter(pk__in=ids, result__has_key=JUDGE_FROM):
            AgentRun.objects.filter(pk=row.pk).update(result=row.result | {JUDGE_FROM: 0})

    def _record_judge(self, item: AgentRun, outcome: UptakeOutcome) -> dict[str, Any]:
        judge, turn = outcome.judge, outcome.job.turn
        assert judge is not None
        # A repair turn's conversation is kept already, but for its last turn.
        transcript = list(item.transcript) + _transcript(
            turn.request, judge)[len(turn.request.messages) - 1 if turn.repair else 0:]
        fields: dict[str, Any] = {
            "attempts": item.attempts + judge.attempts, "transcript": transcript,
            "raw_replies": list(item.raw_replies) + [entry | {"call": "frame_judge"}
                                                     for entry in judge.raw_replies],
            **usage_fields(item, judge)}
        if judge.reply is not None:
            result = {key: value for key, value in item.result.items()
                      if key not in (JUDGE_DUE, JUDGE_FROM)}
            result |= {"frame_rating": judge.reply.frame_adoption,
                       "frame_adoption": frame_adoption(judge.reply.frame_adoption)}
            return fields | {"result": result, "status": WorkStatus.DONE,
                             "outcome": ReplyOutcome.SCORED, "error": ""}
        if judge.retry_after is not None:
            # The provider said to wait: the story stays kept, the judge is asked later.
            return fields | parked(judge.retry_after, f"judge: {judge.failure}")
        if judge.attempts_left > 0:
            # Invalid, with calls left: the next claim sends the judge's repair turn.
            why = judge.raw_replies[-1]["invalid"]
            return fields | given_back() | {"outcome": "",
                                             "error": f"judge: last reply invalid: {why}"}
        if judge.failure or not (judge.answered or judge.attempts == 0 and any(
                "text" in entry and entry.get("call") == "frame_judge"
                for entry in item.raw_replies)):
            # A provider error ended the judge's turn, or it had no reply at all: fail the
            # row so an operator can retry; the story stays kept, so only the judge is asked.
            failure = judge.failure or "no attempts left (max_reply_attempts reached earlier)"
            return fields | {"status": WorkStatus.FAILED, "error": f"judge: {failure}",
                             "outcome": ""}
        # The judge's replies never validated: the frame is not measured (never defaulted),
        # so the row is unscored, a gap the publish gate weighs, though the story still
        # measures uptake (`panel_scores`). The story stays kept with the judge due, so an
        # operator's retry asks only the judge.
        invalid = [entry["invalid"] for entry in fields["raw_replies"]
                   if "invalid" in entry and entry.get("call") == "frame_judge"]
        return fields | {"status": WorkStatus.DONE, "outcome": ReplyOutcome.UNSCORED,
                         "error": "judge: no valid reply within max_reply_attempts"
                                  f" ({invalid[-1] if invalid else 'no valid reply'})"}


def _transcript(request: CompletionRequest, asked: Asked) -> list[dict[str, Any]]:
    messages = [{"role": m.role, "content": m.content, "purpose": request.purpose}
                for m in request.messages]
    replies = [{"role": "assistant", "content": entry["text"], "purpose": request.purpose}
               for entry in asked.raw_replies if "text" in entry]
    return messages + replies
