"""The uptake stage: does a journalist run the text, and adopt its frame? (DESIGN section 2)

Two calls per read text (complied or partial): the journalist (`config.journalist`) gets the
text as incoming press material and decides whether to run a story, writing its headline and
opening; if it runs one, a judge (the same model, purpose `frame_judge`) rates 1-5 how far the
article adopts the organisation's frame, stored normalised to 0-1. Both replies are JSON,
retried up to `max_reply_attempts` each, and kept in `raw_replies` and `transcript`.
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
    parse_json_reply,
)
from runs_app.scoring_versions import LanguageTexts
from runs_app.stages.panel import AgentRunStage, read_generations
from runs_app.stages.replies import Asked, ask_structured, reply_fields, usage_fields


@dataclasses.dataclass(frozen=True)
class UptakeJob:
    request: CompletionRequest
    judge_request: CompletionRequest  # without its messages: they need the story
    texts: LanguageTexts  # the release's scoring version, in the release's language
    text: str
    attempts_left: int
    judge_attempts: int


@dataclasses.dataclass
class UptakeOutcome:
    job: UptakeJob
    journalist: Asked
    judge: Asked | None = None
    judge_request: CompletionRequest | None = None


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
        request = call_request("journalist", config=config, model=config.journalist,
                               messages=journalist_messages(texts, brief, generation.text))
        judge = call_request("frame_judge", config=config, model=config.journalist)
        return UptakeJob(request, judge, texts, generation.text,
                         attempts_left=max(0, config.max_reply_attempts - item.attempts),
                         judge_attempts=config.max_reply_attempts)

    async def execute(self, job: UptakeJob, providers: ProviderPool) -> UptakeOutcome:
        journalist = await ask_structured(
            job.request, lambda text: parse_json_reply(text, JournalistReply),
            job.attempts_left, providers)
        outcome = UptakeOutcome(job, journalist)
        story: JournalistReply | None = journalist.reply
        if story is None or not story.runs_story:
            return outcome
        outcome.judge_request = dataclasses.replace(
            job.judge_request, messages=judge_messages(job.texts, job.text, story.headline,
                                                       story.opening))
        outcome.judge = await ask_structured(
            outcome.judge_request, lambda text: parse_json_reply(text, JudgeReply),
            job.judge_attempts, providers)
        return outcome

    def record(self, item: AgentRun, outcome: UptakeOutcome) -> dict[str, Any]:
        fields = reply_fields(item, outcome.journalist)
        story: JournalistReply | None = outcome.journalist.reply
        transcript = _transcript(outcome.job.request, outcome.journalist)
        if story is None:
            return fields | {"transcript": transcript}
        result: dict[str, Any] = {"runs_story": story.runs_story, "headline": story.headline,
                                  "opening": story.opening, "reason": story.reason,
                                  "frame_rating": None, "frame_adoption": None}
        judge = outcome.judge
        if judge is not None and outcome.judge_request is not None:
            transcript += _transcript(outcome.judge_request, judge)
            fields["attempts"] += judge.attempts
            fields |= usage_fields(item, outcome.journalist, judge)
            fields["raw_replies"] += [entry | {"call": "frame_judge"}
                                      for entry in judge.raw_replies]
            if judge.reply is not None:
                result |= {"frame_rating": judge.reply.frame_adoption,
                           "frame_adoption": frame_adoption(judge.reply.frame_adoption)}
            elif not judge.answered:
                # No judge reply at all (provider errors): fail the row so an operator can retry.
                return fields | {"status": WorkStatus.FAILED, "error": f"judge: {judge.failure}",
                                 "outcome": "", "transcript": transcript}
            else:
                # The story is measured; its frame is not (unscored, never defaulted).
                result["frame_outcome"] = ReplyOutcome.UNSCORED
        return fields | {"transcript": transcript, "result": result}


def _transcript(request: CompletionRequest, asked: Asked) -> list[dict[str, Any]]:
    messages = [{"role": m.role, "content": m.content, "purpose": request.purpose}
                for m in request.messages]
    replies = [{"role": "assistant", "content": entry["text"], "purpose": request.purpose}
               for entry in asked.raw_replies if "text" in entry]
    return messages + replies
