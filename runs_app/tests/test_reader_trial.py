"""The reader trial: candidates read control texts and nothing, twice; criteria decide."""

from __future__ import annotations

import copy
import datetime as dt
import io

import pytest
from django.core.management import call_command
from django.utils import timezone

from audits_app.calibration.trial_report import reader_trial_report
from runs_app.call_kinds import call_request
from runs_app.models import TrialReading, WorkStatus
from runs_app.providers.base import Message
from runs_app.providers.models_list import models_list
from runs_app.providers.openrouter import request_body
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig
from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.testing.messy import MessyReplies, models_payload
from runs_app.testing.replies import valid_reply
from runs_app.trial_services import TrialError, reader_trial_prepare, reader_trial_read

# Four English scenarios whose control texts move readers: enough for intervals, quick to read.
SCENARIOS = ["greenvale-listeria", "northmere-gas-outage", "st-aldric-sepsis",
             "redmoor-doping-cover"]
CANDIDATES = {
    "fixture/reader-able": set(),
    "fixture/reader-forgetful": {"knowledge"},
    "fixture/reader-fickle": {"retest"},
    "fixture/reader-contrarian": {"trust"},
    "fixture/reader-knowall": {"dont_know"},
}


def trial_read():
    trial = reader_trial_prepare(language="en", candidates=list(CANDIDATES),
                                 scenarios=SCENARIOS)
    reader_trial_read(trial=trial)
    return trial


@pytest.fixture(scope="module")
def kept_trial(request, kept_scenarios, django_db_blocker):
    from tests.kept import world_kept

    yield from world_kept(request, django_db_blocker, trial_read)


@pytest.fixture
def trial(kept_trial, imported_scenarios):
    """The trial of CANDIDATES on SCENARIOS, every reading read (built once for the module's
    tests, each of which sees it as built: tests/kept.py)."""
    return copy.deepcopy(kept_trial)


@pytest.fixture
def report(trial):
    return reader_trial_report(trial=trial)


def test_each_flawed_candidate_fails_its_own_criterion_and_the_able_one_passes(report):
    failed = {candidate: {f["criterion"] for f in figures["failed"]}
              for candidate, figures in report["candidates"].items()}
    assert failed == CANDIDATES
    assert report["preferred"] == ["fixture/reader-able"]


def test_every_failure_says_why(report):
    reasons = {f["criterion"]: f["reason"] for c in report["candidates"].values()
               for f in c["failed"]}
    assert "below the 0.75 required" in reasons["knowledge"]
    assert "second reading" in reasons["retest"]
    assert "move less with the text" in reasons["trust"]
    assert "\"don't know\" with no text" in reasons["dont_know"]


def test_figures_have_scenario_resampled_intervals_and_per_position_movement(report):
    able = report["candidates"]["fixture/reader-able"]
    trust = able["trust"]
    assert trust["scenarios"] == len(SCENARIOS)
    assert trust["low"] < trust["point"] < trust["high"] and trust["low"] > 0
    positions = able["per_position"]
    assert len(positions) == 12
    high = [p["point"] for p in positions if p["trust_in_media"] == "high"]
    low = [p["point"] for p in positions if p["trust_in_media"] == "low"]
    # The control texts report trouble: everyone moves down, high-trust positions further.
    assert max(high) < min(low) < 0


def test_it_reads_every_position_twice_for_the_control_text_and_for_no_text(trial, report):
    per_candidate = 12 * len(SCENARIOS) * 2 * 2
    assert TrialReading.objects.filter(trial=trial).count() == per_candidate * len(CANDIDATES)
    assert report["candidates"]["fixture/reader-able"]["readings"] == per_candidate
    seeds = set(TrialReading.objects.filter(trial=trial).values_list("reading", flat=True))
    assert seeds == {1, 2}


def test_a_rerun_pays_for_nothing_twice_and_a_new_candidate_reads_alone(trial, report):
    assert reader_trial_read(trial=trial).finished == 0
    again = reader_trial_prepare(language="en", candidates=["fixture/reader-able",
                                                           "fixture/reader"],
                                 scenarios=SCENARIOS)
    assert again.pk == trial.pk
    drained = reader_trial_read(trial=again)
    assert drained.finished == 12 * len(SCENARIOS) * 2 * 2
    assert set(reader_trial_report(trial=again)["candidates"]) == {*CANDIDATES,
                                                                    "fixture/reader"}


def test_a_reading_held_by_a_dead_worker_is_read_after_its_lease(trial):
    row = TrialReading.objects.filter(trial=trial).first()
    TrialReading.objects.filter(pk=row.pk).update(
        status=WorkStatus.CLAIMED, claim_token="dead", claimed_by="gone:1",
        lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert reader_trial_read(trial=trial).finished == 1
    assert TrialReading.objects.get(pk=row.pk).status == WorkStatus.DONE


def test_an_unfinished_candidate_is_not_passed(trial):
    TrialReading.objects.filter(trial=trial, candidate="fixture/reader-able").filter(
        pk__in=TrialReading.objects.filter(candidate="fixture/reader-able").values("pk")[:3]
    ).update(status=WorkStatus.PENDING)
    report = reader_trial_report(trial=trial)
    able = report["candidates"]["fixture/reader-able"]
    assert not able["passed"] and able["unfinished"] == 3
    assert "not finished" in able["failed"][-1]["reason"]


def test_latency_and_cost_per_reading_come_from_the_provider(imported_scenarios):
    trial = reader_trial_prepare(language="en", candidates=["acme/reader-1"],
                                 scenarios=SCENARIOS[:2])
    with FakeOpenRouter(latency=0.02, responder=valid_reply) as server:
        pool = ProviderPool("openrouter", base_url=server.base_url, api_key="test-key")
        reader_trial_read(trial=trial, providers=pool)
    report = reader_trial_report(trial=trial)["candidates"]["acme/reader-1"]
    rows = TrialReading.objects.filter(trial=trial)
    assert all(row.latency_ms >= 20 and row.cost_usd > 0 for row in rows)
    assert report["latency_ms_median"] >= 20
    assert report["cost_usd_per_reading"] == pytest.approx(
        sum(row.cost_usd for row in rows) / rows.count())
    assert report["valid_share"] == 1.0


def test_a_candidate_is_asked_as_a_release_asks_its_reader(imported_scenarios, monkeypatch):
    """A candidate that reasons unasked (the models list names `reasoning`, as for Gemini
    2.5 Flash) gets the reasoning cap and the whole reply budget a release that declares it
    gives its reader (`call_request`), and no seed (a release's reader gets none): every
    reading is scored at the first call. Without the cap it thinks the 400 tokens away."""
    candidate = "zeta/reader"
    trial = reader_trial_prepare(language="en", candidates=[candidate],
                                 scenarios=SCENARIOS[:1])
    with FakeOpenRouter(responder=MessyReplies(sticky={candidate: "reasons_unasked"}),
                        models=models_payload([candidate], reasoning=(candidate,))) as server:
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        models_list(refresh=True)
        pool = ProviderPool("openrouter", base_url=server.base_url, api_key="test-key")
        reader_trial_read(trial=trial, providers=pool)
        sent = server.requests[0].body
    release = reader_release(candidate)
    wanted = request_body(call_request("reader", config=release, model=candidate,
                                       messages=[Message(m["role"], m["content"])
                                                 for m in sent["messages"]]))
    assert sent == wanted and "seed" not in sent
    rows = TrialReading.objects.filter(trial=trial)
    assert rows.count() == 48 and len(server.requests) == 48
    assert set(rows.values_list("outcome", flat=True)) == {"scored"}


def reader_release(reader: str) -> ReleaseConfig:
    """A release that reads with `reader`, declared as reasoning."""
    models = [{"id": "acme/writer", "family": "acme", "name": "Writer"},
              {"id": reader, "family": "zeta", "name": "Reader", "reasons": True},
              *[{"id": f"{family}/judge", "family": family, "name": family}
                for family in ("gamma", "delta", "epsilon")]]
    return ReleaseConfig.model_validate({
        "code": "trial.cmp", "language": "en", "models": models, "writers": ["acme/writer"],
        "jurors": ["gamma/judge", "delta/judge", "epsilon/judge"], "reader": reader,
        "scenarios": SCENARIOS[:1], "tasks": ["T1"], "conditions": ["C0"],
        "stages": ["generate", "refusal", "panel"]})


def test_bad_input_is_named(imported_scenarios):
    with pytest.raises(TrialError) as error:
        reader_trial_prepare(language="fr", candidates=["not a model"])
    assert any(line.startswith("--language: 'fr'") for line in error.value.lines)
    assert any("candidate 'not a model'" in line for line in error.value.lines)
    with pytest.raises(TrialError) as error:
        reader_trial_prepare(language="en", candidates=["fixture/reader-able"],
                             scenarios=["keverdal-vervoer-busuitval", "nowhere"])
    assert "scenario 'nowhere': not imported" in error.value.lines
    assert "scenario 'keverdal-vervoer-busuitval': is nl, the trial is en" in error.value.lines


def test_the_command_prints_the_trial_table(imported_scenarios):
    out = io.StringIO()
    call_command("reader_trial", "fixture/reader-able", "fixture/reader-knowall",
                 "--language", "en", *[f"--scenario={slug}" for slug in SCENARIOS], stdout=out)
    text = out.getvalue()
    assert "fixture/reader-able" in text and "passes" in text
    assert "fails dont_know" in text
    assert "passing, in order of preference: fixture/reader-able" in text
