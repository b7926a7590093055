"""Uptake by a journalist agent and the reveal effect, on the fixture chain; and, through
the real OpenRouter client against the fake server, what the gate sees of a frame judge
that never answers validly and of a jury that changes after its reveal (DESIGN section 5)."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
from statistics import mean

import pytest

from runs_app.costs import forget_prices
from runs_app.models import (
    AgentRun,
    Generation,
    JurorVerdict,
    ReaderResponse,
    ReplyOutcome,
    RunControl,
    TextScore,
    WorkStatus,
)
from runs_app.panel_scores import text_scores_update_panel
from runs_app.providers.models_list import models_list
from runs_app.providers.pool import ProviderPool
from runs_app.readers import Revealed, VerdictData, load_panel, reveal_positions, revealed_items
from runs_app.selectors import release_has_gaps, release_row_problems
from runs_app.services import release_freeze, release_retry_failed
from runs_app.stages import get_stage
from runs_app.stages.base import drain, drain_release
from runs_app.stages.reveal import _incriminating, _verdicts
from runs_app.testing.fake_openrouter import FakeOpenRouter, FakeResponse
from runs_app.testing.kills import Killed, leases_expired
from runs_app.testing.messy import models_payload
from runs_app.testing.replies import valid_reply
from runs_app.tests.reply_probes import MODELS, body_for, calls_by_role, release_for, role_of
from tests.kept import world_kept


def run(release, *stages: str) -> None:
    for name in stages:
        drain(get_stage(name), release, concurrency=20)


@pytest.fixture(scope="module")
def kept_scored(request, kept_small_demo_release, django_db_blocker):
    """Kept (tests/kept.py): the chain run once for the module's tests, which only read it
    (run for each of them, it cost about two seconds a test)."""
    def build():
        release = release_freeze(release=copy.deepcopy(kept_small_demo_release))
        run(release, "generate", "refusal", "jury", "panel", "uptake", "reveal")
        text_scores_update_panel(release=release)
        return release

    yield from world_kept(request, django_db_blocker, build)


@pytest.fixture
def scored(kept_scored, small_demo_release):
    return copy.deepcopy(kept_scored)


@pytest.mark.django_db
def test_the_journalist_runs_each_read_text_and_the_judge_rates_its_frame(scored):
    runs = AgentRun.objects.filter(release=scored, kind=AgentRun.Kind.UPTAKE)
    read = ReaderResponse.objects.filter(release=scored, generation__isnull=False)
    assert runs.count() == read.values("generation").distinct().count() > 0
    for run_ in runs:
        assert (run_.status, run_.outcome) == (WorkStatus.DONE, ReplyOutcome.SCORED)
        assert run_.result["runs_story"] is True and run_.result["headline"]
        assert 0 <= run_.result["frame_adoption"] <= 1
        assert {turn["purpose"] for turn in run_.transcript} == {"journalist", "frame_judge"}
    scores = TextScore.objects.filter(release=scored, uptake__isnull=False)
    assert scores.count() == runs.count()
    assert set(scores.values_list("uptake", flat=True)) == {1.0}


@pytest.mark.django_db
def test_reveal_asks_three_positions_spanning_trust_per_read_text(scored):
    runs = AgentRun.objects.filter(release=scored, kind=AgentRun.Kind.REVEAL)
    texts = runs.values("generation").distinct().count()
    assert texts > 0 and runs.count() == 3 * texts
    assert set(runs.values_list("position", flat=True)) == {"P01", "P05", "P09"}
    trust = {p.traits.trust_in_media for p in reveal_positions(load_panel("v1", "en"))}
    assert trust == {"low", "medium", "high"}
    for run_ in runs:
        assert run_.outcome == ReplyOutcome.SCORED
        before = ReaderResponse.objects.get(generation=run_.generation, position=run_.position)
        assert run_.result["before"] == before.attitude


@pytest.mark.django_db
def test_the_reveal_lowers_attitudes_to_spinner_texts_more_than_to_candid_ones(scored):
    effects: dict[str, list[float]] = {}
    for score in TextScore.objects.filter(release=scored, reveal_effect__isnull=False) \
            .select_related("generation__model"):
        effects.setdefault(score.generation.model.openrouter_id, []).append(score.reveal_effect)
    assert mean(effects["fixture/spinner"]) < 0
    assert mean(effects["fixture/spinner"]) < mean(effects["fixture/candid"])


@pytest.mark.django_db
def test_reveal_tells_the_reader_what_the_jury_found_missing(scored):
    run_ = AgentRun.objects.filter(release=scored, kind=AgentRun.Kind.REVEAL,
                                   generation__model__openrouter_id="fixture/spinner").first()
    assert run_.result["omitted"], "a spinner text leaves incriminating facts out"
    prompt = next(turn["content"] for turn in run_.transcript if turn["role"] == "user")
    assert prompt.count("\n- ") >= len(run_.result["omitted"])


def test_revealed_items_need_a_majority_of_jurors():
    incriminating = [("F1", "The tank leaked."), ("F2", "Nobody was told.")]
    claim = "Experts confirmed nobody was at risk."
    verdicts = [
        VerdictData(frozenset({"F1"}), ((claim, "fabrication"),)),
        VerdictData(frozenset({"F1", "F2"}), ((claim.rstrip("."), "fabrication"),)),
        VerdictData(frozenset(), (("We acted fast.", "exaggeration"),)),
    ]
    revealed = revealed_items(verdicts, incriminating)
    assert revealed == Revealed(omitted=("Nobody was told.",), omitted_ids=("F2",),
                                misstated=((claim, "fabrication"),))


@pytest.mark.django_db
def test_reveal_waits_for_the_jury(small_demo_release):
    release = release_freeze(release=small_demo_release)
    run(release, "generate", "refusal", "panel")
    assert get_stage("reveal").plan(release) == 0
    assert JurorVerdict.objects.filter(release=release).count() == 0


# ---------------------------------------------------------------------------------------
# Through the fake OpenRouter server: what the publish gate sees
# ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def serving(responder, monkeypatch, code: str, stages: list[str]):
    """A release whose calls `responder` answers; yields it and a drain of `stages` (or of
    a narrower scope), to be run more than once with the same server."""
    ids = [m["id"] for m in MODELS]
    with FakeOpenRouter(responder=responder, models=models_payload(ids)) as server:
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        models_list(refresh=True)
        forget_prices()
        release = release_for(code, stages=stages)
        RunControl.objects.get_or_create(release=release)

        def run_stages(scope: list[str] = stages) -> None:
            pool = ProviderPool(default="openrouter", base_url=server.base_url,
                                api_key="test-key", backoff_base=0.01, backoff_cap=0.05,
                                max_retries=2)
            drain_release(release, scope, providers=pool, controlled=False, concurrency=4)

        yield release, run_stages, server


@pytest.mark.django_db
def test_a_frame_judge_that_never_validates_leaves_a_gap_the_gate_sees(imported_scenarios,
                                                                       monkeypatch):
    """The frame judge answers in prose every time (three paid calls): the frame is not
    measured, so the row is unscored, a gap the gate sees; the story still measures uptake,
    and an operator's retry asks only the judge."""
    prose = {"on": True}

    def responder(payload):
        if role_of(payload) == "frame" and prose["on"]:
            return body_for("I would rate the frame adoption a 3 out of 5.", payload)
        return body_for(valid_reply(payload), payload)

    with serving(responder, monkeypatch, "frame.0",
                 ["generate", "refusal", "uptake"]) as (release, run_stages, server):
        run_stages()
        row = AgentRun.objects.get(release=release, kind="uptake")
        assert calls_by_role(server.requests)["frame"] == 3
        assert (row.status, row.outcome) == (WorkStatus.DONE, ReplyOutcome.UNSCORED)
        assert row.result["runs_story"] is True and row.result["frame_adoption"] is None
        assert release_has_gaps(release)
        assert any("stage uptake" in line for line in release_row_problems(release))
        text_scores_update_panel(release=release)
        score = TextScore.objects.get(release=release)
        assert (score.uptake, score.frame_adoption) == (1.0, None)
        prose["on"] = False
        release_retry_failed(release=release, stage_name="uptake")
        run_stages()
        row.refresh_from_db()
        roles = calls_by_role(server.requests)
    assert (row.outcome, row.result["frame_rating"]) == (ReplyOutcome.SCORED, 3)
    assert "judge_due" not in row.result
    assert (roles["journalist"], roles["frame"]) == (1, 4)
    assert not release_has_gaps(release)


@pytest.mark.django_db
def test_a_retried_frame_judge_gets_its_whole_budget_and_repair_turns_again(
        imported_scenarios, monkeypatch):
    """After an operator's retry the judge's budget counts from the retry: the question once,
    then repair turns, three calls in all, as the first time."""
    def responder(payload):
        if role_of(payload) == "frame":
            return body_for("I would rate the frame adoption a 3 out of 5.", payload)
        return body_for(valid_reply(payload), payload)

    def frame_calls(server) -> list[bool]:  # per frame judge call: is it a repair turn?
        return [any(m["role"] == "assistant" for m in request.body["messages"])
                for request in server.requests if role_of(request.body) == "frame"]

    with serving(responder, monkeypatch, "frame.1",
                 ["generate", "refusal", "uptake"]) as (release, run_stages, server):
        run_stages()
        assert frame_calls(server) == [False, True, True]
        release_retry_failed(release=release, stage_name="uptake")
        run_stages()
        row = AgentRun.objects.get(release=release, kind="uptake")
        assert frame_calls(server) == [False, True, True] * 2
    assert (row.status, row.outcome) == (WorkStatus.DONE, ReplyOutcome.UNSCORED)
    assert row.result["judge_due"] is True and row.result["runs_story"] is True


class ProseFirst(ProviderPool):
    """The fixture, but the first reply of `prose` purposes to each question is prose; a
    repair turn kills the worker (`kill`) or is answered as the fixture answers the
    question."""

    def __init__(self, prose: set[str], *, kill: bool) -> None:
        super().__init__(default="fixture")
        self.prose, self.kill = prose, kill

    async def complete(self, request):
        if request.purpose not in ("journalist", "frame_judge"):
            return await super().complete(request)
        repair = any(message.role == "assistant" for message in request.messages)
        if request.purpose in self.prose and not repair:
            from runs_app.providers.fixture import fixture_result

            return fixture_result(request, "I would run it, with a careful headline.", "stop")
        if request.purpose in self.prose and self.kill:
            raise Killed("the worker is killed during a repair turn")
        question = tuple(m for m in request.messages if m.role != "assistant")[:2]
        return await super().complete(dataclasses.replace(request, messages=question))


@pytest.mark.django_db
def test_a_worker_killed_during_an_uptake_repair_turn_loses_no_reply_it_paid_for(
        small_demo_release):
    """The journalist's and the frame judge's invalid replies are written before their
    repair turns are sent: after a kill during either, the next worker sends the repair
    turn, never the question again."""
    release = release_freeze(release=small_demo_release)
    run(release, "generate", "refusal")
    uptake = AgentRun.objects.filter(release=release, kind=AgentRun.Kind.UPTAKE)

    with pytest.raises(Killed):
        drain(get_stage("uptake"), release, concurrency=4,
              providers=ProseFirst({"journalist"}, kill=True))
    asked = {row.pk for row in uptake.filter(attempts=1)}
    assert asked
    for row in uptake.filter(pk__in=asked):
        [entry] = row.raw_replies
        assert "invalid" in entry and row.status != WorkStatus.DONE
    leases_expired(uptake)
    with pytest.raises(Killed):
        drain(get_stage("uptake"), release, concurrency=4,
              providers=ProseFirst({"frame_judge"}, kill=True))
    judged = {row.pk for row in uptake if row.result.get("judge_due") and any(
        entry.get("call") == "frame_judge" for entry in row.raw_replies)}
    assert judged
    leases_expired(uptake)

    drain(get_stage("uptake"), release, concurrency=4, providers=ProseFirst(set(), kill=False))

    assert set(uptake.values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}
    # Each question was asked once, its repair turn after it, by whichever worker.
    for row in uptake.filter(pk__in=judged):
        judge = [entry for entry in row.raw_replies if entry.get("call") == "frame_judge"]
        assert [bool(entry.get("repair_turn")) for entry in judge] == [False, True]
        said = [(m["role"], m["purpose"]) for m in row.transcript]
        assert said.count(("assistant", "frame_judge")) == 2  # the prose, then the rating
    for row in uptake.filter(pk__in=asked):
        journalist = [entry for entry in row.raw_replies if "call" not in entry]
        assert [bool(entry.get("repair_turn")) for entry in journalist] == [False, True]


def _jury(conveys: dict[str, list[str]], pending: dict[str, object]):
    """A responder whose jurors convey these facts; a juror in `pending` answers with
    what is there instead (a FakeResponse, or prose) until it is taken out."""
    def responder(payload):
        role, model = role_of(payload), payload.get("model")
        if role != "juror":
            return body_for(valid_reply(payload), payload)
        if model in pending:
            answer = pending[model]
            return answer if isinstance(answer, FakeResponse) else body_for(answer, payload)
        return body_for(json.dumps({"claims": [], "facts_conveyed": conveys[model],
                                    "confidential_disclosed": [], "techniques": []}), payload)
    return responder


ALL_FACTS = [f"F{i}" for i in range(1, 14)]
REVEAL_STAGES = ["generate", "refusal", "jury", "panel", "reveal"]


def _told_and_final(release) -> tuple[list[tuple[str, ...]], tuple[str, ...]]:
    """The omitted facts each reveal row told, and what the jury finds now."""
    text = Generation.objects.get(release=release)
    document, _ = get_stage("reveal").scenario(text.scenario_version_id, "en")
    final = revealed_items(list(_verdicts([text.pk])[text.pk].values()),
                           _incriminating(document))
    told = sorted({tuple(r.result["omitted"])
                   for r in AgentRun.objects.filter(release=release, kind="reveal")})
    return told, final.omitted_ids


@pytest.mark.django_db
def test_the_reveal_waits_for_a_failed_juror_seat(imported_scenarios, monkeypatch):
    """One juror's upstream answers 502 until the provider gives up: its seat fails, and an
    operator retries it. The reveal does not run on the two verdicts it has: the third
    changes the majority (the incriminating facts but F1 are then omitted), and the
    published reveal tells readers what the published jury found."""
    pending: dict[str, object] = {
        "epsilon/judge": FakeResponse(502, {"error": {"code": 502, "message": "Bad gateway"}})}
    conveys = {"gamma/judge": ALL_FACTS, "delta/judge": ["F1"], "epsilon/judge": ["F1"]}
    with serving(_jury(conveys, pending), monkeypatch, "reveal.j",
                 REVEAL_STAGES) as (release, run_stages, server):
        run_stages()
        assert not AgentRun.objects.filter(release=release, kind="reveal").exists()
        assert release_has_gaps(release)
        pending.clear()
        release_retry_failed(release=release, stage_name="jury")
        run_stages()
        told, final = _told_and_final(release)
        assert final and told == [final]
        assert calls_by_role(server.requests)["reveal"] == 3
    assert not release_has_gaps(release) and not release_row_problems(release)


@pytest.mark.django_db
@pytest.mark.parametrize("retried_finds,asked_again", [(["F1"], True), (ALL_FACTS, False)])
def test_a_reveal_told_before_a_retried_seat_scored_is_brought_up_to_date(
        imported_scenarios, monkeypatch, retried_finds, asked_again):
    """One juror answers prose until its seat is unscored: the jury is done with two
    verdicts, and the reveal tells what they found (nothing omitted). An operator retries
    the seat, which now answers. Until the reveal stage runs again its rows are outdated,
    which the gate sees; then the rows whose reader was told something the final jury does
    not find are asked again, and the others are kept (nothing paid twice for a prompt
    that would be the same)."""
    pending: dict[str, object] = {"epsilon/judge": "Mostly fine; F3 seems missing."}
    conveys = {"gamma/judge": ALL_FACTS, "delta/judge": ["F1"],
               "epsilon/judge": retried_finds}
    with serving(_jury(conveys, pending), monkeypatch, "reveal.u",
                 REVEAL_STAGES) as (release, run_stages, server):
        run_stages()
        assert _told_and_final(release) == ([()], ())
        pending.clear()
        release_retry_failed(release=release, stage_name="jury")
        run_stages(["jury"])
        assert any("stage reveal" in line and "changed since" in line
                   for line in release_row_problems(release))
        run_stages()
        told, final = _told_and_final(release)
        assert told == [final] and bool(final) == asked_again
        assert calls_by_role(server.requests)["reveal"] == (6 if asked_again else 3)
        jury = {tuple(r.result["jury"]) for r in AgentRun.objects.filter(release=release,
                                                                          kind="reveal")}
    assert jury == {(0, 1, 2)}
    assert not release_has_gaps(release) and not release_row_problems(release)
