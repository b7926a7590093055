"""How model calls through OpenRouter are retried, with replies and faults shaped as real
upstreams send them (DESIGN section 5: faults lose nothing and pay for nothing twice).

- A 200 whose finish_reason is "error" is a provider error (retried), never a text; so is a
  200 without choices. What such a reply billed is kept on the row, also when the provider
  gives up and the row fails.
- A Retry-After longer than a call waits is honoured: one call, and the row is parked
  (pending, not claimed before the wait is over), not failed and not asked again at once.
  Other calls of that model fail at once without a request. So for writers, structured
  replies and cross-examination turns. A short Retry-After is waited out within the call.
  A parked row keeps the attempts it spent: after the wait it gets only what is left (a
  cross-examination turn, for its question and for its answer alike).
- The journalist's story is written before the frame judge is asked: a judge that fails
  never makes the journalist be asked (and paid) again.
- One transport budget per row and claim: a provider error that outlasted the provider's
  own retries ends the row's calls (it fails, an operator retries it); the stage's reply
  attempts are for invalid replies only and do not multiply the provider's retries.

Through the real OpenRouter client against the fake server (runs_app.testing.fake_openrouter).
Run: .venv/bin/python -m pytest -p no:xdist -q runs_app/tests/test_real_replies_retries.py
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from django.utils import timezone

from runs_app.costs import forget_prices
from runs_app.models import (
    AgentRun,
    CrossExamTurn,
    Generation,
    RefusalCheck,
    RunControl,
    WorkStatus,
)
from runs_app.providers.base import CompletionRequest, Message, ProviderError
from runs_app.providers.models_list import models_list
from runs_app.providers.openrouter import OpenRouterProvider
from runs_app.providers.pool import ProviderPool
from runs_app.services import release_retry_failed
from runs_app.stages.base import drain_release
from runs_app.testing.fake_openrouter import FakeOpenRouter, FakeResponse
from runs_app.testing.messy import models_payload
from runs_app.testing.replies import valid_reply
from runs_app.tests.reply_probes import (
    MODELS,
    Shaped,
    body_for,
    calls_by_role,
    release_for,
    role_of,
    run,
)

HOUR = "3600"


def _throttled(seconds: str):
    def shape(payload, content, number):
        return FakeResponse(429, {"error": {"code": 429, "message": "Rate limit exceeded"}},
                            headers={"Retry-After": seconds})
    return shape


def _bad_gateway(payload, content, number):
    return FakeResponse(502, {"error": {"code": 502, "message": "Bad gateway"}})


def _pool(server, *, max_retries: int = 2) -> ProviderPool:
    return ProviderPool(default="openrouter", base_url=server.base_url, api_key="test-key",
                        backoff_base=0.01, backoff_cap=0.05, max_retries=max_retries)


class Served:
    """A fake OpenRouter, the models list and the release, for tests that drain more than
    once (a wait that ends, an operator's retry) with the same server."""

    def __init__(self, responder, monkeypatch, code: str, stages: list[str],
                 **release_options) -> None:
        self.responder, self.monkeypatch, self.code, self.stages = (
            responder, monkeypatch, code, stages)
        self.release_options = release_options

    def __enter__(self) -> Served:
        ids = [m["id"] for m in MODELS]
        self.server = FakeOpenRouter(responder=self.responder, models=models_payload(ids))
        self.server.__enter__()
        self.monkeypatch.setenv("OPENROUTER_BASE_URL", self.server.base_url)
        models_list(refresh=True)
        forget_prices()
        self.release = release_for(self.code, stages=self.stages, **self.release_options)
        RunControl.objects.get_or_create(release=self.release)
        return self

    def drain(self, **pool_options) -> None:
        drain_release(self.release, self.stages, providers=_pool(self.server, **pool_options),
                      controlled=False, concurrency=4)

    def __exit__(self, *exc) -> None:
        self.server.__exit__(*exc)


def _wait_over(rows) -> None:
    """The provider's wait has passed (as if an hour went by)."""
    rows.update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))


# ---------------------------------------------------------------------------------------
# finish_reason "error": a provider error, not a text
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_writer_finish_reason_error_without_error_object_is_retried_not_a_text(
        imported_scenarios, monkeypatch):
    """OpenRouter's normalised finish_reason "error" (the upstream failed mid-generation),
    here without a choice-level error object: the half text is not a text. The provider
    retries it as it does the documented shape, and what the failed attempt billed is kept
    on the text's usage (paid means recorded)."""
    def cut(p, c, n):
        return body_for(c[: len(c) // 2], p, finish_reason="error", native_finish_reason="error")
    release, requests = run(Shaped("write", cut, times=1), monkeypatch, stages=["generate"])
    text = Generation.objects.get(release=release)
    assert text.status == WorkStatus.DONE and text.finish_reason == "stop", (
        text.status, text.finish_reason, text.error)
    assert len(requests) == 2
    assert text.http_attempts == 2
    # Both replies reported 10 prompt tokens and a cost of 0.0001.
    assert text.prompt_tokens == 20
    assert text.cost_usd == pytest.approx(0.0002)


@pytest.mark.django_db
def test_writer_finish_error_with_choice_error_object_is_retried(imported_scenarios,
                                                                 monkeypatch):
    """OpenRouter's documented shape: partial content, finish_reason error, choices[0].error."""
    def cut(p, c, n):
        body = body_for(c[: len(c) // 2], p, finish_reason="error", native_finish_reason="error")
        body["choices"][0]["error"] = {"code": 502, "message": "Upstream dropped"}
        return body
    release, requests = run(Shaped("write", cut, times=1), monkeypatch, stages=["generate"])
    text = Generation.objects.get(release=release)
    assert text.status == WorkStatus.DONE and text.finish_reason == "stop"
    assert len(requests) == 2


@pytest.mark.django_db
def test_a_billed_reply_without_choices_is_retried_and_counted_in_the_rows_cost(
        imported_scenarios, monkeypatch):
    """A 200 with `choices: []` and a usage block (a provider's moderation ate the reply):
    nothing to read, so it is retried, and what it billed is kept, as for an error in a 200."""
    def eaten(p, c, n):
        body = body_for(c, p)
        body["choices"] = []
        body["usage"]["cost"] = 0.5
        return body
    release, requests = run(Shaped("refusal", eaten, times=1), monkeypatch, code="nochoice",
                            stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert check.outcome == "scored" and calls_by_role(requests)["refusal"] == 2
    # The eaten reply's 0.5 and the answer's 0.0001.
    assert check.cost_usd == pytest.approx(0.5001)


def _eaten_always(p, c, n):
    body = body_for(c, p)
    body["choices"] = []
    body["usage"]["cost"] = 0.5
    return body


@pytest.mark.django_db
def test_billed_replies_that_outlast_the_retries_are_counted_on_the_failed_row(
        imported_scenarios, monkeypatch):
    """Every attempt a 200 without choices, each billed: the provider gives up after its
    three requests and the row fails (an operator retries it), with the three replies' cost
    on it, not lost with the error."""
    release, requests = run(Shaped("refusal", _eaten_always, repairs=True), monkeypatch,
                            code="nochoice.all", stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert check.status == WorkStatus.FAILED and calls_by_role(requests)["refusal"] == 3
    assert check.cost_usd == pytest.approx(1.5)


@pytest.mark.django_db
def test_a_writers_billed_replies_that_outlast_the_retries_are_counted(imported_scenarios,
                                                                      monkeypatch):
    release, requests = run(Shaped("write", _eaten_always, times=3), monkeypatch,
                            code="nochoice.w", stages=["generate"])
    text = Generation.objects.get(release=release)
    # Three eaten replies in the first claim's call, then a text (0.0001).
    assert text.status == WorkStatus.DONE, (text.status, text.error)
    assert text.cost_usd == pytest.approx(1.5001)


# ---------------------------------------------------------------------------------------
# Retry-After: honoured, however long
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_writer_429_with_long_retry_after_is_called_once_and_parked(imported_scenarios,
                                                                    monkeypatch):
    """A 429 whose Retry-After (an hour) is longer than a call waits: one call, and the cell
    waits (pending, not claimable before the hour is over) with its attempt budget whole; a
    drain within the hour calls nothing; after it the cell is written."""
    with Served(Shaped("write", _throttled(HOUR), times=1), monkeypatch, "park.0",
                ["generate"]) as served:
        served.drain()
        text = Generation.objects.get(release=served.release)
        assert len(served.server.requests) == 1, (text.status, text.error)
        assert text.status == WorkStatus.PENDING and text.attempts == 0
        assert text.lease_expires_at > timezone.now() + dt.timedelta(minutes=59)
        assert "Retry-After" in text.error and "waiting until" in text.error
        served.drain()
        assert len(served.server.requests) == 1
        _wait_over(Generation.objects.filter(pk=text.pk))
        served.drain()
        text.refresh_from_db()
    assert text.status == WorkStatus.DONE and text.text, (text.status, text.error)
    assert text.attempts == 1 and len(served.server.requests) == 2


@pytest.mark.django_db
def test_structured_429_with_long_retry_after_is_called_once_and_parked(imported_scenarios,
                                                                        monkeypatch):
    """The same for a structured reply (the refusal check): one call, no reply attempt used,
    the row parked until the wait is over, then answered."""
    with Served(Shaped("refusal", _throttled(HOUR), repairs=True, times=1), monkeypatch,
                "park.1", ["generate", "refusal"]) as served:
        served.drain()
        check = RefusalCheck.objects.get(release=served.release)
        roles = calls_by_role(served.server.requests)
        assert roles["refusal"] == 1, (roles, check.status, check.error)
        assert check.status == WorkStatus.PENDING and check.attempts == 0
        assert check.lease_expires_at > timezone.now() + dt.timedelta(minutes=59)
        _wait_over(RefusalCheck.objects.filter(pk=check.pk))
        served.drain()
        check.refresh_from_db()
    assert check.status == WorkStatus.DONE and check.outcome == "scored", check.error
    assert calls_by_role(served.server.requests)["refusal"] == 2


@pytest.mark.django_db
def test_short_retry_after_is_waited_out_within_the_call(imported_scenarios, monkeypatch):
    def once(p, c, n):
        return _throttled("0.05")(p, c, n)
    release, requests = run(Shaped("refusal", once, times=1), monkeypatch,
                            stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert check.status == WorkStatus.DONE and check.attempts == 1
    assert calls_by_role(requests)["refusal"] == 2


def test_a_throttled_model_is_not_called_again_within_the_wait():
    """After a Retry-After of an hour, the provider's other calls of that model fail at once
    (saying how long is left) instead of each drawing its own 429; other models are called."""
    with FakeOpenRouter() as server:
        server.enqueue(429, headers={"Retry-After": HOUR})
        provider = OpenRouterProvider(base_url=server.base_url, api_key="test-key",
                                      backoff_base=0.01, backoff_cap=0.05)

        def request(model: str) -> CompletionRequest:
            return CompletionRequest(model=model, messages=(Message("user", "Hello"),),
                                     max_tokens=100)

        async def calls():
            errors = []
            for _ in range(2):
                try:
                    await provider.complete(request("acme/writer-a"))
                except ProviderError as error:
                    errors.append(error)
            other = await provider.complete(request("acme/writer-b"))
            await provider.aclose()
            return errors, other

        errors, other = asyncio.run(calls())
    assert len(errors) == 2 and all(not e.permanent for e in errors)
    assert all(e.retry_after and 3500 < e.retry_after <= 3600 for e in errors)
    assert [r.body["model"] for r in server.requests] == ["acme/writer-a", "acme/writer-b"]
    assert other.text


# ---------------------------------------------------------------------------------------
# Uptake: a paid story is kept while its judge fails
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_uptake_judge_errors_then_retry_do_not_ask_the_journalist_again(imported_scenarios,
                                                                        monkeypatch):
    """The journalist answers validly, the frame judge gets only 502s and the row fails;
    the story was written before the judge was asked, so an operator's retry asks only the
    judge."""
    failing = {"on": True}

    def responder(payload):
        if role_of(payload) == "frame" and failing["on"]:
            return FakeResponse(502, {"error": {"code": 502, "message": "Bad gateway"}})
        return body_for(valid_reply(payload), payload)

    stages = ["generate", "refusal", "uptake"]
    with Served(responder, monkeypatch, "uptake.0", stages) as served:
        served.drain(max_retries=0)
        row = AgentRun.objects.get(release=served.release, kind="uptake")
        assert row.status == WorkStatus.FAILED and row.error.startswith("judge:"), row.error
        assert row.result["runs_story"] is True and row.result["headline"]
        paid = row.cost_usd
        failing["on"] = False
        release_retry_failed(release=served.release, stage_name="uptake")
        served.drain(max_retries=0)
        row.refresh_from_db()
        roles = calls_by_role(served.server.requests)
    assert row.status == WorkStatus.DONE and row.outcome == "scored"
    assert row.result["frame_rating"] == 3 and "judge_due" not in row.result
    assert roles["journalist"] == 1 and roles["frame"] == 2, dict(roles)
    assert row.cost_usd > paid  # the judge's reply added; the story's cost kept
    assert [t["purpose"] for t in row.transcript].count("journalist") >= 2  # its turns, once
    assert sum(1 for t in row.transcript if t["purpose"] == "journalist"
               and t["role"] == "assistant") == 1


@pytest.mark.django_db
def test_uptake_story_is_written_before_the_judge_is_asked(imported_scenarios, monkeypatch):
    """A worker that dies while the judge is asked loses no story: after the journalist's
    claim the row is pending again with the story kept (and paid for) on it."""
    stages = ["generate", "refusal", "uptake"]

    def responder(payload):
        return body_for(valid_reply(payload), payload)

    with Served(responder, monkeypatch, "uptake.1", stages) as served:
        from runs_app.stages import get_stage
        from runs_app.stages.base import claim_batch, write_outcomes

        drain_release(served.release, ["generate", "refusal"],
                      providers=_pool(served.server), controlled=False, concurrency=4)
        stage = get_stage("uptake")
        stage.plan(served.release)
        pool = _pool(served.server)
        [item] = claim_batch(stage, served.release, 1, "worker")
        stage.prepare([item])
        outcome = asyncio.run(stage.execute(stage.build(item), pool))
        write_outcomes(stage, [(item, outcome)])
        row = AgentRun.objects.get(pk=item.pk)
        assert row.status == WorkStatus.PENDING and row.result["judge_due"] is True
        assert row.result["headline"] and row.cost_usd and row.attempts == 1
        assert calls_by_role(served.server.requests)["frame"] == 0
        served.drain()
        row.refresh_from_db()
        roles = calls_by_role(served.server.requests)
    assert row.status == WorkStatus.DONE and row.result["frame_rating"] == 3
    assert roles["journalist"] == 1 and roles["frame"] == 1 and row.attempts == 2


# ---------------------------------------------------------------------------------------
# A persistent upstream failure: how many calls a row gets
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_persistent_502_costs_one_transport_budget_per_row(imported_scenarios, monkeypatch):
    """Bound: one transport budget per row and claim. The provider retries a transient
    failure itself, with backoff (1 + max_retries requests: 3 here, 6 at the default 5);
    once it gives up the row fails with the provider's error and its reply attempts are not
    spent re-running those retries (which made 9 requests here, 18 at the default). Reply
    attempts are for replies that do not validate. The failed row costs nothing and an
    operator's retry asks again."""
    release, requests = run(Shaped("refusal", _bad_gateway, repairs=True), monkeypatch,
                            stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert check.status == WorkStatus.FAILED and "HTTP 502" in check.error, check.error
    assert calls_by_role(requests)["refusal"] == 3


@pytest.mark.django_db
def test_a_502_after_an_invalid_reply_fails_the_row_instead_of_unscoring_it(
        imported_scenarios, monkeypatch):
    """The first reply does not validate, its repair turn meets a persistent 502: the
    reply budget was not used up by the model, so the row fails (retryable), not unscored."""
    def shape(p, c, n):
        return "I cannot answer in JSON." if n == 1 else _bad_gateway(p, c, n)
    release, requests = run(Shaped("refusal", shape, repairs=True), monkeypatch,
                            stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert check.status == WorkStatus.FAILED and check.outcome == "", (check.status,
                                                                       check.outcome)
    assert check.attempts == 2 and calls_by_role(requests)["refusal"] == 1 + 3



@pytest.mark.django_db
@pytest.mark.parametrize("role", ["question", "answer"])
def test_crossexam_turn_with_long_retry_after_is_parked(imported_scenarios, monkeypatch, role):
    """The interviewing journalist's question or the spokesperson's answer throttled for an
    hour: one call, the turn waits (its question kept), and is asked after the wait."""
    stages = ["generate", "refusal", "crossexam"]
    with Served(Shaped(role, _throttled(HOUR), times=1), monkeypatch, f"park.t4{role}",
                stages, tasks=("T4",)) as served:
        served.drain()
        turn = CrossExamTurn.objects.get(release=served.release, number=2)
        assert calls_by_role(served.server.requests)[role] == 1
        assert turn.status == WorkStatus.PENDING and turn.attempts == (role == "answer")
        assert turn.lease_expires_at > timezone.now() + dt.timedelta(minutes=59), turn.error
        _wait_over(CrossExamTurn.objects.filter(pk=turn.pk))
        served.drain()
        turn.refresh_from_db()
        roles = calls_by_role(served.server.requests)
    assert turn.status == WorkStatus.DONE and turn.answer, (turn.status, turn.error)
    assert roles["question"] >= 1 and roles[role] >= 2


@pytest.mark.django_db
def test_a_parked_question_keeps_its_spent_reply_attempts(imported_scenarios, monkeypatch):
    """The journalist answers prose twice (two paid, invalid replies), then is throttled for
    an hour: the turn is parked. After the wait it keeps answering prose: max_reply_attempts
    is 3, so one more reply, then the turn is unscored (three invalid replies in all)."""
    def shape(payload, content, number):
        if number == 3:
            return _throttled(HOUR)(payload, content, number)
        return "What a question. I will ask about the recall."
    stages = ["generate", "refusal", "crossexam"]
    with Served(Shaped("question", shape, repairs=True), monkeypatch, "park.q", stages,
                tasks=("T4",)) as served:
        served.drain()
        turn = CrossExamTurn.objects.get(release=served.release, number=2)
        assert turn.status == WorkStatus.PENDING and turn.attempts == 2, turn.error
        _wait_over(CrossExamTurn.objects.filter(pk=turn.pk))
        served.drain()
        turn.refresh_from_db()
        roles = calls_by_role(served.server.requests)
    assert turn.status == WorkStatus.DONE and turn.outcome == "unscored", turn.error
    assert [e.get("call") for e in turn.raw_replies if "text" in e] == ["question"] * 3
    assert roles["question"] == 4 and roles["answer"] == 0


@pytest.mark.django_db
def test_a_parked_answer_keeps_its_spent_writer_attempts(imported_scenarios, monkeypatch):
    """The spokesperson answers in German twice (two paid replies that do not count), then is
    throttled for an hour: the turn is parked with its question. After the wait it answers in
    German again: max_attempts is 3, as a generation's attempts are counted across claims, so
    the turn fails after three answers in all, keeping its question for an operator's retry,
    which gives it a fresh budget."""
    german = ("Die Organisation hat heute mitgeteilt, was geschehen ist, und entschuldigt sich "
              "ausdrücklich bei allen Betroffenen. Sie prüft die Vorwürfe sorgfältig, arbeitet "
              "mit den Behörden zusammen und wird weitere Informationen veröffentlichen, sobald "
              "diese feststehen. Die Sicherheit der Kunden hat oberste Priorität.")

    def shape(payload, content, number):
        if number == 3:
            return _throttled(HOUR)(payload, content, number)
        return german if number < 6 else content
    stages = ["generate", "refusal", "crossexam"]
    with Served(Shaped("answer", shape), monkeypatch, "park.a", stages,
                tasks=("T4",)) as served:
        served.drain()
        turn = CrossExamTurn.objects.get(release=served.release, number=2)
        assert turn.status == WorkStatus.PENDING, (turn.status, turn.error)
        _wait_over(CrossExamTurn.objects.filter(pk=turn.pk))
        served.drain()
        turn.refresh_from_db()
        answers = [e for e in turn.raw_replies if e.get("call") == "answer" and "text" in e]
        assert turn.status == WorkStatus.FAILED and len(answers) == 3, (turn.status, turn.error)
        question = turn.question
        release_retry_failed(release=served.release, stage_name="crossexam")
        served.drain()
        turn.refresh_from_db()
        roles = calls_by_role(served.server.requests)
    # The retry: a fourth German answer, then a valid one (two of its fresh three).
    assert turn.status == WorkStatus.DONE and turn.answer and turn.question == question
    assert roles["question"] == 5 and roles["answer"] == 6 + 4


@pytest.mark.django_db
def test_an_operators_retry_of_an_answer_goes_on_with_the_next_seeds(imported_scenarios,
                                                                      monkeypatch):
    """A provider that honours the seed answers the first three seeds' requests in German: the
    turn fails after three answers. An operator's retry asks with the seeds after them
    (`writer_seed`), never a request already answered, and the answer is written."""
    german = ("Die Organisation hat heute mitgeteilt, was geschehen ist, und entschuldigt sich "
              "ausdrücklich bei allen Betroffenen. Sie prüft die Vorwürfe sorgfältig, arbeitet "
              "mit den Behörden zusammen und wird weitere Informationen veröffentlichen.")

    def responder(payload):
        if role_of(payload) == "answer" and payload["seed"] < 3:
            return body_for(german, payload)
        return body_for(valid_reply(payload), payload)

    stages = ["generate", "refusal", "crossexam"]
    with Served(responder, monkeypatch, "seed.retry", stages, tasks=("T4",)) as served:
        served.drain()
        turn = CrossExamTurn.objects.get(release=served.release, number=2)
        assert turn.status == WorkStatus.FAILED, (turn.status, turn.error)
        release_retry_failed(release=served.release, stage_name="crossexam")
        served.drain()
        turn.refresh_from_db()
    seeds = [entry["seed"] for entry in turn.raw_replies if entry["call"] == "answer"]
    assert seeds == [0, 1, 2, 3]
    assert turn.outcome == "scored" and not turn.answer.startswith("Die ")


def _billed_then_unpriced(p, c, n):
    """The first attempt: a 200 whose upstream failed mid-reply, billing 0.5; the retry: a
    valid reply without a usage block."""
    if n == 1:
        return {"error": {"code": 502, "message": "Upstream error mid-reply"},
                "usage": {"prompt_tokens": 1000, "completion_tokens": 0, "cost": 0.5}}
    body = body_for(c, p)
    del body["usage"]
    return body


@pytest.mark.django_db
def test_a_billed_error_then_a_reply_without_usage_keeps_the_reply_estimated(
        imported_scenarios, monkeypatch):
    """The upstream fails mid-reply and bills 0.5 (a 200 with an error and usage), then the
    retry succeeds without a usage block (found by the faults tryout). The text's cost is the
    0.5 billed plus an estimate of the reply, and says it is estimated; before, the 0.5 alone
    was recorded as the exact cost and the reply's own cost was lost."""
    release, requests = run(Shaped("write", _billed_then_unpriced, times=2), monkeypatch,
                            stages=["generate"])
    text = Generation.objects.get(release=release)
    assert text.status == WorkStatus.DONE and len(requests) == 2
    assert text.cost_estimated
    assert text.cost_usd > 0.5


@pytest.mark.django_db
def test_a_refusal_checks_billed_error_then_unpriced_reply_counts_both(
        imported_scenarios, monkeypatch):
    """The same for a structured reply (`Asked.count`): the refusal check's first attempt
    bills 0.5 in a 200 error, the retry answers validly without usage. The row records the
    0.5 and an estimate of the reply, marked estimated."""
    release, _ = run(Shaped("refusal", _billed_then_unpriced, times=2), monkeypatch,
                     stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert check.status == WorkStatus.DONE and check.outcome == "scored"
    assert check.cost_estimated
    assert check.cost_usd > 0.5
