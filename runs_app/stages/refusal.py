"""The refusal stage: did the writer comply, partly comply or refuse? (DESIGN section 2)

One row per finished generation. A classifier model (the release's reader) reads the
assignment and the text, each delimited as data, and answers in JSON. Invalid replies are
retried up to `max_reply_attempts`, then the row is unscored: done, with no verdict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from runs_app.honesty import text_scores_update_honesty
from runs_app.jury import InvalidReply, parse_refusal_reply, refusal_messages
from runs_app.models import Generation, LlmModel, RefusalCheck, Release, ReplyOutcome, WorkStatus
from runs_app.providers.base import CompletionRequest, Message, ProviderError
from runs_app.providers.pool import ProviderPool
from runs_app.stages.base import Stage

# Replies are short JSON objects; a generous budget leaves room for reasoning models.
REPLY_MAX_TOKENS = 4000


@dataclasses.dataclass(frozen=True)
class ReplyJob:
    request: CompletionRequest
    attempts_left: int
    # raw reply -> validated reply; raises InvalidReply.
    parse: Callable[[str], Any]


@dataclasses.dataclass
class ReplyOutcomeData:
    """What the calls for one structured reply came to."""

    attempts: int = 0
    raw_replies: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    reply: Any = None
    failure: str = ""  # set when no reply could be had at all (provider errors)

    @property
    def answered(self) -> bool:
        return any(entry.get("text") is not None for entry in self.raw_replies)


async def ask_for_reply(job: ReplyJob, providers: ProviderPool) -> ReplyOutcomeData:
    """Call until a reply validates, at most `attempts_left` times (DESIGN section 5).

    A transient provider error uses up an attempt; a permanent one ends the row as failed.
    Every raw reply (and every error) is kept.
    """
    outcome = ReplyOutcomeData()
    for _ in range(job.attempts_left):
        outcome.attempts += 1
        try:
            result = await providers.complete(job.request)
        except ProviderError as error:
            outcome.raw_replies.append({"error": error.message, "permanent": error.permanent})
            if error.permanent:
                outcome.failure = f"permanent provider error: {error.message}"
                return outcome
            outcome.failure = f"provider error: {error.message}"
            continue
        entry: dict[str, Any] = {"text": result.text, "generation_id": result.generation_id,
                                 "upstream_provider": result.upstream_provider}
        outcome.raw_replies.append(entry)
        try:
            outcome.reply = job.parse(result.text)
        except InvalidReply as error:
            entry["invalid"] = str(error)
            continue
        outcome.failure = ""
        return outcome
    if not outcome.attempts:
        outcome.failure = "no attempts left (max_reply_attempts reached earlier)"
    return outcome


def reply_fields(item: Any, outcome: ReplyOutcomeData) -> dict[str, Any]:
    """The fields every structured-reply row shares: attempts, raw replies, status, outcome.

    No reply at all (only provider errors) is a failure an operator can retry; replies that
    never validated make the row unscored, never a default score.
    """
    fields: dict[str, Any] = {
        "attempts": item.attempts + outcome.attempts,
        "raw_replies": list(item.raw_replies) + outcome.raw_replies,
    }
    if outcome.reply is not None:
        return fields | {"status": WorkStatus.DONE, "outcome": ReplyOutcome.SCORED, "error": ""}
    if outcome.answered and not outcome.failure.startswith("permanent"):
        return fields | {"status": WorkStatus.DONE, "outcome": ReplyOutcome.UNSCORED,
                         "error": outcome.raw_replies[-1].get("invalid", outcome.failure)}
    return fields | {"status": WorkStatus.FAILED, "outcome": "", "error": outcome.failure}


class RefusalStage(Stage):
    name = "refusal"
    work_model = RefusalCheck
    after = ("generate",)
    claim_related = ("release", "generation")

    def plan(self, release: Release) -> int:
        config = release.parsed_config()
        judge = LlmModel.objects.get(openrouter_id=config.reader)
        before = RefusalCheck.objects.filter(release=release).count()
        finished = Generation.objects.filter(release=release, status=WorkStatus.DONE)
        RefusalCheck.objects.bulk_create(
            (RefusalCheck(release=release, generation_id=generation_id, judge=judge)
             for generation_id in finished.values_list("pk", flat=True)),
            ignore_conflicts=True, batch_size=500,
        )
        return RefusalCheck.objects.filter(release=release).count() - before

    def build(self, item: RefusalCheck) -> ReplyJob:
        config = item.release.parsed_config()
        generation = item.generation
        messages = refusal_messages(assignment=generation.prompt, text=generation.text,
                                    text_id=str(generation.pk))
        request = CompletionRequest(
            model=config.reader, messages=tuple(Message(*pair) for pair in messages),
            max_tokens=REPLY_MAX_TOKENS, temperature=0.0, json_mode=True, purpose="refusal",
        )
        return ReplyJob(request, max(0, config.max_reply_attempts - item.attempts),
                        parse_refusal_reply)

    async def execute(self, job: ReplyJob, providers: ProviderPool) -> ReplyOutcomeData:
        return await ask_for_reply(job, providers)

    def record(self, item: RefusalCheck, outcome: ReplyOutcomeData) -> dict[str, Any]:
        fields = reply_fields(item, outcome)
        reply = outcome.reply
        fields |= {"verdict": reply.verdict if reply else "",
                   "reason": reply.reason if reply else ""}
        return fields

    def settle(self, release: Release) -> None:
        # Refused texts get null honesty; once per drain, not once per row.
        text_scores_update_honesty(release=release)
