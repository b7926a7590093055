"""The request of every kind of call (runs_app.call_kinds): reply budgets that keep room for
a reasoning model's reasoning, writers' own default, and older configurations unchanged."""

from __future__ import annotations

import pydantic
import pytest

from runs_app.call_kinds import CALL_KINDS, call_request, writer_seed
from runs_app.providers.openrouter import request_body, sent_parameters
from runs_app.schemas import ReleaseConfig
from runs_app.services import config_hash

MODELS = [{"id": "acme/writer", "family": "acme", "name": "Writer"},
          {"id": "gamma/judge", "family": "gamma", "name": "Judge G"},
          {"id": "delta/thinker", "family": "delta", "name": "Thinker D", "reasons": True},
          {"id": "epsilon/judge", "family": "epsilon", "name": "Judge E"}]


def config(**overrides) -> ReleaseConfig:
    return ReleaseConfig.model_validate({
        "code": "kinds.0", "language": "en", "models": MODELS, "writers": ["acme/writer"],
        "jurors": ["gamma/judge", "delta/thinker", "epsilon/judge"],
        "reader": "delta/thinker", "journalist": "delta/thinker",
        "scenarios": ["greenvale-listeria"], "tasks": ["T1", "T4"], "conditions": ["C0"],
        "text_budget": 900} | overrides)


def test_a_reasoning_models_replies_keep_their_budget_and_add_the_roles_cap():
    release = config(reply_reasoning={"juror": 3000, "reader": 1024, "journalist": 1500,
                                      "judge": 2048})
    expected = {"juror": (4000, 3000), "refusal": (4000, 1024), "reader": (400, 1024),
                "reveal": (400, 1024), "pair_reader": (200, 1024), "journalist": (600, 1500),
                "frame_judge": (300, 1500), "crossexam": (600, 1500),
                "answer_judge": (4000, 2048)}
    for purpose, (reply, cap) in expected.items():
        request = call_request(purpose, config=release, model="delta/thinker")
        body = request_body(request)
        assert (body["max_tokens"], body["reasoning"]) == (reply + cap, {"max_tokens": cap})
        assert "reasoning" in sent_parameters(request) and "response_format" in body
        plain = request_body(call_request(purpose, config=release, model="gamma/judge"))
        assert plain["max_tokens"] == reply and "reasoning" not in plain


def test_writers_keep_their_own_reasoning_default_even_when_declared_reasoning():
    release = config(writers=["delta/thinker"], reader="gamma/judge")
    body = request_body(call_request("write", config=release, model="delta/thinker", seed=2))
    assert body["max_tokens"] == 900 + 16_000 and body["seed"] == 2
    assert "reasoning" not in body and "response_format" not in body


def test_a_seed_is_sent_by_writers_only_and_temperature_zero_by_the_scoring_reads():
    release = config()
    sends = {purpose: sent_parameters(call_request(purpose, config=release,
                                                   model="gamma/judge", seed=0))
             for purpose in CALL_KINDS}
    assert [purpose for purpose, names in sends.items() if "seed" in names] == ["write"]
    assert sorted(p for p, names in sends.items() if "temperature" in names) == [
        "answer_judge", "juror", "probe", "refusal"]


def test_an_older_stored_configuration_keeps_its_hash_and_sends_what_it_sent():
    stored = config().model_dump(mode="json")
    stored.pop("reply_reasoning")
    for model in stored["models"]:
        model.pop("reasons")
    before = config_hash(stored)
    older = ReleaseConfig.model_validate(stored)
    assert config_hash(stored) == before and not older.reasons("delta/thinker")
    body = request_body(call_request("juror", config=older, model="delta/thinker"))
    assert body["max_tokens"] == 4000 and "reasoning" not in body


@pytest.mark.parametrize("cap", [-1, 1, 1023])
def test_a_reasoning_cap_below_what_providers_accept_is_refused(cap):
    with pytest.raises(pydantic.ValidationError, match="neither 0"):
        config(reply_reasoning={"juror": cap})


def test_a_writers_seeds_start_at_its_variant_and_never_meet_another_variants():
    seeds = [writer_seed(variant, earlier, 3) for variant in range(3) for earlier in range(4)]
    assert [writer_seed(variant, 0, 3) for variant in range(3)] == [0, 1, 2]
    assert len(set(seeds)) == len(seeds)


def test_a_contamination_probe_of_a_reasoning_model_gets_the_readers_room_in_prose():
    """A probe asks every model of the release, writers too, for a short prose reply: a
    declared reasoning model's reasoning is capped at the reader's room on top of the
    probe's 300 tokens, so that it cannot think the reply away; other models are sent no
    reasoning key."""
    release = config(reply_reasoning={"reader": 1024})
    body = request_body(call_request("probe", config=release, model="delta/thinker"))
    assert (body["max_tokens"], body["reasoning"]) == (300 + 1024, {"max_tokens": 1024})
    assert body["temperature"] == 0 and "response_format" not in body
    plain = request_body(call_request("probe", config=release, model="acme/writer"))
    assert plain["max_tokens"] == 300 and "reasoning" not in plain
