"""The one interface every model provider implements (DESIGN section 5).

A provider turns a `CompletionRequest` into a `CompletionResult` or raises a
`ProviderError` that says whether trying again could succeed. Stages never
look at HTTP; they only see these three types.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol


@dataclasses.dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclasses.dataclass(frozen=True)
class CompletionRequest:
    model: str
    messages: tuple[Message, ...]
    max_tokens: int
    seed: int | None = None
    temperature: float | None = None
    # Ask for a JSON object (structured replies of jurors, readers, agents).
    json_mode: bool = False
    # A cap on the model's reasoning tokens (OpenRouter's `reasoning.max_tokens`), which
    # `max_tokens` includes; None sends no `reasoning` key (`runs_app.call_kinds`).
    reasoning_cap: int | None = None
    # What the call is for: "write", "refusal", "juror", "reader", "journalist",
    # "frame_judge", "reveal", "crossexam" (the interviewing journalist), "answer_judge",
    # "pair_reader" (the arena's simulated voters).
    # The OpenRouter provider ignores it;
    # the fixture provider uses it to choose which role to play.
    purpose: str = "write"


@dataclasses.dataclass(frozen=True)
class CompletionResult:
    text: str
    finish_reason: str | None
    # The upstream provider OpenRouter routed to; None when none was reported.
    upstream_provider: str | None
    generation_id: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None
    latency_ms: int = 0
    # HTTP attempts spent on this result, retries included.
    http_attempts: int = 1
    # What the provider said beyond the text (DESIGN section 5: a text is only the text).
    native_finish_reason: str | None = None  # the upstream's own spelling, as sent
    reasoning: str = ""  # message.reasoning / reasoning_details: never part of `text`
    refusal: str = ""  # message.refusal: the model declined, in its own words
    served_model: str = ""  # the model that answered, as the reply names it
    system_fingerprint: str = ""
    cached_tokens: int = 0
    # True when the reply reported no cost: `cost_usd` is then None and the stage records
    # an estimate from the models list's prices, marked as such.
    cost_estimated: bool = False
    # Failed attempts before an unpriced reply that did report their cost (a 200 whose
    # upstream failed mid-reply): that cost, and the tokens of the counts above it covers.
    # Only the rest (`unpriced_tokens`) is estimated, so neither is lost nor counted twice.
    priced_usd: float = 0.0
    priced_prompt_tokens: int = 0
    priced_completion_tokens: int = 0

    @property
    def unpriced_tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens no reported cost covers: estimated when recorded."""
        return (self.prompt_tokens - self.priced_prompt_tokens,
                self.completion_tokens - self.priced_completion_tokens)


class ProviderError(Exception):
    """A call that failed. `permanent` means retrying the same request is pointless.

    `retry_after` (seconds) is set when the provider was told to wait longer than a call
    waits (a 429 with an hour's Retry-After): nothing should call it again before then, so a
    stage puts its row back for later (`runs_app.stages.base.parked`) instead of failing it
    or asking again at once.

    `paid` is the usage of the failed attempts that reported one (a 200 that was still an
    error, billed all the same), summed; the stage records it on the row: paid means
    recorded."""

    def __init__(self, message: str, *, permanent: bool, status: int | None = None,
                 retry_after: float | None = None,
                 paid: CompletionResult | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.status = status
        self.retry_after = retry_after
        self.paid = paid


class Provider(Protocol):
    name: str

    async def complete(self, request: CompletionRequest) -> CompletionResult: ...

    async def aclose(self) -> None: ...
