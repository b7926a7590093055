"""The OpenRouter provider against a fake OpenRouter on loopback (DESIGN section 5).

Every test drives the real httpx client over real sockets and checks what the
server received, not only what the provider returned. No database is needed.
"""

from __future__ import annotations

import asyncio
import email.utils
import gc
import json
import logging
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from runs_app.providers.base import CompletionRequest, CompletionResult, Message, ProviderError
from runs_app.providers.openrouter import OpenRouterProvider, parse_retry_after
from runs_app.providers.registry import get_provider
from runs_app.testing.fake_openrouter import (
    FakeOpenRouter,
    FakeResponse,
    completion_body,
    error_body,
)

API_KEY = "sk-or-v1-test-0123456789abcdef"


class RecordedSleeps:
    """Stands in for asyncio.sleep: remembers each backoff wait instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def server() -> Iterator[FakeOpenRouter]:
    with FakeOpenRouter(keep_authorization=True) as fake:
        yield fake


def make_provider(server: FakeOpenRouter, **options: Any) -> OpenRouterProvider:
    settings: dict[str, Any] = {"base_url": server.base_url, "api_key": API_KEY,
                                "backoff_base": 0.01, "backoff_cap": 0.05}
    provider = OpenRouterProvider(**(settings | options))
    provider.sleep = RecordedSleeps()
    return provider


def waits(provider: OpenRouterProvider) -> list[float]:
    assert isinstance(provider.sleep, RecordedSleeps)
    return provider.sleep.waits


def make_request(**fields: Any) -> CompletionRequest:
    values: dict[str, Any] = {
        "model": "acme/writer-1",
        "messages": (Message("system", "You write press releases."),
                     Message("user", "Write about the recall.")),
        "max_tokens": 17_200,
    }
    return CompletionRequest(**(values | fields))


def complete(provider: OpenRouterProvider, request: CompletionRequest) -> CompletionResult:
    async def call_and_close() -> CompletionResult:
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    return asyncio.run(call_and_close())


def failure(provider: OpenRouterProvider, request: CompletionRequest) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        complete(provider, request)
    return raised.value


# -- what is sent ------------------------------------------------------------------------


def test_it_sends_what_openrouter_expects(server: FakeOpenRouter) -> None:
    complete(make_provider(server), make_request(seed=7, temperature=0.3))

    [received] = server.requests
    assert received.path == "/api/v1/chat/completions"
    assert received.body["model"] == "acme/writer-1"
    assert received.body["messages"] == [
        {"role": "system", "content": "You write press releases."},
        {"role": "user", "content": "Write about the recall."},
    ]
    assert received.body["max_tokens"] == 17_200
    assert received.body["provider"] == {"allow_fallbacks": False, "require_parameters": True}
    assert received.body["usage"] == {"include": True}
    assert received.body["seed"] == 7
    assert received.body["temperature"] == 0.3
    assert "reasoning" not in received.body
    assert "response_format" not in received.body
    assert received.headers["Authorization"] == f"Bearer {API_KEY}"
    assert received.headers["X-Title"] == "BaitBench"


def test_it_leaves_out_unset_options_and_asks_for_json_in_json_mode(
    server: FakeOpenRouter,
) -> None:
    complete(make_provider(server), make_request(json_mode=True))

    [received] = server.requests
    assert "seed" not in received.body
    assert "temperature" not in received.body
    assert "reasoning" not in received.body
    assert received.body["response_format"] == {"type": "json_object"}


def test_the_fake_rejects_a_wrong_key_like_openrouter() -> None:
    with FakeOpenRouter(api_key="the-right-key") as strict:
        error = failure(make_provider(strict, api_key="a-wrong-key"), make_request())
        assert error.status == 401
        assert strict.requests[0].headers["Authorization"] == "Bearer [redacted]"


# -- what is parsed ----------------------------------------------------------------------


def test_it_parses_upstream_ids_usage_and_cost(server: FakeOpenRouter) -> None:
    server.enqueue(body=completion_body(
        "We have recalled the product.", provider="Anthropic", generation_id="gen-abc123",
        prompt_tokens=1200, completion_tokens=900, reasoning_tokens=640, cost=0.0042,
    ))

    result = complete(make_provider(server), make_request())

    assert result.text == "We have recalled the product."
    assert result.finish_reason == "stop"
    assert result.upstream_provider == "Anthropic"
    assert result.generation_id == "gen-abc123"
    assert (result.prompt_tokens, result.completion_tokens, result.reasoning_tokens) == (
        1200, 900, 640)
    assert result.cost_usd == pytest.approx(0.0042)
    assert result.http_attempts == 1
    assert result.latency_ms >= 0


def test_it_records_a_missing_upstream_provider_as_none(server: FakeOpenRouter) -> None:
    server.enqueue_without_provider()

    result = complete(make_provider(server), make_request())

    assert result.upstream_provider is None
    assert result.text


def test_it_reads_absent_reasoning_and_cost_as_zero_and_none(server: FakeOpenRouter) -> None:
    body = completion_body("Short reply.", cost=None)
    del body["usage"]["completion_tokens_details"]
    server.enqueue(body=body)

    result = complete(make_provider(server), make_request())

    assert result.reasoning_tokens == 0
    assert result.cost_usd is None


def test_it_returns_a_length_finish_as_is_for_the_stage_to_regenerate(
    server: FakeOpenRouter,
) -> None:
    server.enqueue_length_finish("A text cut off")

    result = complete(make_provider(server), make_request())

    assert result.finish_reason == "length"
    assert result.text == "A text cut off"
    assert server.count() == 1


def test_it_reads_content_sent_as_a_list_of_parts(server: FakeOpenRouter) -> None:
    """Mistral's shape for its reasoning models: the text parts are the reply, the thinking
    parts its reasoning."""
    body = completion_body(None)
    body["choices"][0]["message"]["content"] = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "They want JSON."}]},
        {"type": "text", "text": '{"verdict": '}, {"type": "text", "text": '"complied"}'},
        "stray", {"type": "image_url", "image_url": {"url": "x"}}]
    server.enqueue(body=body)

    result = complete(make_provider(server), make_request())

    assert result.text == '{"verdict": "complied"}'
    assert result.reasoning == "They want JSON."


def test_it_returns_empty_content_as_empty_text(server: FakeOpenRouter) -> None:
    server.enqueue_empty_content()

    result = complete(make_provider(server), make_request())

    assert result.text == ""
    assert server.count() == 1


# -- retries -----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 503])
def test_it_waits_at_least_retry_after_seconds(server: FakeOpenRouter, status: int) -> None:
    server.enqueue(status, headers={"Retry-After": "3"})
    provider = make_provider(server)

    result = complete(provider, make_request())

    assert server.count() == 2
    assert result.http_attempts == 2
    assert len(waits(provider)) == 1
    assert waits(provider)[0] >= 3


def test_it_honours_retry_after_given_as_an_http_date(server: FakeOpenRouter) -> None:
    # A minute ahead: a loaded machine may take seconds between this line and the reply.
    server.enqueue(429, headers={"Retry-After": email.utils.formatdate(time.time() + 60,
                                                                          usegmt=True)})
    provider = make_provider(server)

    complete(provider, make_request())

    assert server.count() == 2
    assert 45 <= waits(provider)[0] <= 60  # the date has whole-second precision


def test_it_gives_up_at_once_when_retry_after_is_longer_than_worth_waiting(
    server: FakeOpenRouter,
) -> None:
    server.enqueue(429, headers={"Retry-After": "86400"})
    provider = make_provider(server, max_retry_after=600)

    error = failure(provider, make_request())

    assert not error.permanent
    assert error.status == 429
    assert server.count() == 1
    assert waits(provider) == []


@pytest.mark.parametrize("status", [408, 500, 502, 504])
def test_it_retries_a_transient_status_then_succeeds(server: FakeOpenRouter, status: int) -> None:
    server.enqueue(status)

    result = complete(make_provider(server), make_request())

    assert server.count() == 2
    assert result.http_attempts == 2
    assert result.upstream_provider == "FakeUpstream"


def test_its_backoff_grows_exponentially_with_jitter(server: FakeOpenRouter) -> None:
    for _ in range(3):
        server.enqueue(502)
    provider = make_provider(server, backoff_base=1.0, backoff_cap=60.0)

    complete(provider, make_request())

    first, second, third = waits(provider)
    assert 0.5 <= first <= 1.0
    assert 1.0 <= second <= 2.0
    assert 2.0 <= third <= 4.0


def test_it_retries_an_upstream_error_inside_a_200(server: FakeOpenRouter) -> None:
    server.enqueue_error_in_200(502, "Provider returned error")

    result = complete(make_provider(server), make_request())

    assert server.count() == 2
    assert result.http_attempts == 2


def test_it_does_not_retry_a_client_error_inside_a_200(server: FakeOpenRouter) -> None:
    server.enqueue_error_in_200(400, "Context length exceeded")

    error = failure(make_provider(server), make_request())

    assert error.permanent
    assert error.status == 400
    assert "Context length exceeded" in error.message
    assert server.count() == 1


def test_it_retries_invalid_json_and_replies_without_choices(server: FakeOpenRouter) -> None:
    server.enqueue(200, body="<html>gateway hiccup</html>")
    server.enqueue(200, body={"id": "gen-empty", "choices": []})

    result = complete(make_provider(server), make_request())

    assert server.count() == 3
    assert result.http_attempts == 3


@pytest.mark.parametrize("status", [400, 401, 402, 403, 404])
def test_it_does_not_retry_a_permanent_status(server: FakeOpenRouter, status: int) -> None:
    server.enqueue(status, body={"error": {"code": status, "message": f"Refused ({status})"}})
    provider = make_provider(server)

    error = failure(provider, make_request())

    assert error.permanent
    assert error.status == status
    assert f"HTTP {status}" in error.message
    assert f"Refused ({status})" in error.message
    assert server.count() == 1
    assert waits(provider) == []


def test_it_gives_up_after_max_retries_naming_the_last_failure(server: FakeOpenRouter) -> None:
    for _ in range(4):
        server.enqueue(502, body={"error": {"code": 502, "message": "Model is down"}})
    provider = make_provider(server, max_retries=3)

    error = failure(provider, make_request())

    assert not error.permanent
    assert error.status == 502
    assert "Model is down" in error.message
    assert "4 attempts" in error.message
    assert server.count() == 4
    assert len(waits(provider)) == 3


def test_it_truncates_long_error_messages(server: FakeOpenRouter) -> None:
    server.enqueue(400, body={"error": {"code": 400, "message": "x" * 5000}})

    error = failure(make_provider(server), make_request())

    assert len(error.message) < 500


def test_it_retries_a_read_timeout_then_gives_up(server: FakeOpenRouter) -> None:
    for _ in range(3):
        server.enqueue_slow(5.0)
    provider = make_provider(server, read_timeout=0.2, max_retries=2)

    error = failure(provider, make_request())

    assert not error.permanent
    assert error.status is None
    assert "ReadTimeout" in error.message
    assert server.count() == 3  # max_retries + 1
    assert len(waits(provider)) == 2


def test_it_retries_when_nothing_listens() -> None:
    with FakeOpenRouter() as gone:
        base_url = gone.base_url
    provider = OpenRouterProvider(base_url=base_url, api_key=API_KEY, max_retries=1)
    provider.sleep = RecordedSleeps()

    error = failure(provider, make_request())

    assert not error.permanent
    assert len(waits(provider)) == 1


# -- concurrency and lifecycle -----------------------------------------------------------


def run_concurrently(provider: OpenRouterProvider, calls: int) -> list[CompletionResult]:
    async def all_calls() -> list[CompletionResult]:
        try:
            requests = [make_request(seed=n) for n in range(calls)]
            return await asyncio.gather(*(provider.complete(r) for r in requests))
        finally:
            await provider.aclose()

    return asyncio.run(all_calls())


def test_it_keeps_at_most_concurrency_requests_in_flight(server: FakeOpenRouter) -> None:
    server.latency = 0.2

    results = run_concurrently(make_provider(server, concurrency=3), calls=10)

    assert len(results) == 10
    assert server.count() == 10
    assert server.max_in_flight == 3


def test_the_fake_serves_slow_requests_side_by_side(server: FakeOpenRouter) -> None:
    server.latency = 0.3

    run_concurrently(make_provider(server, concurrency=50), calls=20)

    # All 20 were in flight at once (serialised, at most one would be): a count, not a
    # timing, so a loaded CI machine cannot fail it (bench/calls.py measures the speed).
    assert server.max_in_flight == 20


def test_it_works_in_a_new_event_loop_without_being_closed_in_the_old(
    server: FakeOpenRouter,
) -> None:
    provider = make_provider(server)

    first = asyncio.run(provider.complete(make_request()))
    second = complete(provider, make_request())

    assert first.text == second.text
    assert server.count() == 2
    # The first loop's connection could not be closed once that loop had ended: the
    # price of skipping aclose(), collected here so it does not warn in a later test.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def test_registry_builds_the_openrouter_provider_by_name(server: FakeOpenRouter) -> None:
    provider = get_provider("openrouter", base_url=server.base_url, api_key=API_KEY)

    assert isinstance(provider, OpenRouterProvider)
    assert provider.name == "openrouter"
    with pytest.raises(ValueError, match="unknown provider"):
        get_provider("no-such-provider")


# -- the key stays secret ----------------------------------------------------------------


def test_a_missing_key_fails_permanently_on_first_call_not_before(
    server: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    provider = OpenRouterProvider(base_url=server.base_url)

    error = failure(provider, make_request())

    assert error.permanent
    assert "OPENROUTER_API_KEY" in error.message
    assert server.count() == 0


def test_it_reads_url_and_key_from_the_environment(
    server: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENROUTER_API_KEY", API_KEY)

    complete(OpenRouterProvider(), make_request())

    assert server.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"


def test_the_key_never_appears_in_errors_logs_or_reprs(
    server: FakeOpenRouter, caplog: pytest.LogCaptureFixture
) -> None:
    # An upstream that echoes the key back must not get it into our messages either.
    echo = f"Invalid key {API_KEY}"
    server.enqueue(502, body={"error": {"code": 502, "message": echo}})
    server.enqueue(401, body={"error": {"code": 401, "message": echo}})
    provider = make_provider(server)

    with caplog.at_level(logging.DEBUG):
        error = failure(provider, make_request())

    assert error.status == 401
    exposed = [str(error), repr(error), error.message, repr(provider), caplog.text,
               str(error.__cause__), str(error.__context__)]
    assert all(API_KEY not in text for text in exposed)
    assert "[redacted]" in error.message


# -- helpers of the fake that other tests rely on ----------------------------------------


def test_the_fake_answers_deterministically_with_distinct_generation_ids(
    server: FakeOpenRouter,
) -> None:
    provider = make_provider(server)

    first = complete(provider, make_request())
    second = complete(provider, make_request())
    json_reply = complete(provider, make_request(json_mode=True))

    assert first.text == second.text
    assert first.generation_id != second.generation_id
    assert json.loads(json_reply.text)["reply"]
    assert first.cost_usd is not None and first.cost_usd > 0


def test_the_fake_answers_by_model_through_a_responder() -> None:
    def by_model(body: dict[str, Any]) -> str | dict[str, Any] | FakeResponse:
        if body["model"] == "jury/strict":
            return json.dumps({"score": 2})
        return FakeResponse(status=503)

    with FakeOpenRouter(responder=by_model) as fake:
        fake.enqueue(429, model="jury/strict")
        provider = make_provider(fake)
        result = complete(provider, make_request(model="jury/strict"))
        error = failure(make_provider(fake, max_retries=0), make_request(model="other/model"))

    assert json.loads(result.text) == {"score": 2}
    assert result.http_attempts == 2
    assert error.status == 503


def test_parse_retry_after_reads_seconds_and_dates() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    in_ten = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8.0 <= (parse_retry_after(in_ten) or 0.0) <= 10.0


def test_a_key_with_a_trailing_newline_is_sent_without_it(server: FakeOpenRouter) -> None:
    # Keys read from secret files often end in a newline; httpx refuses such a header.
    complete(make_provider(server, api_key=f"{API_KEY}\n"), make_request())

    assert server.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"


def test_a_key_that_cannot_be_sent_fails_permanently_without_showing_it(
    server: FakeOpenRouter, caplog: pytest.LogCaptureFixture
) -> None:
    # httpx's own error quotes the header value, key and all.
    secret = "sk-or-v1-broken\nsecret"
    provider = make_provider(server, api_key=secret)

    # INFO, not DEBUG: httpcore's own debug trace repeats the exception (not our logger).
    with caplog.at_level(logging.INFO):
        error = failure(provider, make_request())

    assert error.permanent
    assert server.count() == 0
    exposed = [error.message, str(error.__context__), str(error.__cause__), caplog.text]
    assert all("secret" not in text and "broken" not in text for text in exposed)


def test_a_reply_without_a_cost_after_a_billed_error_stays_estimated(
        server: FakeOpenRouter) -> None:
    """A 200 whose upstream failed mid-reply billed 0.000123, then the retry succeeded but
    reported no usage (found by the faults tryout). The success was paid too: the result must
    say its cost is unknown (None, estimated), with the failed attempt's reported cost kept
    apart, so the stage adds an estimate of the reply's own tokens to it. Before, the billed
    error's 0.000123 stood alone as the whole cost, marked exact: the reply's own cost was
    dropped, unestimated, from the spend and the budget cap."""
    billed = error_body(502, "Upstream error mid-reply") | {
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "cost": 0.000123}}
    server.enqueue(200, body=billed)
    unpriced = completion_body("A whole reply of several words.")
    del unpriced["usage"]
    server.enqueue(200, body=unpriced)

    result = complete(make_provider(server), make_request())

    assert server.count() == 2
    assert result.cost_usd is None and result.cost_estimated
    # Both attempts' tokens are there to estimate from: the failed one's 100 + 20, and the
    # reply's own, estimated from its characters.
    assert result.prompt_tokens > 100 and result.completion_tokens > 20
    # What the failed attempt reported is kept apart, so only the reply's own is estimated.
    assert result.priced_usd == pytest.approx(0.000123)
    assert result.unpriced_tokens == (result.prompt_tokens - 100, result.completion_tokens - 20)
