"""One structured reply with bounded retries, shared by every scoring stage (DESIGN section 5).

A juror, reader or agent answers in JSON that a pydantic schema validates (read by
`runs_app.reply_reader`), one call per claim (`ask_turn`). An invalid reply gets a repair turn
that quotes what was wrong, at most `attempts_left` calls in all; then the row is unscored,
never given a default score. A row that got no reply at all (only provider errors) fails, so
an operator can retry it. Every raw reply and every error is kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from runs_app.costs import estimated_cost
from runs_app.models import ReplyOutcome, WorkStatus
from runs_app.providers.base import (
    CompletionRequest,
    CompletionResult,
    Message,
    ProviderError,
)
from runs_app.providers.pool import ProviderPool
from runs_app.reply_reader import as_reasoning, repair_prompt
from runs_app.stages.base import given_back, parked


@dataclasses.dataclass
class Asked:
    attempts: int = 0
    raw_replies: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    reply: Any = None
    failure: str = ""  # why no reply was had: set by provider errors
    permanent: bool = False  # the last provider error can never succeed
    # Seconds the provider said to wait, longer than a call waits: the row is parked.
    retry_after: float | None = None
    # What every reply cost, invalid ones included: they were paid for too.
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: int = 0  # the replies' own latency, as the provider measured it
    model: str = ""
    # (prompt, completion) tokens of the replies that reported no cost: estimated when the
    # row is written (`usage_fields`), from the models list's prices.
    unpriced: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    # Calls the row may still make after an invalid reply (`ask_turn`): it is given back.
    attempts_left: int = 0

    def count(self, result: CompletionResult) -> None:
        self.latency_ms += result.latency_ms
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        self.reasoning_tokens += result.reasoning_tokens
        if result.cost_usd is None:
            # What failed attempts before it reported is known; only the rest is estimated.
            self.unpriced.append(result.unpriced_tokens)
            self.cost_usd += result.priced_usd
        else:
            self.cost_usd += result.cost_usd

    def estimated_cost(self) -> float:
        return sum(estimated_cost(self.model, prompt, completion)
                   for prompt, completion in self.unpriced)

    @property
    def answered(self) -> bool:
        return any("text" in entry for entry in self.raw_replies)


def provider_failed(asked: Asked, error: ProviderError) -> Asked:
    """`asked` ended by a provider error, the one rule for every stage's calls: no call after
    it (the provider has retried a transient one already); a throttled call (`retry_after`)
    made no model call, uses up no attempt and parks its row until the wait is over. What
    the failed call billed (`error.paid`) is counted: paid means recorded."""
    entry: dict[str, Any] = {"error": error.message, "permanent": error.permanent}
    if error.paid is not None:
        asked.count(error.paid)
        entry["cost_usd"] = error.paid.cost_usd
    asked.raw_replies.append(entry)
    asked.failure = f"{'permanent ' if error.permanent else ''}provider error: {error.message}"
    asked.permanent = error.permanent
    if error.retry_after is not None:
        asked.attempts -= 1
        asked.retry_after = error.retry_after
    return asked


async def ask_turn(turn: Turn, parse: Callable[[str], Any], attempts_left: int,
                   providers: ProviderPool) -> Asked:
    """One call of a row's question per claim (`next_turn` made it from what the row kept):
    its reply is written as soon as it returns. An invalid one with attempts left gives the
    row back (`reply_fields`), and the next claim, by whichever worker, sends its repair
    turn (the reply, then a user turn quoting what was wrong: asked the identical question
    again, a model at temperature 0 answers the same): a worker killed during a repair turn
    has lost no reply it was paid for, and the question is never asked again (DESIGN
    section 5).

    `parse` returns the validated reply, or None or raises for an invalid one: any exception
    it raises is an invalid reply, never a crash of the drain. A provider error ends the
    row's asking: the provider has already retried a transient one (with backoff,
    `max_retries`), and asking again here would multiply its retries by the reply attempts.
    The row then fails (an operator retries it), or, when the provider said to wait longer
    than a call waits, is parked (`retry_after`); that throttled call made no model call and
    uses up no attempt."""
    asked = Asked(model=turn.request.model)
    if attempts_left > 0 and not await _call(asked, turn.request, parse, providers,
                                             repair_turn=turn.repair):
        asked.attempts_left = attempts_left - asked.attempts
    return asked


@dataclasses.dataclass(frozen=True)
class Turn:
    request: CompletionRequest
    repair: bool = False  # a repair turn of the row's last reply


@dataclasses.dataclass(frozen=True)
class Kept:
    """What `next_turn` reads of a row, for one of a row's several questions (an uptake row's
    frame judge, an interview turn's question): the attempts its budget has paid for and
    their replies."""

    attempts: int
    raw_replies: list[dict[str, Any]]


def next_turn(request: CompletionRequest, item: Any) -> Turn:
    """A row's next call (`item`: the row, or a `Kept` part of it): its question, or, when
    the last reply its current budget got was invalid, the repair turn of that reply. Only
    within the budget: an operator's retry (`attempts` back to 0) asks the question afresh.
    A provider error's entry (no text) is passed over: a throttled row asks what it would
    have asked."""
    if item.attempts:
        last = next((entry for entry in reversed(item.raw_replies) if "text" in entry), None)
        if last is not None and "invalid" in last:
            return Turn(repair_request(request, last["text"], last["invalid"]), repair=True)
    return Turn(request)


async def _call(asked: Asked, request: CompletionRequest, parse: Callable[[str], Any],
                providers: ProviderPool, *, repair_turn: bool = False) -> bool:
    """One call, counted and kept in `asked`: True when it ended the asking (a valid reply,
    a provider error), False for an invalid reply (its entry says why)."""
    asked.attempts += 1
    try:
        result = await providers.complete(request)
    except ProviderError as error:
        provider_failed(asked, error)
        return True
    asked.count(result)
    entry = raw_entry(result, repair_turn=repair_turn)
    asked.raw_replies.append(entry)
    asked.reply, reason = _read(result, parse)
    if asked.reply is not None:
        if not result.text.strip():
            entry["answer_in_reasoning"] = True
        asked.failure, asked.permanent = "", False
        return True
    entry["invalid"] = reason
    return False


def _read(result: CompletionResult, parse: Callable[[str], Any]) -> tuple[Any, str]:
    """(the validated reply, "") or (None, why the reply is invalid).

    A JSON reply whose content is empty while its reasoning field is not (OpenRouter's
    json_object mode with some reasoning models puts the whole answer there) is read from
    the reasoning, under the reader's rule for reasoning: every object in it must validate
    to the same answer. Never when the content holds anything: a draft in the reasoning is
    not the answer the content gives."""
    if result.finish_reason == "length":
        # Cut off at the token budget: not a whole reply, whatever it parses to.
        return None, "it stopped at the token budget (finish_reason: length); answer shorter"
    if result.refusal and not result.text.strip():
        return None, f"it is a refusal ({_short(result.refusal)}), not the JSON asked for"
    text = result.text
    if not text.strip() and result.reasoning.strip():
        text = as_reasoning(result.reasoning)
    try:
        reply = parse(text)
    except RecursionError:
        return None, "the JSON is nested too deeply to read"
    except Exception as error:  # noqa: BLE001 - every failure to read is an invalid reply
        return None, str(error) or type(error).__name__
    return (reply, "") if reply is not None else (None, "the reply did not validate")


def raw_entry(result: CompletionResult, *, repair_turn: bool = False) -> dict[str, Any]:
    """What is kept of one reply: its text and everything the provider said about it."""
    entry: dict[str, Any] = {"text": result.text, "finish_reason": result.finish_reason,
                             "generation_id": result.generation_id,
                             "upstream_provider": result.upstream_provider}
    extras = {"native_finish_reason": result.native_finish_reason,
              "served_model": result.served_model,
              "system_fingerprint": result.system_fingerprint,
              "reasoning": result.reasoning, "refusal": result.refusal,
              "cached_tokens": result.cached_tokens, "http_attempts": result.http_attempts,
              "cost_usd": result.cost_usd, "cost_estimated": result.cost_estimated or None,
              "repair_turn": repair_turn or None}
    entry.update({key: value for key, value in extras.items() if value})
    return entry


REPAIR_QUOTE_CHARS = 4000


def repair_request(request: CompletionRequest, reply: str, reason: str) -> CompletionRequest:
    """The original conversation, the invalid reply (shortened) and a turn saying what was
    wrong with it."""
    turns = list(request.messages)
    if reply.strip():
        turns.append(Message("assistant", reply[:REPAIR_QUOTE_CHARS]))
    turns.append(Message("user", repair_prompt(reason)))
    return dataclasses.replace(request, messages=tuple(turns))


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def usage_fields(item: Any, *asked: Asked) -> dict[str, Any]:
    """The row's usage after these calls: what it counted before plus what they cost."""
    return {
        "prompt_tokens": item.prompt_tokens + sum(a.prompt_tokens for a in asked),
        "completion_tokens": item.completion_tokens + sum(a.completion_tokens for a in asked),
        "reasoning_tokens": item.reasoning_tokens + sum(a.reasoning_tokens for a in asked),
        "cost_usd": (item.cost_usd or 0.0) + sum(a.cost_usd + a.estimated_cost() for a in asked),
        "cost_estimated": item.cost_estimated or any(a.unpriced for a in asked),
    }


def reply_fields(item: Any, asked: Asked) -> dict[str, Any]:
    """Status and bookkeeping of a structured-reply row: scored, unscored, or failed."""
    fields: dict[str, Any] = {"attempts": item.attempts + asked.attempts,
                              "raw_replies": list(item.raw_replies) + asked.raw_replies,
                              **usage_fields(item, asked)}
    if asked.reply is not None:
        return fields | {"status": WorkStatus.DONE, "outcome": ReplyOutcome.SCORED, "error": ""}
    if asked.retry_after is not None:
        return fields | parked(asked.retry_after, asked.failure)
    if asked.attempts_left > 0:
        # Invalid, with calls left (`ask_turn`): the next claim sends the repair turn.
        why = asked.raw_replies[-1]["invalid"]
        return fields | given_back() | {"outcome": "", "error": f"last reply invalid: {why}"}
    # A row re-claimed with no attempts left still counts the replies it got before.
    answered = asked.answered or (
        not asked.attempts and any("text" in entry for entry in item.raw_replies)
    )
    # Unscored only when the replies used up the budget: a provider error ended this claim's
    # calls early, so the row fails instead and an operator's retry asks again.
    if answered and not asked.failure:
        invalid = [entry["invalid"] for entry in fields["raw_replies"] if "invalid" in entry]
        reason = invalid[-1] if invalid else "no valid reply"
        return fields | {"status": WorkStatus.DONE, "outcome": ReplyOutcome.UNSCORED,
                         "error": f"no valid reply within max_reply_attempts ({reason})"}
    failure = asked.failure or "no attempts left (max_reply_attempts reached earlier)"
    return fields | {"status": WorkStatus.FAILED, "outcome": "", "error": failure}
