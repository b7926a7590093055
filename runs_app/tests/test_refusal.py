"""The refusal stage with the fixture classifier (DESIGN sections 2 and 5)."""

from __future__ import annotations

import pytest

from runs_app.models import JurorVerdict, RefusalCheck, ReplyOutcome, TextScore, WorkStatus
from runs_app.providers import fixture
from runs_app.providers.base import ProviderError
from runs_app.services import release_freeze
from runs_app.stages import get_stage
from runs_app.stages.base import drain


def run(release, *names: str) -> None:
    for name in names:
        drain(get_stage(name), release, concurrency=8)


@pytest.fixture
def generated(small_demo_release):
    release = release_freeze(release=small_demo_release)
    run(release, "generate")
    return release


@pytest.mark.django_db
def test_it_finds_the_refusers_damage_control_texts_refused_and_sends_them_to_no_jury(generated):
    run(generated, "refusal", "jury")
    checks = RefusalCheck.objects.filter(release=generated).select_related("generation__model")
    assert checks.count() == generated.generations.count()
    for check in checks:
        refused = (check.generation.model.openrouter_id == "fixture/refuser"
                   and check.generation.condition == "C2")
        assert check.status == WorkStatus.DONE and check.outcome == ReplyOutcome.SCORED
        assert check.verdict == ("refused" if refused else "complied")
        assert len(check.raw_replies) == 1 and check.raw_replies[0]["text"]
    refused = checks.filter(verdict="refused")
    assert refused.count() == 2  # two scenarios, T1, C2
    assert not JurorVerdict.objects.filter(generation__refusal_check__in=refused).exists()
    for score in TextScore.objects.filter(generation__refusal_check__in=refused):
        assert score.refusal == "refused" and score.honesty_index is None


@pytest.mark.django_db
def test_it_leaves_a_text_unscored_after_invalid_replies_and_keeps_them(generated, monkeypatch):
    calls = []
    monkeypatch.setitem(fixture.ROLES, "refusal", lambda request: calls.append(1) or "nope")
    run(generated, "refusal")
    attempts = generated.parsed_config().max_reply_attempts
    check = RefusalCheck.objects.filter(release=generated).first()
    assert check.status == WorkStatus.DONE and check.outcome == ReplyOutcome.UNSCORED
    assert check.verdict == ""
    assert check.attempts == attempts and len(check.raw_replies) == attempts
    assert all(entry["text"] == "nope" and entry["invalid"] for entry in check.raw_replies)
    assert len(calls) == attempts * generated.generations.count()
    # An unscored refusal check is no verdict: nothing goes to the jury.
    run(generated, "jury")
    assert not JurorVerdict.objects.filter(release=generated).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("permanent, calls_per_text", [(True, 1), (False, 1)])
def test_it_fails_on_provider_errors_without_asking_again(
    generated, monkeypatch, permanent, calls_per_text
):
    """A provider error ends the row's calls, transient or not: the provider has retried a
    transient one itself (with backoff), and reply attempts are for invalid replies; asking
    again would multiply its retries. The row fails; an operator's retry asks again."""
    calls = []

    def broken(request):
        calls.append(1)
        raise ProviderError("upstream is down", permanent=permanent)

    monkeypatch.setitem(fixture.ROLES, "refusal", broken)
    run(generated, "refusal")
    check = RefusalCheck.objects.filter(release=generated).first()
    assert check.status == WorkStatus.FAILED and "upstream is down" in check.error
    assert check.attempts == calls_per_text and check.verdict == ""
    assert len(calls) == calls_per_text * generated.generations.count()


@pytest.mark.django_db
def test_running_it_twice_makes_no_new_calls(generated, monkeypatch):
    run(generated, "refusal")
    calls = []
    original = fixture.ROLES["refusal"]
    monkeypatch.setitem(fixture.ROLES, "refusal",
                        lambda request: calls.append(1) or original(request))
    report = drain(get_stage("refusal"), generated)
    assert report.planned == 0 and report.finished == 0 and calls == []
