"""The OpenRouter provider: chat completions over httpx (DESIGN section 5).

A few small `httpx.AsyncClient`s per provider, at most `concurrency` requests in flight,
and every failure classified as permanent (the same request can never succeed:
a bad request, a bad key, no credits) or transient (rate limits, upstream
outages, timeouts), which is retried with jittered exponential backoff.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import functools
import logging
import math
import os
import random
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx

from runs_app.providers.base import CompletionRequest, CompletionResult, ProviderError

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
# Rate limits and "no provider available right now": the server may say how long to wait.
THROTTLE_STATUSES = frozenset({429, 503})
ERROR_DETAIL_LIMIT = 300

Sleep = Callable[[float], Awaitable[None]]


class _AttemptFailed(Exception):
    """One HTTP attempt failed; `permanent` decides whether the loop tries again."""

    def __init__(
        self,
        detail: str,
        *,
        status: int | None,
        permanent: bool,
        retry_after: float | None = None,
        paid: CompletionResult | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.permanent = permanent
        self.retry_after = retry_after
        # A 200 that is still an error may report usage: what that attempt was billed.
        self.paid = paid


class OpenRouterProvider:
    name = "openrouter"

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 50,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
        max_retries: int = 5,
        backoff_base: float = 1.0,
        backoff_cap: float = 60.0,
        max_retry_after: float = 600.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        base_url = base_url or os.environ.get("OPENROUTER_BASE_URL") or DEFAULT_BASE_URL
        self.base_url = base_url.rstrip("/")
        # Kept private and out of __repr__: the key must never reach a log or a traceback.
        # Stripped: a key read from a secret file often ends in a newline, which httpx refuses.
        key = api_key if api_key is not None else os.environ.get("OPENROUTER_API_KEY")
        self._api_key = key.strip() if key else key
        self.concurrency = concurrency
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        # A Retry-After longer than this (a daily quota, say) is not worth sleeping through:
        # the work row's claim would expire while we wait, so give up and let it be drained later.
        self.max_retry_after = max_retry_after
        # Model id -> monotonic time before which the provider told us not to call it again
        # (a Retry-After above max_retry_after): other calls of that model fail at once
        # instead of each drawing its own 429.
        self._throttled_until: dict[str, float] = {}
        # Replaceable so tests record the waits instead of sleeping through them.
        self.sleep: Sleep = asyncio.sleep
        self._shards: _Shards | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return (
            f"OpenRouterProvider(base_url={self.base_url!r}, concurrency={self.concurrency}, "
            f"api_key={'set' if self._api_key else 'missing'})"
        )

    async def complete(self, request: CompletionRequest) -> CompletionResult:
        if not self._api_key:
            raise ProviderError(
                "OPENROUTER_API_KEY is not set: the openrouter provider cannot call any model",
                permanent=True,
            )
        self._raise_if_throttled(request)
        body = request_body(request)
        attempt = 1
        paid: list[CompletionResult] = []  # failed attempts that reported usage
        while True:
            try:
                return with_paid_attempts(await self._attempt(body, attempt), paid)
            except _AttemptFailed as caught:
                failure = caught
            if failure.paid is not None:
                paid.append(failure.paid)
            # Raised outside the `except`, so the unredacted failure is not kept as the
            # ProviderError's __context__ (an upstream message may echo the key).
            if failure.permanent or attempt > self.max_retries:
                raise self._provider_error(request, failure, attempt, paid)
            await self._wait_before_retry(request, failure, attempt, paid)
            attempt += 1

    def _raise_if_throttled(self, request: CompletionRequest) -> None:
        until = self._throttled_until.get(request.model)
        if until is None:
            return
        left = until - time.monotonic()
        if left <= 0:
            del self._throttled_until[request.model]
            return
        raise ProviderError(
            f"openrouter {request.model}: rate limited: not called again for another "
            f"{left:.0f}s (the provider's Retry-After)", permanent=False, status=429,
            retry_after=left)

    async def aclose(self) -> None:
        # A client made in a loop that has since closed cannot be closed from this one;
        # its sockets went away with that loop, so dropping it is all there is to do.
        if self._shards is not None and self._loop is asyncio.get_running_loop():
            await self._shards.aclose()
        self._shards = None
        self._loop = None

    async def _attempt(self, body: dict[str, Any], attempt: int) -> CompletionResult:
        # latency_ms is the successful exchange alone; time lost to retries shows in
        # http_attempts, and backoff sleeps are ours, not the model's.
        shards = self._shards_for_running_loop()
        # A slot guards one HTTP exchange, not the backoff sleep: a call waiting out a rate
        # limit should not hold a slot that another call could use.
        client = await shards.acquire()
        try:
            started = time.monotonic()
            response = await self._post(client, body)
            latency_ms = round((time.monotonic() - started) * 1000)
        finally:
            shards.release(client)
        result = parse_response(response, latency_ms=latency_ms, http_attempts=attempt)
        if result.cost_estimated and not (result.prompt_tokens or result.completion_tokens):
            result = with_estimated_tokens(result, body)
        return result

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
        try:
            return await client.post(f"{self.base_url}/chat/completions", json=body)
        except httpx.UnsupportedProtocol as exc:
            # A misconfigured OPENROUTER_BASE_URL does not heal by waiting.
            raise _AttemptFailed(f"bad base URL: {exc}", status=None, permanent=True) from None
        except httpx.LocalProtocolError:
            # The request cannot be sent as given (h11 rejects a header, e.g. a key with a
            # line break). Its message quotes the header value, key included: keep it out.
            raise _AttemptFailed("the request could not be sent (an invalid header value; "
                                 "check OPENROUTER_API_KEY)", status=None,
                                 permanent=True) from None
        except httpx.TimeoutException as exc:
            raise _AttemptFailed(f"{type(exc).__name__} (no reply in time)", status=None,
                                 permanent=False) from None
        except httpx.RequestError as exc:
            raise _AttemptFailed(f"{type(exc).__name__}: {exc}", status=None,
                                 permanent=False) from None

    def _shards_for_running_loop(self) -> _Shards:
        # The clients' connections and their slots belong to one event loop. A task runner
        # that calls asyncio.run() per batch gets fresh ones for each new loop; the old
        # clients' sockets went away with their loop.
        loop = asyncio.get_running_loop()
        if self._shards is None or self._loop is not loop:
            self._shards = _Shards(self.concurrency, self._new_client)
            self._loop = loop
        return self._shards

    def _new_client(self, connections: int) -> httpx.AsyncClient:
        timeout = httpx.Timeout(
            connect=self.connect_timeout,
            read=self.read_timeout,
            write=self.connect_timeout,
            pool=self.connect_timeout,
        )
        limits = httpx.Limits(max_connections=connections,
                              max_keepalive_connections=connections)
        # trust_env=False: a proxy variable in a worker's environment must not silently
        # reroute (and possibly log) calls that carry the API key.
        headers = {"Authorization": f"Bearer {self._api_key}", "X-Title": "BaitBench"}
        return httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False,
                                 verify=tls_context(), headers=headers)

    async def _wait_before_retry(
        self, request: CompletionRequest, failure: _AttemptFailed, attempt: int,
        paid: list[CompletionResult],
    ) -> None:
        if failure.retry_after is not None and failure.retry_after > self.max_retry_after:
            # Too long to sleep through (the row's claim would expire): give up now, without
            # calling again, and say when the model may be called (DESIGN section 5).
            failure.detail += f" (Retry-After {failure.retry_after:.0f}s is too long to wait)"
            self._throttled_until[request.model] = time.monotonic() + failure.retry_after
            error = self._provider_error(request, failure, attempt, paid)
            error.retry_after = failure.retry_after
            raise error
        delay = self._backoff_delay(attempt, failure.retry_after)
        logger.warning(
            "openrouter %s: attempt %d failed (%s); retrying in %.1fs",
            request.model, attempt, self._redact(failure.detail), delay,
        )
        await self.sleep(delay)

    def _backoff_delay(self, attempt: int, retry_after: float | None) -> float:
        # "Equal jitter": half the exponential step fixed, half random, so a burst of
        # calls that failed together does not come back together.
        step = min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1))
        delay = step / 2 + random.uniform(0, step / 2)
        # The server's Retry-After is a floor, never shortened by jitter.
        return max(delay, retry_after or 0.0)

    def _provider_error(
        self, request: CompletionRequest, failure: _AttemptFailed, attempts: int,
        paid: list[CompletionResult],
    ) -> ProviderError:
        status = f"HTTP {failure.status}" if failure.status is not None else "no HTTP status"
        message = (
            f"openrouter {request.model}: {status}: {self._redact(failure.detail)} "
            f"(after {attempts} attempt{'s' if attempts != 1 else ''})"
        )
        # What the failed attempts billed goes with the error (paid means recorded).
        billed = with_paid_attempts(paid[-1], paid[:-1]) if paid else None
        return ProviderError(message, permanent=failure.permanent, status=failure.status,
                             paid=billed)

    def _redact(self, text: str) -> str:
        # Upstream messages are echoed into our errors; make sure none of them carries the key.
        if self._api_key and self._api_key in text:
            return text.replace(self._api_key, "[redacted]")
        return text


# Tokens are about four characters (preflight's estimate uses the same rule).
CHARS_PER_TOKEN = 4


def with_estimated_tokens(result: CompletionResult, body: dict[str, Any]) -> CompletionResult:
    """A reply without a usage block still used tokens: estimated from the characters sent
    and received, so that its cost can be estimated (and is marked so)."""
    sent = sum(len(str(message.get("content") or "")) for message in body["messages"])
    received = len(result.text) + len(result.reasoning) + len(result.refusal)
    return dataclasses.replace(result, prompt_tokens=math.ceil(sent / CHARS_PER_TOKEN),
                               completion_tokens=math.ceil(received / CHARS_PER_TOKEN))


def with_paid_attempts(result: CompletionResult,
                       paid: list[CompletionResult]) -> CompletionResult:
    """The result with the usage of the failed attempts before it that reported one (a 200
    whose upstream failed mid-reply bills what it generated): paid means recorded."""
    if not paid:
        return result
    priced = [attempt for attempt in paid if attempt.cost_usd is not None]
    combined = dataclasses.replace(
        result,
        prompt_tokens=result.prompt_tokens + sum(a.prompt_tokens for a in paid),
        completion_tokens=result.completion_tokens + sum(a.completion_tokens for a in paid),
        reasoning_tokens=result.reasoning_tokens + sum(a.reasoning_tokens for a in paid))
    if result.cost_usd is not None:
        return dataclasses.replace(
            combined, cost_usd=result.cost_usd + sum(a.cost_usd or 0.0 for a in priced))
    # A reply that reported no cost was paid for all the same: it stays unpriced (None,
    # estimated when recorded), with what the failed attempts did report kept apart. Summing
    # their costs into `cost_usd` recorded them as the call's exact cost and dropped the
    # reply's own (found by the faults tryout).
    return dataclasses.replace(
        combined, cost_usd=None, cost_estimated=True,
        priced_usd=sum(a.cost_usd or 0.0 for a in priced),
        priced_prompt_tokens=sum(a.prompt_tokens for a in priced),
        priced_completion_tokens=sum(a.completion_tokens for a in priced))


def request_body(request: CompletionRequest) -> dict[str, Any]:
    """The JSON body of a chat completion. A `reasoning` key only with a reasoning cap
    (a reasoning model's structured reply, `runs_app.call_kinds`): writers keep their own
    reasoning default (DESIGN section 5), paid for by the caller's max_tokens."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "max_tokens": request.max_tokens,
        # Never let OpenRouter silently answer with a different upstream than the one
        # routed to first; results must be attributable to one provider. And route only to
        # a provider that honours every parameter sent (a JSON reply, a seed, temperature
        # 0): otherwise one that ignores them may answer (preflight checks the list).
        "provider": {"allow_fallbacks": False, "require_parameters": True},
        # Without this OpenRouter does not report the cost of the call.
        "usage": {"include": True},
    }
    if request.seed is not None:
        body["seed"] = request.seed
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.json_mode:
        body["response_format"] = {"type": "json_object"}
    if request.reasoning_cap:
        # Reasoning stays in the reply (`exclude` left at its default), stored apart.
        body["reasoning"] = {"max_tokens": request.reasoning_cap}
    return body


# The request parameters a provider must honour (`provider.require_parameters`).
MODEL_PARAMETERS = ("max_tokens", "seed", "temperature", "response_format", "reasoning")


def sent_parameters(request: CompletionRequest) -> tuple[str, ...]:
    """The model parameters the request's body sends, in MODEL_PARAMETERS' order."""
    body = request_body(request)
    return tuple(name for name in MODEL_PARAMETERS if name in body)


def parse_response(
    response: httpx.Response, *, latency_ms: int, http_attempts: int
) -> CompletionResult:
    """Turn one HTTP response into a result, or raise `_AttemptFailed` classified."""
    if response.status_code != 200:
        raise _status_failure(response)
    try:
        data = response.json()
    except ValueError:
        raise _AttemptFailed(
            f"invalid JSON in reply: {_truncate(response.text)}", status=200, permanent=False
        ) from None
    if not isinstance(data, dict):
        raise _AttemptFailed("reply is not a JSON object", status=200, permanent=False)
    try:
        _raise_for_error_in_body(data)
    except _AttemptFailed as failure:
        failure.paid = _paid_usage(data)
        raise
    result = _result_from_body(data, latency_ms=latency_ms, http_attempts=http_attempts)
    if result.finish_reason == "error":
        # OpenRouter's own "the upstream failed mid-generation", here without the
        # choice-level error object: the content is whatever came before the failure, not
        # a reply. Retried like the documented shape; what it billed is kept.
        raise _AttemptFailed("error in 200 reply: finish_reason error (the upstream failed "
                             "mid-reply)", status=200, permanent=False,
                             paid=_paid_usage(data))
    return result


def _paid_usage(data: dict[str, Any]) -> CompletionResult | None:
    """The usage an error reply reports (tokens, cost), or None when it reports none."""
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    details = usage.get("completion_tokens_details")
    paid = CompletionResult(
        text="", finish_reason="error", upstream_provider=None, generation_id=None,
        prompt_tokens=_tokens(usage.get("prompt_tokens")),
        completion_tokens=_tokens(usage.get("completion_tokens")),
        reasoning_tokens=_tokens(details.get("reasoning_tokens")
                                 if isinstance(details, dict) else None),
        cost_usd=call_cost(usage))
    if paid.prompt_tokens or paid.completion_tokens or paid.cost_usd:
        return paid
    return None


def _status_failure(response: httpx.Response) -> _AttemptFailed:
    status = response.status_code
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    detail = _error_message(response)
    if status in THROTTLE_STATUSES:
        return _AttemptFailed(detail, status=status, permanent=False, retry_after=retry_after)
    if status == 402 and retry_after is not None:
        # OpenRouter's in-flight spending budget answers 402 *with* Retry-After: a wait,
        # not an empty account. A 402 without the header stays permanent.
        return _AttemptFailed(detail, status=status, permanent=False, retry_after=retry_after)
    return _AttemptFailed(detail, status=status, permanent=not _is_transient(status))


def _is_transient(status: int) -> bool:
    # 408 (timeout) and every 5xx can succeed later; other 4xx and stray 3xx cannot.
    return status == 408 or status in THROTTLE_STATUSES or status >= 500


def _raise_for_error_in_body(data: dict[str, Any]) -> None:
    # OpenRouter answers 200 once a model has started and reports upstream failures in the
    # body (DESIGN section 5); its `code` carries the meaning an HTTP status would.
    error = data.get("error")
    if error is None:
        choices = data.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        error = first.get("error") if isinstance(first, dict) else None
    if error is None:
        return
    code, message = _code_and_message(error)
    if code is None:
        # An error without a numeric code: treat it like a bad gateway and try again.
        raise _AttemptFailed(f"error in 200 reply: {message}", status=200, permanent=False)
    raise _AttemptFailed(
        f"error in 200 reply: {message}", status=code, permanent=not _is_transient(code)
    )


def _code_and_message(error: Any) -> tuple[int | None, str]:
    if not isinstance(error, dict):
        return None, _truncate(str(error))
    raw_code = error.get("code")
    try:
        code = int(raw_code) if raw_code is not None else None
    except (TypeError, ValueError):
        code = None
    message = str(error.get("message") or error)
    # An upstream failure names the provider and carries its own raw error: keep both.
    metadata = error.get("metadata") if isinstance(error.get("metadata"), dict) else {}
    if metadata.get("provider_name"):
        message += f" [upstream {metadata['provider_name']}"
        message += f": {metadata['raw']}]" if metadata.get("raw") else "]"
    return code, _truncate(message)


# Every provider's spelling of "stopped at the token budget" and of "stopped by a filter or a
# refusal", as OpenRouter passes them through in `native_finish_reason` (Gemini's MAX_TOKENS,
# Anthropic's max_tokens and refusal, OpenAI's length and content_filter, ...). OpenRouter's
# own `finish_reason` may be null while the native one says why.
LENGTH_STOPS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length",
                          "token_limit", "max_completion_tokens", "finish_reason_length"})
FILTER_STOPS = frozenset({"content_filter", "refusal", "safety", "recitation", "blocklist",
                          "prohibited_content", "spii", "image_safety", "language"})


def normal_finish_reason(finish: Any, native: Any) -> str | None:
    """`length` for any length stop, `content_filter` for any filter or refusal, else the
    normalised reason as given."""
    spellings = {str(value).strip().lower() for value in (finish, native) if value}
    if spellings & LENGTH_STOPS:
        return "length"
    if spellings & FILTER_STOPS:
        return "content_filter"
    return (str(finish) if finish else None) or (str(native) if native else None)


def _content_parts(content: Any) -> tuple[str, str]:
    """(text, thinking) of a message's content: a string as it is; a list of parts (the shape
    Mistral's own API gives its reasoning models' replies) as its text parts joined, its
    thinking parts apart. Read as empty, a list threw a valid answer away and paid for it
    again."""
    if isinstance(content, str):
        return content, ""
    texts: list[str] = []
    thoughts: list[str] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part.get("type") == "thinking":
            inner = part.get("thinking")
            inner = inner if isinstance(inner, list) else [{"text": inner}]
            thoughts += [piece["text"] for piece in inner if isinstance(piece, dict)
                         and isinstance(piece.get("text"), str) and piece["text"].strip()]
    return "".join(texts), "\n\n".join(thoughts)


def _reasoning(message: dict[str, Any]) -> str:
    """The model's reasoning as text: `message.reasoning`, else the readable parts of
    `reasoning_details` (summaries and texts; encrypted parts have none)."""
    reasoning = message.get("reasoning")
    if isinstance(reasoning, str) and reasoning.strip():
        return reasoning
    details = message.get("reasoning_details")
    parts = []
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict):
            part = detail.get("text") or detail.get("summary")
            if isinstance(part, str) and part.strip():
                parts.append(part)
    return "\n\n".join(parts)


def call_cost(usage: dict[str, Any]) -> float | None:
    """What the call cost, or None when the reply does not say. A BYOK call's `cost` is only
    OpenRouter's fee: the upstream provider's charge (`cost_details.upstream_inference_cost`)
    is paid too. On other calls that field repeats part of `cost`, so it is added only for
    BYOK (`is_byok`, or a zero `cost` beside a positive upstream cost)."""
    cost = _number(usage.get("cost"))
    details = usage.get("cost_details")
    upstream = _number(details.get("upstream_inference_cost")) if isinstance(
        details, dict) else None
    byok = usage.get("is_byok") is True or (cost == 0 and bool(upstream))
    if cost is None:
        return upstream if byok else None
    return cost + (upstream or 0.0) if byok else cost


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _tokens(value: Any) -> int:
    number = _number(value)
    return int(number) if number is not None else 0


def _result_from_body(
    data: dict[str, Any], *, latency_ms: int, http_attempts: int
) -> CompletionResult:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        # No reply to read (a provider's moderation may eat it whole), yet the usage may say
        # it was billed: retried, and what it billed is kept (paid means recorded).
        raise _AttemptFailed("200 reply without choices", status=200, permanent=False,
                             paid=_paid_usage(data))
    choice = choices[0]
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    content, thinking = _content_parts(message.get("content"))
    refusal = message.get("refusal")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    details = usage.get("completion_tokens_details") or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    cost = call_cost(usage)
    native = choice.get("native_finish_reason")
    return CompletionResult(
        text=content,
        finish_reason=normal_finish_reason(choice.get("finish_reason"), native),
        upstream_provider=data.get("provider") or None,
        generation_id=data.get("id"),
        prompt_tokens=_tokens(usage.get("prompt_tokens")),
        completion_tokens=_tokens(usage.get("completion_tokens")),
        reasoning_tokens=_tokens(details.get("reasoning_tokens")
                                 if isinstance(details, dict) else None),
        cost_usd=cost,
        latency_ms=latency_ms,
        http_attempts=http_attempts,
        native_finish_reason=str(native) if native else None,
        reasoning=_reasoning(message) or thinking,
        refusal=refusal.strip() if isinstance(refusal, str) else "",
        served_model=str(data.get("model") or ""),
        system_fingerprint=str(data.get("system_fingerprint") or ""),
        cached_tokens=_tokens(prompt_details.get("cached_tokens")
                              if isinstance(prompt_details, dict) else None),
        cost_estimated=cost is None,
    )


def _error_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return _truncate(response.text) or response.reason_phrase
    if isinstance(data, dict) and "error" in data:
        return _code_and_message(data["error"])[1]
    return _truncate(response.text)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _truncate(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= ERROR_DETAIL_LIMIT:
        return text
    return text[: ERROR_DETAIL_LIMIT - 1] + "…"


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The certificate store, read once per process and shared by every client: each
    `httpx.AsyncClient` otherwise loads it again (about 18 ms of CPU each, seven clients per
    drain at 50 calls in flight)."""
    return httpx.create_ssl_context()


def preload() -> None:
    """Load now what the first call of a process would: anyio's asyncio backend (anyio
    imports it at its first use, httpx's first connection) and the certificate store."""
    anyio.run(anyio.sleep, 0)
    tls_context()


# httpcore's connection pool looks at every connection of its client each time it assigns a
# request (a liveness check per socket), so the CPU a call costs grows with the pool: at 50
# connections most of a call's client-side time went there (py-spy, bench/calls.py). Calls are
# spread over clients of at most this many connections instead.
SHARD_CONNECTIONS = 8


class _Shards:
    """`concurrency` slots over a few small clients: a call takes a free slot, uses that
    slot's client, and gives the slot back, so no client ever has more exchanges in flight
    than connections and the total stays at `concurrency`."""

    def __init__(self, concurrency: int,
                 new_client: Callable[[int], httpx.AsyncClient]) -> None:
        count = math.ceil(concurrency / SHARD_CONNECTIONS)
        sizes = [concurrency // count + (1 if index < concurrency % count else 0)
                 for index in range(count)]
        self.clients = [new_client(size) for size in sizes]
        self._free: asyncio.Queue[httpx.AsyncClient] = asyncio.Queue()
        # Interleaved, so that light loads spread over every client.
        for round_ in range(max(sizes)):
            for client, size in zip(self.clients, sizes, strict=True):
                if round_ < size:
                    self._free.put_nowait(client)

    async def acquire(self) -> httpx.AsyncClient:
        return await self._free.get()

    def release(self, client: httpx.AsyncClient) -> None:
        self._free.put_nowait(client)

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()
