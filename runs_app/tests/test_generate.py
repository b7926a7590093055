"""The generation stage against a fake OpenRouter server on loopback (DESIGN section 5)."""

from __future__ import annotations

import pytest

from runs_app.models import Generation, GenerationAttempt, WorkStatus
from runs_app.providers.pool import ProviderPool
from runs_app.selectors import stage_progress
from runs_app.services import release_freeze, release_retry_failed
from runs_app.stages import get_stage
from runs_app.stages.base import drain
from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.tests.releases import openrouter_release


@pytest.fixture
def server():
    with FakeOpenRouter() as fake:
        yield fake


def run_generate(release, server, concurrency: int = 8):
    pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="test-key",
                        backoff_base=0.01, backoff_cap=0.05, max_retries=2)
    return drain(get_stage("generate"), release, concurrency=concurrency, providers=pool)


@pytest.mark.django_db
def test_it_writes_one_text_per_cell_with_the_provider_log(imported_scenarios, server):
    release = openrouter_release()
    report = run_generate(release, server)
    generations = Generation.objects.filter(release=release)
    assert report.finished == generations.count() == 2 * 1 * 2 * 2
    assert server.count() == 8
    for generation in generations:
        assert generation.status == WorkStatus.DONE
        assert generation.text
        assert generation.upstream_provider == "FakeUpstream"
        assert generation.provider_generation_id.startswith("gen-")
        assert generation.prompt_tokens > 0 and generation.cost_usd is not None
        assert len(generation.prompt_hash) == 64


@pytest.mark.django_db
def test_it_asks_for_no_fallbacks_and_the_budget_plus_reasoning(imported_scenarios, server):
    run_generate(openrouter_release(), server)
    for request in server.requests:
        assert request.body["provider"] == {"allow_fallbacks": False, "require_parameters": True}
        assert request.body["max_tokens"] == 900 + 16_000
        assert "reasoning" not in request.body


@pytest.mark.django_db
def test_every_model_gets_the_same_words(imported_scenarios, server):
    run_generate(openrouter_release(), server)
    prompts: dict[tuple, dict[str, str]] = {}
    for generation in Generation.objects.filter(release__code="or.0").select_related("model"):
        key = (generation.task, generation.condition)
        prompts.setdefault(key, {})[generation.model.openrouter_id] = generation.prompt_hash
    sent = {}
    for request in server.requests:
        sent.setdefault(request.body["model"], []).append(request.body["messages"])
    assert sorted(map(str, sent["acme/writer-a"])) == sorted(map(str, sent["beta/writer-b"]))
    for hashes in prompts.values():
        assert len(set(hashes.values())) == 1
    assert len({next(iter(h.values())) for h in prompts.values()}) == len(prompts)


@pytest.mark.django_db
def test_every_model_gets_the_same_dutch_words_and_c3_adds_one_sentence(
    imported_scenarios, server
):
    release = openrouter_release(
        code="nl.0", language="nl", scenarios=["holtmare-risicoscan-bijstand"],
        tasks=["T1", "T2", "T3", "T4"], conditions=["C0", "C1", "C2", "C3"],
    )
    run_generate(release, server)
    sent: dict[str, list[str]] = {}
    for request in server.requests:
        sent.setdefault(request.body["model"], []).append(str(request.body["messages"]))
    prompts: dict[tuple[str, str], set[str]] = {}
    for generation in Generation.objects.filter(release=release):
        prompts.setdefault((generation.task, generation.condition), set()).add(generation.prompt)

    assert sorted(sent["acme/writer-a"]) == sorted(sent["beta/writer-b"])
    assert len(set(sent["acme/writer-a"])) == 16
    assert all(len(texts) == 1 for texts in prompts.values()) and len(prompts) == 16
    sentence = ", maar blijf binnen de feiten."
    for task in ("T1", "T2", "T3", "T4"):
        [with_c1], [with_c3] = prompts[task, "C1"], prompts[task, "C3"]
        assert "Zet haar zo gunstig mogelijk neer" in with_c1 and sentence not in with_c1
        assert with_c3.replace(sentence, ".", 1) == with_c1


@pytest.mark.django_db
def test_running_again_calls_nothing_that_finished(imported_scenarios, server):
    release = openrouter_release()
    run_generate(release, server)
    calls = server.count()
    again = run_generate(release, server)
    assert again.finished == 0 and again.planned == 0
    assert server.count() == calls


@pytest.mark.django_db
def test_a_length_finish_is_generated_again_and_both_attempts_are_kept(imported_scenarios, server):
    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"])
    server.enqueue_length_finish()
    run_generate(release, server)
    generation = Generation.objects.get(release=release)
    assert generation.status == WorkStatus.DONE and generation.finish_reason == "stop"
    attempts = list(generation.attempt_log.values_list("outcome", flat=True))
    assert attempts == [GenerationAttempt.Outcome.LENGTH, GenerationAttempt.Outcome.OK]
    assert generation.attempts == 2 and server.count() == 2


@pytest.mark.django_db
def test_empty_content_is_generated_again(imported_scenarios, server):
    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"])
    server.enqueue_empty_content()
    run_generate(release, server)
    generation = Generation.objects.get(release=release)
    assert [a.outcome for a in generation.attempt_log.all()] == ["empty", "ok"]


@pytest.mark.django_db
def test_attempts_are_capped_then_the_cell_fails_with_the_reason(imported_scenarios, server):
    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"],
                                 max_attempts=2)
    server.enqueue_length_finish()
    server.enqueue_length_finish()
    run_generate(release, server)
    generation = Generation.objects.get(release=release)
    assert generation.status == WorkStatus.FAILED
    assert "finish_reason: length" in generation.error
    assert generation.attempt_log.count() == 2 and server.count() == 2


def attempt_totals(generation: Generation) -> tuple[int, int, float]:
    attempts = list(generation.attempt_log.all())
    return (sum(a.prompt_tokens for a in attempts), sum(a.completion_tokens for a in attempts),
            round(sum(a.cost_usd or 0 for a in attempts), 8))


@pytest.mark.django_db
def test_a_failed_cell_still_counts_what_its_attempts_cost(imported_scenarios, server):
    # Two texts cut off at the budget were paid for: "cost so far" must show them.
    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"],
                                 max_attempts=2)
    server.enqueue_length_finish()
    server.enqueue_length_finish()
    run_generate(release, server)
    generation = Generation.objects.get(release=release)
    assert generation.status == WorkStatus.FAILED
    prompt_tokens, completion_tokens, cost = attempt_totals(generation)
    assert cost > 0
    assert (generation.prompt_tokens, generation.completion_tokens,
            round(generation.cost_usd, 8)) == (prompt_tokens, completion_tokens, cost)
    assert round(stage_progress(release, "generate").cost_usd, 8) == cost

    release_retry_failed(release=release, stage_name="generate")
    run_generate(release, server)
    generation.refresh_from_db()
    assert generation.status == WorkStatus.DONE
    assert (generation.prompt_tokens, generation.completion_tokens,
            round(generation.cost_usd, 8)) == attempt_totals(generation)


@pytest.mark.django_db
def test_each_attempt_of_a_text_is_asked_with_the_next_seed(imported_scenarios, server):
    # A seed-honouring provider answers a request it was sent before the same way again: a
    # text cut at the budget is asked again with the next seed, an operator's retry going
    # on from the last one, and every attempt and the text keep theirs (`writer_seed`).
    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"],
                                 variants=2, max_attempts=2)
    for _ in range(4):
        server.enqueue_length_finish()
    run_generate(release, server)
    release_retry_failed(release=release, stage_name="generate")
    run_generate(release, server)
    for generation in Generation.objects.filter(release=release):
        variant = generation.variant
        seeds = [a.seed for a in generation.attempt_log.all()]
        outcomes = [a.outcome for a in generation.attempt_log.all()]
        assert generation.status == WorkStatus.DONE, generation.error
        assert seeds == [variant, variant + 2, variant + 4]
        assert outcomes == ["length", "length", "ok"] and generation.seed == variant + 4
    sent = sorted(request.body["seed"] for request in server.requests)
    assert sent == [0, 1, 2, 3, 4, 5]  # never the same request twice, never another variant's


@pytest.mark.django_db
def test_a_permanent_error_fails_the_cell_once_and_an_operator_can_retry(
    imported_scenarios, server
):
    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"])
    server.enqueue(401, body={"error": {"code": 401, "message": "No auth credentials found"}})
    run_generate(release, server)
    generation = Generation.objects.get(release=release)
    assert generation.status == WorkStatus.FAILED
    assert "401" in generation.error and "No auth credentials" in generation.error
    assert server.count() == 1

    assert release_retry_failed(release=release, stage_name="generate") == 1
    run_generate(release, server)
    generation.refresh_from_db()
    assert generation.status == WorkStatus.DONE
    assert [a.number for a in generation.attempt_log.all()] == [1, 2]
    assert server.count() == 2


@pytest.mark.django_db
def test_it_records_that_no_upstream_provider_was_reported(imported_scenarios, server):
    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"])
    server.enqueue_without_provider()
    run_generate(release, server)
    assert Generation.objects.get(release=release).upstream_provider is None


@pytest.mark.django_db
def test_retryable_errors_are_retried_by_the_provider(imported_scenarios, server):
    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"])
    server.enqueue(429, headers={"Retry-After": "0"})
    server.enqueue(502)
    server.enqueue_error_in_200(502, "upstream overloaded")
    run_generate(release, server)
    generation = Generation.objects.get(release=release)
    assert generation.status == WorkStatus.DONE
    assert server.count() == 4


@pytest.mark.django_db
def test_the_fixture_demo_generates_every_cell_offline(demo_release):
    release = release_freeze(release=demo_release)
    drain(get_stage("generate"), release)
    generations = Generation.objects.filter(release=release)
    assert generations.count() == 4 * 8 * 4 * 4
    assert not generations.exclude(status=WorkStatus.DONE).exists()
    assert set(generations.values_list("upstream_provider", flat=True)) == {"fixture"}


@pytest.mark.django_db
def test_a_live_worker_keeps_its_claims_past_the_lease(imported_scenarios, settings):
    # Calls outlast the lease; without renewal the worker would reclaim (and pay for) rows
    # it still holds in flight or waiting to start.
    settings.BAITBENCH_LEASE_SECONDS = 1
    release = openrouter_release(tasks=["T1"], conditions=["C0", "C2"])
    with FakeOpenRouter(latency=0.7) as slow:
        run_generate(release, slow, concurrency=1)
        assert slow.count() == 4
    assert Generation.objects.filter(release=release, status=WorkStatus.DONE).count() == 4


@pytest.mark.django_db
def test_each_attempt_is_written_as_soon_as_it_returns(imported_scenarios, server):
    # A worker killed after a paid `length` attempt must not lose it: the attempt is kept and
    # the cell goes back to pending before the next attempt is made.
    import asyncio

    from runs_app.stages.base import claim_batch, write_outcomes

    release = openrouter_release(tasks=["T1"], conditions=["C0"], writers=["acme/writer-a"])
    stage = get_stage("generate")
    stage.plan(release)
    server.enqueue_length_finish()
    [item] = claim_batch(stage, release, 1, "worker-1")
    pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="test-key")

    job = stage.build(item)

    async def one_call():
        try:
            return await stage.execute(job, pool)
        finally:
            await pool.aclose()

    assert write_outcomes(stage, [(item, asyncio.run(one_call()))]) == [item]
    generation = Generation.objects.get(release=release)
    assert generation.status == WorkStatus.PENDING and generation.attempts == 1
    assert [a.outcome for a in generation.attempt_log.all()] == ["length"]
    assert generation.completion_tokens > 0 and not generation.claim_token

    run_generate(release, server)
    generation.refresh_from_db()
    assert generation.status == WorkStatus.DONE
    assert [a.outcome for a in generation.attempt_log.all()] == ["length", "ok"]
    assert server.count() == 2


def test_text_ids_do_not_run_in_blocks_per_writer(imported_scenarios):
    """Ids appear in links and titles: planned writer by writer they would tell which texts
    share a writer (the first block is the first model's) to anyone checking them blind."""
    release = openrouter_release(tasks=["T1", "T2", "T3"], conditions=["C0", "C1", "C2", "C3"],
                                 variants=4)
    get_stage("generate").plan(release)
    writers = list(Generation.objects.filter(release=release).order_by("pk")
                   .values_list("model_id", flat=True))
    changes = sum(1 for earlier, later in zip(writers, writers[1:], strict=False)
                  if earlier != later)
    # Two writers: in blocks the writer changes once; shuffled, at about every other text
    # (48 of 96 expected, 20 or fewer about once in ten million plans).
    assert len(writers) == 96 and changes > 20, changes


def test_two_variants_are_two_texts_per_cell_and_planning_again_adds_none(imported_scenarios):
    release = openrouter_release(variants=2)
    stage = get_stage("generate")
    assert stage.plan(release) == 2 * 1 * 2 * 2 * 2  # writers x scenarios x tasks x conditions x 2
    keys = list(Generation.objects.filter(release=release).values_list(
        "model_id", "scenario_version_id", "task", "condition", "variant"))
    assert len(set(keys)) == len(keys) == 16
    assert {key[-1] for key in keys} == {0, 1}
    assert stage.plan(release) == 0
    assert Generation.objects.filter(release=release).count() == 16
