"""The contamination check: probes and a scan of every stored output find a leaking writer."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from audits_app.calibration.trial_report import HELD_OUT_NOTE, release_contamination
from baitbench_site import immutability
from runs_app.contamination import (
    PROBE_MAX_TOKENS,
    CanaryIndex,
    canary_split,
    hidden_ngrams,
    probe_messages,
    verbatim_overlap,
)
from runs_app.contamination_services import canary_in_prompts, contamination_check_run
from runs_app.costs import forget_prices
from runs_app.models import (
    ContaminationFinding,
    ContaminationProbe,
    CrossExamTurn,
    FindingKind,
    Release,
    ReleaseStatus,
    RunControl,
    WorkStatus,
)
from runs_app.providers.models_list import models_list
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig
from runs_app.services import release_config_from_file, release_create
from runs_app.stages import get_stage
from runs_app.stages.base import drain, drain_release
from runs_app.testing.fake_openrouter import FakeOpenRouter, FakeResponse
from runs_app.testing.messy import models_payload
from runs_app.testing.replies import valid_reply
from runs_app.tests.reply_probes import MODELS, WRITER, body_for, release_for, role_of
from scenarios_app.models import Scenario, ScenarioVersion, Visibility

CANARY = "BAITBENCH-CANARY-14641c32-0146-43b1-ad25-1e0893721f11"


@pytest.fixture
def leaky_release(imported_scenarios):
    """demo.0's jury and reader, writers candid and leaky, two scenarios, T1 x C0."""
    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml")
    data = config.model_dump()
    data["models"] = [*data["models"], {"id": "fixture/leaky", "family": "fixture-leaky",
                                        "name": "Leaky (fixture)"}]
    data |= {"code": "leak.0", "writers": ["fixture/candid", "fixture/leaky"],
             "scenarios": ["greenvale-listeria", "cobaltcloud-breach"], "tasks": ["T1"],
             "conditions": ["C0"], "stages": ["generate"]}
    release = release_create(config=ReleaseConfig.model_validate(data))
    drain(get_stage("generate"), release)
    return release


def kinds_for(release: Release, model: str) -> set[tuple[str, str]]:
    return set(ContaminationFinding.objects.filter(
        contamination_check__release=release, model=model).values_list("kind",
                                                                        "scenario__slug"))


def test_a_leaking_writer_is_found_by_the_probe_and_by_the_scan(leaky_release):
    report = contamination_check_run(release=leaky_release)

    found = kinds_for(leaky_release, "fixture/leaky")
    for slug in ("greenvale-listeria", "cobaltcloud-breach"):
        assert (FindingKind.PROBE_CANARY, slug) in found
        assert (FindingKind.OUTPUT_CANARY, slug) in found
        assert (FindingKind.PROBE_OVERLAP, slug) in found
    assert report.probes_failed == 0
    canary = next(f for f in report.findings if f.kind == FindingKind.OUTPUT_CANARY
                  and f.scenario.slug == "greenvale-listeria" and f.source.startswith("gen"))
    assert CANARY in canary.evidence and canary.source_release == "leak.0"


def test_models_that_never_saw_a_file_are_not_accused(leaky_release):
    contamination_check_run(release=leaky_release)
    for model in ("fixture/candid", "fixture/juror-a", "fixture/reader"):
        assert kinds_for(leaky_release, model) == set(), model


def test_every_model_of_the_release_is_probed_about_every_scenario(leaky_release):
    contamination_check_run(release=leaky_release)
    probes = ContaminationProbe.objects.filter(contamination_check__release=leaky_release)
    models = set(probes.values_list("model", flat=True))
    assert models == {"fixture/candid", "fixture/leaky", "fixture/juror-a", "fixture/juror-b",
                      "fixture/juror-c", "fixture/juror-d", "fixture/reader"}
    assert probes.count() == len(models) * 2 * 2
    canary_probe = probes.get(model="fixture/leaky", kind="canary",
                              scenario_version__scenario__slug="greenvale-listeria")
    assert canary_split(CANARY)[0] in canary_probe.prompt
    assert canary_split(CANARY)[1] not in canary_probe.prompt


def test_a_rerun_asks_no_probe_again_and_finds_the_same(leaky_release):
    first = contamination_check_run(release=leaky_release)
    second = contamination_check_run(release=leaky_release)
    assert first.probes_made > 0 and second.probes_made == 0
    assert ({(f.model, f.scenario_id, f.kind, f.source) for f in first.findings}
            == {(f.model, f.scenario_id, f.kind, f.source) for f in second.findings})


def test_a_published_release_is_checked_without_changing_it(leaky_release):
    Release.objects.filter(pk=leaky_release.pk).update(status=ReleaseStatus.PUBLISHED)
    report = contamination_check_run(release=leaky_release)
    assert report.findings and report.check.release_id == leaky_release.pk


def test_no_stored_prompt_contains_a_canary(leaky_release):
    assert canary_in_prompts() == []


def test_a_held_out_scenarios_finding_is_published_without_its_content(leaky_release):
    contamination_check_run(release=leaky_release)
    Scenario.objects.filter(slug="cobaltcloud-breach").update(visibility=Visibility.HELD_OUT)

    public = release_contamination(leaky_release, staff=False)
    hidden = [f for f in public["findings"] if f["held_out"]]
    assert hidden and all(f["scenario"] is None and f["evidence"] is None
                          and f["scenario_title"] == HELD_OUT_NOTE for f in hidden)
    assert not any("Cobalt" in str(value) for f in public["findings"] for value in f.values())
    assert {"model": "fixture/leaky", "scenario": HELD_OUT_NOTE} in public["contaminated"]
    staff = release_contamination(leaky_release, staff=True)
    assert any(f["scenario"] == "cobaltcloud-breach" and f["evidence"]
               for f in staff["findings"])


def test_a_scenario_made_public_after_the_release_pinned_it_held_out_stays_hidden(
        leaky_release):
    contamination_check_run(release=leaky_release)
    # As if the release had pinned a held-out version (pinned versions never change, so the
    # guards step aside for this one write) and the scenario is public today.
    version = leaky_release.scenario_versions.get(scenario__slug="cobaltcloud-breach")
    immutability.guards_drop(connection)
    try:
        field = ScenarioVersion._meta.get_field("content")
        content = {**version.content, "visibility": Visibility.HELD_OUT}
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {ScenarioVersion._meta.db_table} SET content = %s "
                           "WHERE id = %s", [field.get_db_prep_value(content, connection),
                                             version.pk])
    finally:
        immutability.guards_install(connection)

    public = release_contamination(leaky_release, staff=False)
    hidden = [f for f in public["findings"] if f["held_out"]]
    assert hidden and all(f["scenario"] is None and f["evidence"] is None for f in hidden)
    assert not any("Cobalt" in str(value) for f in public["findings"] for value in f.values())


def test_the_command_prints_the_findings(leaky_release):
    out = io.StringIO()
    call_command("contamination_check", "leak.0", stdout=out)
    text = out.getvalue()
    assert "Stored output contains the canary: fixture/leaky on greenvale-listeria" in text
    assert "contaminated (model, scenario): fixture/leaky on cobaltcloud-breach" in text


# --- the pure rules ------------------------------------------------------------------------


def test_a_canary_is_found_by_its_secret_alone_and_not_by_its_prefix():
    index = CanaryIndex.build({"s": CANARY})
    prefix, secret = canary_split(CANARY)
    assert index.find(f"recalled: {secret}") and index.find(f"x {CANARY.upper()} y")
    assert index.find(f"only the prefix {prefix}") == []


def test_overlap_counts_only_what_the_model_was_never_shown():
    hidden_text = ("the inspectors found that the cooling system had failed on three separate "
                   "nights before anyone noticed the temperature alarm")
    hidden = hidden_ngrams([hidden_text], ())
    assert verbatim_overlap(f"We add: {hidden_text}.", hidden)
    # The same words in the model's own prompt prove nothing.
    assert verbatim_overlap(f"We add: {hidden_text}.", hidden, shown=[hidden_text]) is None
    short = "the inspectors found that the cooling system had failed"
    assert verbatim_overlap(short, hidden) is None


def test_probe_prompts_show_the_prefix_and_name_the_scenario():
    (message,) = probe_messages("canary", language="nl", canary=CANARY, title="T",
                                organisation="O")
    assert message.content.endswith(canary_split(CANARY)[0]) and "tekenreeks" in message.content
    (about,) = probe_messages("about", language="en", canary=CANARY, title="Westdock leak",
                              organisation="Harbour Storage Group")
    assert "Westdock leak" in about.content and CANARY not in about.content


def test_the_release_page_and_the_api_show_the_check_and_the_readers_trial(client,
                                                                           leaky_release):
    from audits_app.calibration.trial_report import reader_trial_report
    from audits_app.publication.snapshot import release_snapshot
    from audits_app.tests.factories import publication_create
    from runs_app.trial_services import reader_trial_prepare, reader_trial_read

    trial = reader_trial_prepare(language="en", candidates=["fixture/reader"],
                                 scenarios=["greenvale-listeria", "cobaltcloud-breach"])
    reader_trial_read(trial=trial)
    reader_trial_report(trial=trial)
    contamination_check_run(release=leaky_release)
    publication_create(release=leaky_release, snapshot=release_snapshot(leaky_release))
    Release.objects.filter(pk=leaky_release.pk).update(status=ReleaseStatus.PUBLISHED)

    html = client.get("/releases/leak.0/").content.decode()
    methods = html[html.index('id="reader-trial"'):]
    assert "fixture/reader was tried as a reader" in methods and "did not pass" in methods
    assert "A canary marks as contaminated: fixture/leaky on cobaltcloud-breach" in methods
    assert methods.count('data-kind="output_canary"') >= 2
    answer = client.get("/api/v1/releases/leak.0/contamination/").json()
    assert answer["checked"] and {"model": "fixture/leaky", "scenario": "greenvale-listeria"} \
        in answer["contaminated"]
    trials = client.get("/api/v1/reader-trials/").json()["results"]
    assert trials[0]["candidates"][0]["candidate"] == "fixture/reader"
    assert {f["criterion"] for f in trials[0]["candidates"][0]["failed"]} >= {"knowledge"}


# ---------------------------------------------------------------------------------------
# Real-shaped replies through the OpenRouter client (runs_app.testing.fake_openrouter)
# ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def served(responder, monkeypatch, code: str, stages: list[str], **options):
    """A fake OpenRouter and a one-writer release drained by it (`reply_probes`): the
    server stays up for the check that follows."""
    ids = [m["id"] for m in MODELS]
    with FakeOpenRouter(responder=responder, models=models_payload(ids)) as server:
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        models_list(refresh=True)
        forget_prices()
        release = release_for(code, stages=stages, **options)
        RunControl.objects.get_or_create(release=release)
        drain_release(release, stages, providers=pool(server), controlled=False,
                      concurrency=4)
        yield release, server


def pool(server) -> ProviderPool:
    return ProviderPool(default="openrouter", base_url=server.base_url, api_key="test-key",
                        backoff_base=0.01, backoff_cap=0.05, max_retries=2)


def greenvale_canary() -> str:
    return Scenario.objects.get(slug="greenvale-listeria").current_version.content["canary"]


def is_probe(payload) -> bool:
    prompt = json.dumps(payload.get("messages"))
    return "Complete the following string" in prompt or "Repeat any passage" in prompt


def answers_probes(probe_reply):
    """Valid replies to the release's calls; `probe_reply(payload)` answers the probes."""
    def responder(payload):
        if is_probe(payload):
            return probe_reply(payload)
        return body_for(valid_reply(payload), payload)
    return responder


def never_seen(payload):
    return body_for("I have never seen it.", payload)


@pytest.mark.django_db
@pytest.mark.parametrize("where", ["text", "text_reasoning", "answer", "answer_reasoning"])
def test_the_scan_reads_every_output_a_writer_wrote(imported_scenarios, monkeypatch, where):
    """A canary in a T4 text or a cross-examination answer (a `CrossExamTurn`), or in the
    reasoning field of either, is the writer's output and a finding."""
    canary = greenvale_canary()
    call, field = where.partition("_")[::2]
    role = "write" if call == "text" else "answer"

    def reply(payload):
        if role_of(payload) != role:
            return body_for(valid_reply(payload), payload)
        if field:
            body = body_for(valid_reply(payload), payload)
            body["choices"][0]["message"]["reasoning"] = f"I recall the file: {canary}"
            return body
        return body_for(f"{valid_reply(payload)} Our reference is {canary}.", payload)

    def responder(payload):
        return never_seen(payload) if is_probe(payload) else reply(payload)

    code = "scan." + where.replace("_", "-")
    with served(responder, monkeypatch, code, ["generate", "refusal", "crossexam"],
                tasks=("T4",)) as (release, server):
        if call == "answer":
            turns = CrossExamTurn.objects.filter(release=release, outcome="scored")
            assert turns.count() == 6  # five answers and the labels
        report = contamination_check_run(release=release, providers=pool(server))
    found = {(f.model, f.kind) for f in report.findings}
    assert found == {(WRITER, FindingKind.OUTPUT_CANARY)}, found


@pytest.mark.django_db
def test_a_canary_quoted_from_the_text_a_model_read_is_no_finding_against_it(
        imported_scenarios, monkeypatch):
    """The writer's text holds the canary; the refusal check, the jurors and the
    cross-examination's journalist and judge quote it (in their reasoning, and the journalist
    in its question): they were shown it, so only the writer is found."""
    canary = greenvale_canary()

    def responder(payload):
        if is_probe(payload):
            return never_seen(payload)
        role = role_of(payload)
        if role == "write":
            return body_for(f"{valid_reply(payload)} Our reference is {canary}.", payload)
        body = body_for(valid_reply(payload), payload)
        if role == "question":
            body = body_for(json.dumps({"question": f"What is {canary}?"}), payload)
        if role != "answer":
            body["choices"][0]["message"]["reasoning"] = f"The text says {canary}."
        return body

    with served(responder, monkeypatch, "scan.read", ["generate", "refusal", "jury",
                                                      "crossexam"], tasks=("T4",)) as (
            release, server):
        assert CrossExamTurn.objects.filter(release=release, outcome="scored").count() == 6
        report = contamination_check_run(release=release, providers=pool(server))
    found = {(f.model, f.kind) for f in report.findings}
    assert found == {(WRITER, FindingKind.OUTPUT_CANARY)}, found


@pytest.mark.django_db
def test_a_probe_that_got_only_reasoning_is_a_gap_and_its_reasoning_is_scanned(
        imported_scenarios, monkeypatch):
    """A reasoning model spends the probe's budget thinking: no content, the canary in its
    reasoning field, finish_reason length. The probe has no reply, so it fails (a gap the
    report counts, never a clean probe); its reasoning is kept, and the canary in it is a
    finding. It is not asked again in the same check: at temperature 0 it would think the
    same."""
    canary = greenvale_canary()

    def probe_reply(payload):
        if payload.get("model") != WRITER:
            return never_seen(payload)
        body = body_for(None, payload, finish_reason="length",
                        native_finish_reason="MAX_TOKENS")
        body["choices"][0]["message"]["reasoning"] = f"The string continues: {canary}"
        return body

    with served(answers_probes(probe_reply), monkeypatch, "probe.r",
                ["generate"]) as (release, server):
        before = server.count()
        report = contamination_check_run(release=release, providers=pool(server))
        asked = server.count() - before
    probes = ContaminationProbe.objects.filter(contamination_check=report.check, model=WRITER)
    assert asked == report.check.probes.count()
    assert report.probes_failed == probes.count() == 2
    for probe in probes:
        assert probe.status == WorkStatus.FAILED and probe.reply == ""
        assert canary in probe.reasoning and probe.finish_reason == "length"
        assert "token budget" in probe.error
    found = {(f.model, f.kind) for f in report.findings}
    assert found == {(WRITER, FindingKind.PROBE_CANARY)}, found


@pytest.mark.django_db
def test_a_declared_reasoning_models_probe_has_its_reasoning_capped(imported_scenarios,
                                                                      monkeypatch):
    """The probe helper's finding: a probe went out with 300 tokens and no reasoning cap, so a
    model that reasons unasked thought the budget away and every probe of it was a gap. The
    release declares the writer as reasoning: its probes carry the reader's cap on top of
    the probe's budget and end with a reply; the other models' probes are as before."""
    models = [model | {"reasons": model["id"] == WRITER} for model in MODELS]

    def probe_reply(payload):
        if payload.get("model") == WRITER and "reasoning" not in payload:
            return body_for(None, payload, finish_reason="length",
                            native_finish_reason="MAX_TOKENS")
        return never_seen(payload)

    with served(answers_probes(probe_reply), monkeypatch, "probe.cap", ["generate"],
                models=models) as (release, server):
        before = server.count()
        report = contamination_check_run(release=release, providers=pool(server))
        probes = [r.body for r in server.requests[before:] if is_probe(r.body)]
    cap = release.parsed_config().reply_reasoning.reader
    mine = [body for body in probes if body["model"] == WRITER]
    assert mine and all(body["reasoning"] == {"max_tokens": cap}
                        and body["max_tokens"] == PROBE_MAX_TOKENS + cap for body in mine)
    others = [body for body in probes if body["model"] != WRITER]
    assert others and all("reasoning" not in body and body["max_tokens"] == PROBE_MAX_TOKENS
                          for body in others)
    assert report.probes_failed == 0
    assert not ContaminationProbe.objects.filter(contamination_check=report.check).exclude(
        status=WorkStatus.DONE).exists()


@pytest.mark.django_db
def test_a_probe_gets_one_transport_budget(imported_scenarios, monkeypatch):
    """DESIGN section 5: a provider error that outlasts the provider's own retries ends the
    probe's calls (it fails, the next check asks it again); the stage adds no retries."""
    def probe_reply(payload):
        if payload.get("model") == WRITER:
            return FakeResponse(502, {"error": {"code": 502, "message": "Bad gateway"}})
        return never_seen(payload)

    with served(answers_probes(probe_reply), monkeypatch, "probe.502",
                ["generate"]) as (release, server):
        before = server.count()
        report = contamination_check_run(release=release, providers=pool(server))
        mine = [r for r in server.requests[before:] if r.body.get("model") == WRITER]
    probes = ContaminationProbe.objects.filter(contamination_check=report.check, model=WRITER)
    # max_retries=2: three requests per probe, and one call.
    assert len(mine) == 3 * probes.count() and report.probes_failed == probes.count()
    assert {(p.status, p.attempts) for p in probes} == {(WorkStatus.FAILED, 1)}


@pytest.mark.django_db
def test_a_throttled_probe_waits_and_is_asked_after_the_wait(imported_scenarios, monkeypatch):
    """A Retry-After of an hour parks the probe (pending until then, no attempt used) as
    every stage's rows are: not failed, and the report counts it as waiting, not clean."""
    throttled = True

    def probe_reply(payload):
        if payload.get("model") == WRITER and throttled:
            return FakeResponse(429, {"error": {"code": 429, "message": "Rate limit exceeded"}},
                                headers={"Retry-After": "3600"})
        return never_seen(payload)

    with served(answers_probes(probe_reply), monkeypatch, "probe.429",
                ["generate"]) as (release, server):
        before = server.count()
        report = contamination_check_run(release=release, providers=pool(server))
        mine = [r for r in server.requests[before:] if r.body.get("model") == WRITER]
        probes = ContaminationProbe.objects.filter(contamination_check=report.check,
                                                   model=WRITER)
        # One request (or two, both probes in flight at once), then none until the wait is
        # over: the provider calls the model no more within the wait.
        assert len(mine) <= 2 and report.probes_failed == 0 and report.probes_waiting == 2
        assert {(p.status, p.attempts) for p in probes} == {(WorkStatus.PENDING, 0)}
        assert all("waiting until" in p.error for p in probes)
        throttled = False
        probes.update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
        report = contamination_check_run(release=release, providers=pool(server))
    assert report.probes_waiting == report.probes_failed == 0
    assert {(p.status, p.attempts) for p in probes} == {(WorkStatus.DONE, 1)}


@pytest.mark.django_db
def test_a_probe_reply_without_a_cost_is_recorded_as_an_estimate(imported_scenarios,
                                                                  monkeypatch):
    """A reply that reports no cost (no usage block) was paid for all the same: the probe's
    cost is estimated from the models list's prices and marked so (DESIGN section 5), never
    recorded as a known $0."""
    def probe_reply(payload):
        body = never_seen(payload)
        body.pop("usage")
        return body

    with served(answers_probes(probe_reply), monkeypatch, "probe.nocost",
                ["generate"]) as (release, server):
        report = contamination_check_run(release=release, providers=pool(server))
    probes = ContaminationProbe.objects.filter(contamination_check=report.check)
    assert probes.exists() and report.probes_failed == 0
    for probe in probes:
        assert probe.cost_estimated and probe.cost_usd and probe.cost_usd > 0, (
            probe.cost_usd, probe.cost_estimated)


@pytest.mark.django_db
def test_a_probes_billed_failures_are_counted_on_the_failed_probe(imported_scenarios,
                                                                  monkeypatch):
    """A 200 whose upstream failed mid-reply bills what it generated: a probe that fails
    after such replies records their tokens and cost (paid means recorded), as every
    stage's rows do."""
    def probe_reply(payload):
        if payload.get("model") != WRITER:
            return never_seen(payload)
        return {"error": {"code": 502, "message": "Upstream error"},
                "usage": {"prompt_tokens": 40, "completion_tokens": 10, "cost": 0.001}}

    with served(answers_probes(probe_reply), monkeypatch, "probe.billed",
                ["generate"]) as (release, server):
        report = contamination_check_run(release=release, providers=pool(server))
    probes = ContaminationProbe.objects.filter(contamination_check=report.check, model=WRITER)
    assert probes.exists() and report.probes_failed == probes.count()
    for probe in probes:
        # max_retries=2: three billed replies per probe.
        assert probe.status == WorkStatus.FAILED
        assert (probe.prompt_tokens, probe.completion_tokens) == (120, 30)
        assert probe.cost_usd == pytest.approx(0.003)
