"""The simulated public votes on every pair shown: twelve reading positions, in the background,
idempotently, and stored apart from people's votes."""

from __future__ import annotations

import asyncio

import pytest
from django_q.models import OrmQ

from audits_app.arena import tasks
from audits_app.arena.models import ArenaPair, ArenaVote, Side, SimulatedPairVote
from audits_app.arena.simulation import simulation_drain
from audits_app.arena.tests.conftest import answer_pairs, consent, next_pair
from runs_app.models import WorkStatus
from runs_app.providers.pool import ProviderPool

pytestmark = pytest.mark.django_db


class CountingPool(ProviderPool):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def complete(self, request):
        self.calls += 1
        return await super().complete(request)


def test_a_pair_shown_gets_twelve_simulated_votes_queued_once(
    client, open_arena, django_capture_on_commit_callbacks
):
    consent(client)
    with django_capture_on_commit_callbacks(execute=True):
        answer_pairs(client, 1)  # the first pair, and the second its vote answers with

    pairs = ArenaPair.objects.exclude(simulation_queued_at=None)
    assert pairs.count() == 2
    rows = SimulatedPairVote.objects.filter(pair=pairs[0]).order_by("position")
    assert rows.count() == 12 and {row.status for row in rows} == {WorkStatus.PENDING}
    # Half the positions read text A first, half text B first.
    assert sum(row.a_first for row in rows) == 6
    # One background task drains every pending row; a second pair within seconds adds none.
    assert OrmQ.objects.count() == 1


def test_draining_answers_every_position_once_and_a_rerun_pays_nothing(client, open_arena):
    consent(client)
    answer_pairs(client, 2)  # and the last vote's answer is a third pair
    pool = CountingPool()

    assert simulation_drain(open_arena, providers=pool) == 36
    assert pool.calls == 36
    rows = SimulatedPairVote.objects.all()
    assert {(row.status, row.outcome) for row in rows} == {(WorkStatus.DONE, "scored")}
    assert all(row.favourable in Side.values and row.honest in Side.values for row in rows)

    again = CountingPool()
    assert simulation_drain(open_arena, providers=again) == 0
    assert again.calls == 0
    assert ArenaVote.objects.count() == 2  # kept apart from people's votes: only theirs


def test_a_lost_workers_claims_are_answered_by_the_schedule(client, open_arena):
    from datetime import timedelta

    from django.utils import timezone

    consent(client)
    next_pair(client)
    SimulatedPairVote.objects.update(status=WorkStatus.CLAIMED, claim_token="dead-worker",
                                     lease_expires_at=timezone.now() - timedelta(minutes=1))

    assert tasks.simulate_pending() == 12
    assert not SimulatedPairVote.objects.exclude(status=WorkStatus.DONE).exists()


def test_the_simulated_public_prefers_the_spinners_text_to_the_candid_one(client, open_arena):
    consent(client)
    answer_pairs(client, ArenaPair.objects.count())
    simulation_drain(open_arena)

    pairs = ArenaPair.objects.filter(model_a__openrouter_id="fixture/candid",
                                     model_b__openrouter_id="fixture/spinner")
    assert pairs.exists()
    for pair in pairs:
        answers = list(pair.simulated_votes.values_list("favourable", flat=True))
        assert answers.count(Side.B) > answers.count(Side.A)  # b is the spinner's text


def test_a_reasoning_reader_votes_with_the_reasoning_room_its_release_declares(
        imported_scenarios):
    """A release declares its reader as reasoning (`models[].reasons`): its panel calls cap
    the reasoning and keep the reply's room (`runs_app.call_kinds`). The arena's voters are
    the same reader and are asked the same way, or a reader that reasons unasked would
    spend its budget thinking and every vote would be cut at the limit, unscored after
    paid calls."""
    from audits_app.arena.readers import pair_request, parse_pair_reply, reader_brief
    from runs_app.call_kinds import call_request
    from runs_app.models import ScoringVersion
    from runs_app.readers import load_panel
    from runs_app.testing.fake_openrouter import FakeOpenRouter
    from runs_app.testing.messy import MessyReplies, models_payload
    from runs_app.testing.replies import ask_claim_by_claim
    from runs_app.tests.reply_probes import READER, release_for
    from scenarios_app.models import Scenario

    config = release_for("arena.r", stages=["generate"]).parsed_config()
    config = config.model_copy(update={"models": [
        m.model_copy(update={"reasons": m.id == READER}) for m in config.models]})
    document = Scenario.objects.get(slug="greenvale-listeria").current_version.document()
    texts = ScoringVersion.texts_for_pin(config.scoring_version).language("en")
    position = load_panel(config.panel, "en").positions[0]
    vote = pair_request(config, texts, reader_brief(document, "en"), position,
                        document.control_text, document.control_text)
    panel = call_request("reader", config=config, model=READER)
    assert vote.reasoning_cap == panel.reasoning_cap == config.reply_reasoning.reader
    with FakeOpenRouter(responder=MessyReplies(sticky={READER: "reasons_unasked"}),
                        models=models_payload([READER], reasoning=(READER,))) as server:
        pool = ProviderPool(default="openrouter", base_url=server.base_url,
                            api_key="test-key", backoff_base=0.01, max_retries=0)
        asked = asyncio.run(ask_claim_by_claim(vote, parse_pair_reply, 3, pool))
    assert asked.reply is not None and asked.attempts == 1, [
        e.get("finish_reason") for e in asked.raw_replies]
