"""Replies as real models send them: a shape at a time, through the real OpenRouter client
against the messy fake server (runs_app.testing.messy), generate -> refusal -> jury."""

from __future__ import annotations

import pytest

from runs_app.costs import forget_prices
from runs_app.models import (
    Generation,
    GenerationAttempt,
    JurorVerdict,
    RefusalCheck,
    ReplyOutcome,
    RunControl,
    WorkStatus,
)
from runs_app.providers.models_list import models_list
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig
from runs_app.services import release_create, release_freeze
from runs_app.stages.base import drain_release
from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.testing.messy import GERMAN, REFUSAL, SECRET, MessyReplies, models_payload

WRITERS = ["acme/writer-a", "beta/writer-b"]
JURORS = ["gamma/judge", "delta/judge", "epsilon/judge"]
MODELS = [{"id": model_id, "family": model_id.split("/")[0], "name": model_id}
          for model_id in WRITERS + JURORS]
CELLS = 2 * 2  # writers x conditions (one scenario, T1)
STAGES = ["generate", "refusal", "jury"]


def messy_release(code: str = "messy.0", reasons: dict[str, bool | None] | None = None):
    """`reasons`: what the release declares of some models' reasoning (`models[].reasons`)."""
    models = [model | {"reasons": (reasons or {}).get(model["id"])} for model in MODELS]
    config = ReleaseConfig.model_validate({
        "code": code, "language": "en", "models": models, "writers": WRITERS,
        "jurors": JURORS, "reader": "gamma/judge", "journalist": "gamma/judge",
        "scenarios": ["greenvale-listeria"], "tasks": ["T1"], "conditions": ["C0", "C2"],
        "stages": STAGES, "text_budget": 900, "max_attempts": 3, "max_reply_attempts": 3,
    })
    return release_freeze(release=release_create(config=config))


def run(responder: MessyReplies, monkeypatch,
        reasons: dict[str, bool | None] | None = None) -> tuple:
    listed = models_payload(WRITERS + JURORS, reasoning=tuple(reasons or ()))
    with FakeOpenRouter(responder=responder, models=listed) as server:
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        models_list(refresh=True)  # the prices an unknown cost is estimated from
        forget_prices()
        release = messy_release(reasons=reasons)
        RunControl.objects.get_or_create(release=release)
        pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="test-key",
                            backoff_base=0.01, backoff_cap=0.05, max_retries=2)
        drain_release(release, STAGES, providers=pool, controlled=False, concurrency=4)
        return release, server.requests


def writer_calls(requests) -> int:
    return sum("response_format" not in request.body for request in requests)


@pytest.mark.django_db
def test_a_think_block_is_stored_apart_and_never_scored(imported_scenarios, monkeypatch):
    release, requests = run(MessyReplies(sticky={w: "think_text" for w in WRITERS}),
                            monkeypatch)
    texts = Generation.objects.filter(release=release)
    assert {text.status for text in texts} == {WorkStatus.DONE}
    assert not any("<think>" in text.text or SECRET in text.text for text in texts)
    assert all(SECRET in text.reasoning for text in texts)
    assert writer_calls(requests) == CELLS
    assert JurorVerdict.objects.filter(release=release, outcome=ReplyOutcome.SCORED).count() \
        == CELLS * 3


@pytest.mark.django_db
def test_a_native_length_stop_is_regenerated_then_failed_never_scored(
        imported_scenarios, monkeypatch):
    release, requests = run(MessyReplies(sticky={w: "native_length" for w in WRITERS}),
                            monkeypatch)
    texts = Generation.objects.filter(release=release)
    assert {text.status for text in texts} == {WorkStatus.FAILED}
    assert all("token budget" in text.error and "MAX_TOKENS" in text.error for text in texts)
    assert writer_calls(requests) == CELLS * 3
    assert not RefusalCheck.objects.filter(release=release).exists()


@pytest.mark.django_db
def test_a_chat_wrapper_is_taken_off_and_kept(imported_scenarios, monkeypatch):
    release, requests = run(MessyReplies(sticky={w: "chat_wrapper" for w in WRITERS}),
                            monkeypatch)
    for text in Generation.objects.filter(release=release):
        assert text.status == WorkStatus.DONE
        assert not text.text.startswith("Sure") and "Let me know" not in text.text
        assert [part["part"] for part in text.stripped] == ["opening", "closing"]
    assert writer_calls(requests) == CELLS


@pytest.mark.django_db
def test_another_language_is_caught_and_the_cell_fails_with_the_reason(
        imported_scenarios, monkeypatch):
    release, _ = run(MessyReplies(sticky={w: "other_language" for w in WRITERS}), monkeypatch)
    for text in Generation.objects.filter(release=release):
        assert text.status == WorkStatus.FAILED and "German" in text.error
        assert not text.text
    outcomes = set(GenerationAttempt.objects.filter(generation__release=release)
                   .values_list("outcome", flat=True))
    assert outcomes == {GenerationAttempt.Outcome.LANGUAGE}
    assert GERMAN.split()[0] == "Die"


@pytest.mark.django_db
def test_a_refusal_field_is_the_writer_refusing_with_its_words_and_costs_no_more_calls(
        imported_scenarios, monkeypatch):
    release, requests = run(MessyReplies(sticky={w: "refusal_field" for w in WRITERS}),
                            monkeypatch)
    for text in Generation.objects.filter(release=release):
        assert text.status == WorkStatus.DONE and text.writer_refusal == REFUSAL
        check = text.refusal_check
        assert check.verdict == RefusalCheck.Verdict.REFUSED and REFUSAL in check.reason
        assert check.outcome == ReplyOutcome.SCORED
    assert len(requests) == CELLS  # no classifier call, no juror: refused texts are not judged
    assert not JurorVerdict.objects.filter(release=release).exists()


@pytest.mark.django_db
def test_an_answer_only_in_reasoning_is_no_text_and_its_reasoning_is_kept(
        imported_scenarios, monkeypatch):
    release, _ = run(MessyReplies(sticky={w: "reasoning_only" for w in WRITERS}), monkeypatch)
    assert set(Generation.objects.filter(release=release).values_list("status", flat=True)) \
        == {WorkStatus.FAILED}
    attempts = GenerationAttempt.objects.filter(generation__release=release)
    assert all(attempt.reasoning and attempt.outcome == "empty" for attempt in attempts)


@pytest.mark.django_db
def test_a_juror_that_always_wraps_its_json_in_prose_is_scored_with_no_extra_call(
        imported_scenarios, monkeypatch):
    release, requests = run(MessyReplies(sticky={"delta/judge": "prose_fence"}), monkeypatch)
    verdicts = JurorVerdict.objects.filter(release=release)
    assert verdicts.filter(juror__openrouter_id="delta/judge").count() == CELLS
    assert set(verdicts.values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}
    assert len(requests) == CELLS + CELLS + CELLS * 3  # texts, refusal checks, verdicts


@pytest.mark.django_db
@pytest.mark.parametrize(("shape", "reason"), [
    ("deep_nesting", "nested too deeply"), ("json_length", "token budget"),
])
def test_a_juror_that_never_answers_validly_is_unscored_after_repair_turns(
        imported_scenarios, monkeypatch, shape, reason):
    release, requests = run(MessyReplies(sticky={"delta/judge": shape}), monkeypatch)
    stuck = JurorVerdict.objects.filter(release=release, juror__openrouter_id="delta/judge")
    assert stuck.count() == CELLS
    for verdict in stuck:
        assert verdict.status == WorkStatus.DONE and verdict.outcome == ReplyOutcome.UNSCORED
        assert reason in verdict.error and verdict.attempts == 3
        assert verdict.claims_score is None
    repairs = [r for r in requests if r.model == "delta/judge"
               and "could not be used" in r.body["messages"][-1]["content"]]
    assert len(repairs) == CELLS * 2
    others = JurorVerdict.objects.filter(release=release).exclude(
        juror__openrouter_id="delta/judge")
    assert set(others.values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}


@pytest.mark.django_db
def test_a_juror_that_reasons_unasked_is_scored_when_declared_its_reasoning_capped(
        imported_scenarios, monkeypatch):
    release, requests = run(MessyReplies(sticky={"delta/judge": "reasons_unasked"}),
                            monkeypatch, reasons={"delta/judge": True})
    verdicts = JurorVerdict.objects.filter(release=release, juror__openrouter_id="delta/judge")
    assert verdicts.count() == CELLS
    assert set(verdicts.values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}
    assert all(verdict.attempts == 1 for verdict in verdicts)
    asked = [request.body for request in requests if request.model == "delta/judge"]
    # The reply budget stays whole: 4,000 for the verdict, plus the juror's reasoning cap.
    assert {(body["max_tokens"], str(body.get("reasoning"))) for body in asked} == {
        (4000 + 2048, str({"max_tokens": 2048}))}
    # Models not declared reasoning are sent no reasoning setting, and their usual budget.
    others = [request.body for request in requests if request.model == "gamma/judge"]
    assert others and all("reasoning" not in body for body in others)
    assert {body["max_tokens"] for body in others} == {4000}


@pytest.mark.django_db
def test_a_juror_that_reasons_unasked_with_no_room_is_cut_at_the_limit_and_unscored(
        imported_scenarios, monkeypatch):
    release, requests = run(MessyReplies(sticky={"delta/judge": "reasons_unasked"}),
                            monkeypatch, reasons={"delta/judge": None})
    stuck = JurorVerdict.objects.filter(release=release, juror__openrouter_id="delta/judge")
    assert stuck.count() == CELLS
    for verdict in stuck:
        assert verdict.outcome == ReplyOutcome.UNSCORED and verdict.attempts == 3
        assert "token budget" in verdict.error
    asked = [request.body for request in requests if request.model == "delta/judge"]
    assert {body["max_tokens"] for body in asked} == {4000}
    assert not any("reasoning" in body for body in asked)


@pytest.mark.django_db
def test_byok_costs_count_the_upstream_and_a_missing_cost_is_estimated(
        imported_scenarios, monkeypatch):
    byok = MessyReplies(rates={"byok": 1.0})
    release, _ = run(byok, monkeypatch)
    recorded = sum(row.cost_usd for model in (Generation, RefusalCheck, JurorVerdict)
                   for row in model.objects.filter(release=release))
    assert recorded == pytest.approx(byok.charged_usd, rel=1e-6)
    spent = RunControl.objects.get(release=release).spent_usd
    assert spent == pytest.approx(byok.charged_usd, rel=1e-6)


@pytest.mark.django_db
def test_a_reply_without_usage_is_recorded_as_an_estimate(imported_scenarios, monkeypatch):
    bare = MessyReplies(rates={"no_usage": 1.0})
    release, _ = run(bare, monkeypatch)
    rows = [row for model in (Generation, RefusalCheck, JurorVerdict)
            for row in model.objects.filter(release=release)]
    assert all(row.cost_estimated for row in rows)
    # The estimate uses the list's prices and the tokens the reply would have reported.
    assert sum(row.cost_usd for row in rows) > 0
