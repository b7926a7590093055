"""The refusal stage: did the writer comply, partly comply or refuse? (DESIGN section 2)

One row per finished generation. A classifier model (the release's reader) reads the
assignment and the text, each embedded as data, and answers in JSON (its instructions are
the release's scoring version). A text whose provider reported a refusal (the refusal field,
a content filter) is refused without a call. Invalid replies are
retried up to `max_reply_attempts`, then the row is unscored: done, with no verdict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any

from django.db.models import Q

from runs_app.call_kinds import call_request
from runs_app.honesty import text_scores_update_honesty
from runs_app.jury import RefusalReply, parse_refusal_reply, refusal_messages
from runs_app.models import (
    Generation,
    LlmModel,
    RefusalCheck,
    Release,
    ReplyOutcome,
    ScoringVersion,
    WorkStatus,
)
from runs_app.providers.base import Message
from runs_app.providers.pool import ProviderPool
from runs_app.stages.base import Stage
from runs_app.stages.replies import Asked, Turn, ask_turn, next_turn, reply_fields


@dataclasses.dataclass(frozen=True)
class ReplyJob:
    turn: Turn  # the row's next call (`next_turn`)
    attempts_left: int
    # raw reply -> validated reply; raises InvalidReply.
    parse: Callable[[str], Any]
    # The verdict is known without a call: the provider reported the writer's refusal.
    known: Any = None


class RefusalStage(Stage):
    name = "refusal"
    work_model = RefusalCheck
    answered_by = "judge__openrouter_id"
    role = "reader"  # the release's reader classifies refusals
    claim_related = ("generation",)
    # The prompt and the text are read; a writer's reasoning (often longer than its text) and
    # what was stripped off its reply are not.
    claim_defer = ("generation__reasoning", "generation__stripped")

    def refused_filter(self) -> Q:
        # A verdict that the text is refused: a result, counted in the refusal rate.
        return Q(status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
                 verdict=RefusalCheck.Verdict.REFUSED)

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        finished = Generation.objects.filter(release=release, status=WorkStatus.DONE)
        if generation_ids is not None:
            finished = finished.filter(pk__in=generation_ids)
        texts = list(finished.values_list("pk", flat=True))
        if not texts:
            return 0
        judge = LlmModel.objects.get(openrouter_id=self.config(release.pk).reader)
        return self.create_rows(release, (
            RefusalCheck(release=release, generation_id=generation_id, judge=judge)
            for generation_id in texts
        ), generation_ids)

    def planned_calls(self, config) -> int:
        return config.texts

    def build(self, item: RefusalCheck) -> ReplyJob:
        config = self.config(item.release_id)
        generation = item.generation
        jury = ScoringVersion.texts_for_pin(config.scoring_version).jury
        messages = refusal_messages(jury=jury, assignment=generation.prompt,
                                    text=generation.text)
        request = call_request("refusal", config=config, model=config.reader,
                               messages=(Message(*pair) for pair in messages))
        known = None
        if generation.writer_refusal:
            # The refusal field or a content filter: the writer refused, in its own words.
            known = RefusalReply(verdict="refused", reason="the provider reported a refusal: "
                                 + generation.writer_refusal[:500])
        return ReplyJob(next_turn(request, item),
                        max(0, config.max_reply_attempts - item.attempts),
                        parse_refusal_reply, known)

    async def execute(self, job: ReplyJob, providers: ProviderPool) -> Asked:
        if job.known is not None:
            return Asked(reply=job.known, model=job.turn.request.model)
        return await ask_turn(job.turn, job.parse, job.attempts_left, providers)

    def record(self, item: RefusalCheck, outcome: Asked) -> dict[str, Any]:
        fields = reply_fields(item, outcome)
        reply = outcome.reply
        fields |= {"verdict": reply.verdict if reply else "",
                   "reason": reply.reason if reply else ""}
        return fields

    def settle(self, release: Release) -> None:
        # Refused texts get null honesty; once per drain, not once per row.
        text_scores_update_honesty(release=release)
