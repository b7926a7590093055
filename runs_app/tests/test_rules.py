"""Rules of the method that a broken implementation could pass the other tests with,
checked through the pipeline's own stages and services: each test here
fails when its rule is broken on purpose. The figures' rules are in
`audits_app/tests/test_rules.py`."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from pydantic import ValidationError

from runs_app.jury import honesty_index
from runs_app.models import JurorVerdict, ReplyOutcome, TextScore
from runs_app.providers.base import CompletionRequest, CompletionResult
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig, Weights
from runs_app.services import release_config_from_file, release_create, release_freeze
from runs_app.stages import get_stage
from runs_app.stages.base import drain


def demo_config(**changes) -> dict:
    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    return config | {"scenarios": ["greenvale-listeria", "cobaltcloud-breach"],
                     "tasks": ["T1"], "conditions": ["C0", "C2"]} | changes


def small_release(code: str, **changes):
    config = ReleaseConfig.model_validate(demo_config(code=code, **changes))
    return release_freeze(release=release_create(config=config))


def run(release, *names: str, providers: ProviderPool | None = None) -> None:
    for name in names:
        drain(get_stage(name), release, concurrency=8, providers=providers)


@pytest.mark.django_db
def test_the_honesty_service_weighs_with_the_release_weights_not_the_defaults(
        imported_scenarios):
    weights = Weights(claims=0.5, omission=0.25, knowledge_harm=0.25)
    release = small_release("weights.0", weights=weights.model_dump())
    run(release, "generate", "refusal", "jury")
    scores = TextScore.objects.filter(release=release, jurors_scored__gt=0)
    assert scores.exists()
    differs = 0
    for score in scores:
        assert score.honesty_index == pytest.approx(
            honesty_index(score.claims, score.omission, score.knowledge_harm, weights))
        default = honesty_index(score.claims, score.omission, score.knowledge_harm, Weights())
        differs += abs(default - score.honesty_index) > 1e-6
    assert differs, "no text where the two weightings differ: the test would prove nothing"


class FramingJuror(ProviderPool):
    """The fixture jury, except that one juror also names "framing" as a technique."""

    JUROR = "fixture/juror-a"

    async def complete(self, request: CompletionRequest) -> CompletionResult:
        result = await super().complete(request)
        if request.model != self.JUROR or request.purpose != "juror":
            return result
        reply = json.loads(result.text)
        reply["techniques"] = [*reply.get("techniques", []), "framing"]
        return CompletionResult(**{**result.__dict__, "text": json.dumps(reply)})


@pytest.mark.django_db
def test_a_technique_the_method_does_not_count_never_lowers_knowledge_harm(imported_scenarios):
    """Framing, appeals to authority and promises are not knowledge harm (DESIGN section 2):
    a juror that names one gives no score, rather than one lowered by it."""
    release = small_release("framing.0")
    run(release, "generate", "refusal")
    run(release, "jury", providers=FramingJuror(default="fixture"))
    framing = JurorVerdict.objects.filter(release=release,
                                          juror__openrouter_id=FramingJuror.JUROR)
    others = JurorVerdict.objects.filter(release=release).exclude(
        juror__openrouter_id=FramingJuror.JUROR)
    assert framing.exists() and others.exists()
    assert set(framing.values_list("outcome", flat=True)) == {ReplyOutcome.UNSCORED}
    assert set(others.values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}
    assert all(verdict.knowledge_harm_score is None for verdict in framing)


def test_the_reader_may_not_come_from_a_writers_family_even_when_it_writes_nothing():
    """The reader rule compares families, not model ids: a reader that is not itself a
    writer but shares a writer's family is refused."""
    config = demo_config(code="family.0")
    writer = next(spec for spec in config["models"] if spec["id"] in ReleaseConfig
                  .model_validate(config).writers)
    cousin = {"id": "fixture/cousin-reader", "family": writer["family"], "name": "Cousin"}
    config["models"] = [*config["models"], cousin]
    config["reader"] = cousin["id"]
    with pytest.raises(ValidationError, match=(
            f"reader: fixture/cousin-reader belongs to family '{writer['family']}', "
            f"as writer\\(s\\) {writer['id']}")):
        ReleaseConfig.model_validate(config)
    # The same reader in a family of its own is accepted: the refusal is about the family.
    config["models"][-1] = cousin | {"family": "fixture-cousins"}
    assert ReleaseConfig.model_validate(config).reader == cousin["id"]
