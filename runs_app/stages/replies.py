"""One structured reply with bounded retries, shared by every scoring stage (DESIGN section 5).

A juror, reader or agent answers in JSON that a pydantic schema validates. An invalid reply is
asked for again, at most `attempts_left` times; then the row is unscored, never given a
default score. A row that got no reply at all (only provider errors) fails, so an operator
can retry it. Every raw reply and every error is kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from runs_app.jury import InvalidReply
from runs_app.models import ReplyOutcome, WorkStatus
from runs_app.providers.base import CompletionRequest, CompletionResult, ProviderError
from runs_app.providers.pool import ProviderPool


@dataclasses.dataclass
class Asked:
    attempts: int = 0
    raw_replies: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    reply: Any = None
    failure: str = ""  # why no reply was had: set by provider errors
    permanent: bool = False  # the last provider error can never succeed
    # What every reply cost, invalid ones included: they were paid for too.
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: int = 0  # the replies' own latency, as the provider measured it

    def count(self, result: CompletionResult) -> None:
        self.latency_ms += result.latency_ms
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        self.reasoning_tokens += result.reasoning_tokens
        self.cost_usd += result.cost_usd or 0.0

    @property
    def answered(self) -> bool:
        return any("text" in entry for entry in self.raw_replies)


async def ask_structured(
    request: CompletionRequest, parse: Callable[[str], Any], attempts_left: int,
    providers: ProviderPool,
) -> Asked:
    """Call until `parse` accepts a reply, at most `attempts_left` times.

    `parse` returns the validated reply, or None or raises InvalidReply for an invalid one.
    A transient provider error uses up an attempt; a permanent one stops at once.
    """
    asked = Asked()
    for _ in range(attempts_left):
        asked.attempts += 1
        try:
            result = await providers.complete(request)
        except ProviderError as error:
            asked.raw_replies.append({"error": error.message, "permanent": error.permanent})
            asked.failure = f"{'permanent ' if error.permanent else ''}provider error: " \
                            f"{error.message}"
            asked.permanent = error.permanent
            if error.permanent:
                return asked
            continue
        asked.count(result)
        entry: dict[str, Any] = {"text": result.text, "finish_reason": result.finish_reason,
                                 "generation_id": result.generation_id,
                                 "upstream_provider": result.upstream_provider}
        asked.raw_replies.append(entry)
        if result.finish_reason == "length":
            # Cut off at the token budget: not a whole reply, whatever it parses to.
            entry["invalid"] = "stopped at the token budget (finish_reason: length)"
            continue
        try:
            asked.reply = parse(result.text)
        except InvalidReply as error:
            entry["invalid"] = str(error)
            continue
        if asked.reply is not None:
            asked.failure, asked.permanent = "", False
            return asked
        entry["invalid"] = "the reply did not validate"
    return asked


def usage_fields(item: Any, *asked: Asked) -> dict[str, Any]:
    """The row's usage after these calls: what it counted before plus what they cost."""
    return {
        "prompt_tokens": item.prompt_tokens + sum(a.prompt_tokens for a in asked),
        "completion_tokens": item.completion_tokens + sum(a.completion_tokens for a in asked),
        "reasoning_tokens": item.reasoning_tokens + sum(a.reasoning_tokens for a in asked),
        "cost_usd": (item.cost_usd or 0.0) + sum(a.cost_usd for a in asked),
    }


def reply_fields(item: Any, asked: Asked) -> dict[str, Any]:
    """Status and bookkeeping of a structured-reply row: scored, unscored, or failed."""
    fields: dict[str, Any] = {"attempts": item.attempts + asked.attempts,
                              "raw_replies": list(item.raw_replies) + asked.raw_replies,
                              **usage_fields(item, asked)}
    if asked.reply is not None:
        return fields | {"status": WorkStatus.DONE, "outcome": ReplyOutcome.SCORED, "error": ""}
    # A row re-claimed with no attempts left still counts the replies it got before.
    answered = asked.answered or (
        not asked.attempts and any("text" in entry for entry in item.raw_replies)
    )
    if answered and not asked.permanent:
        invalid = [entry["invalid"] for entry in fields["raw_replies"] if "invalid" in entry]
        reason = invalid[-1] if invalid else "no valid reply"
        return fields | {"status": WorkStatus.DONE, "outcome": ReplyOutcome.UNSCORED,
                         "error": f"no valid reply within max_reply_attempts ({reason})"}
    failure = asked.failure or "no attempts left (max_reply_attempts reached earlier)"
    return fields | {"status": WorkStatus.FAILED, "outcome": "", "error": failure}
