"""Preflight (DESIGN section 8): models on OpenRouter's list, their limits and prices, the
reader-family rule, and the cost estimate, against the fake server's models list."""

from __future__ import annotations

import datetime as dt
import io
import math
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.utils import timezone

from runs_app.models import OpenRouterModelsList, Release
from runs_app.preflight import prompt_inputs, release_preflight
from runs_app.preflight.estimate import call_cost
from runs_app.preflight.profiles import call_profiles
from runs_app.providers.models_list import (
    ModelListing,
    ModelsList,
    parse_models_list,
    read_models_file,
)
from runs_app.services import release_get_or_load
from runs_app.stages import get_stage
from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.tests.releases import IDS, MODELS, listing, models_payload, openrouter_release
from scenarios_app.models import Condition, Task
from scenarios_app.rendering import assemble_writer_prompt

SNAPSHOT = Path(__file__).resolve().parents[1] / "testing" / "openrouter_models_en0_snapshot.json"
@pytest.fixture
def models_server(monkeypatch):
    with FakeOpenRouter(models=models_payload()) as server:
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        yield server


def preflight(code: str, *options: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("preflight_release", code, *options, stdout=out)
    except SystemExit as exit_:
        return int(exit_.code), out.getvalue()
    return 0, out.getvalue()


def failed(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if line.strip().startswith("FAIL")]


# ---------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_release_that_fits_passes_and_only_the_models_list_is_called(
    imported_scenarios, models_server
):
    openrouter_release(stages=["generate", "refusal", "jury", "panel", "uptake", "reveal"])

    code, output = preflight("or.0")

    assert code == 0, output
    assert not failed(output)
    assert "every check passed" in output
    assert "ok    reader: gamma/judge belongs to family 'gamma', which no writer" in output
    assert models_server.models_requests == 1 and models_server.count() == 0


@pytest.mark.django_db
def test_an_unknown_model_id_fails_with_one_line_naming_it(imported_scenarios, models_server):
    openrouter_release()
    models_server.models = models_payload(leave_out=("beta/writer-b",),
                                          extra=(listing("beta/writer-bb"),))

    code, output = preflight("or.0")

    assert code == 1
    assert failed(output) == [
        f"FAIL  beta/writer-b (writer): not on OpenRouter's models list (5 models from "
        f"{models_server.base_url}/models); did you mean beta/writer-bb?"]


@pytest.mark.django_db
def test_a_context_too_small_for_the_longest_prompt_and_a_short_output_limit_fail(
    imported_scenarios, models_server
):
    release = openrouter_release(stages=["generate", "refusal", "jury"], text_budget=900)
    models_server.models = models_payload(
        gamma_judge={"context_length": 4_000},  # the reader and a juror: its prompts are longer
        acme_writer_a={"max_completion_tokens": 16_384},  # below 900 + 16,000
    )
    # The longest prompt gamma/judge gets, with a text that fills the whole text budget.
    profiles = [p for p in call_profiles(prompt_inputs(release)) if p.calls.get("gamma/judge")]
    needed = max(profile.longest_prompt + profile.max_tokens for profile in profiles)
    assert needed > 900 + 4000

    code, output = preflight("or.0")

    assert code == 1
    writer, reader = sorted(failed(output))
    assert writer == ("FAIL  acme/writer-a (writer): max output 16,384 tokens < 16,900 requested "
                      "by generate write T1 (text budget 900 + reasoning 16,000)")
    assert reader.startswith(f"FAIL  gamma/judge (juror, reader, journalist): context 4,000 "
                             f"tokens < {needed:,} needed by ")
    assert reader.endswith("(longest prompt + completion budget)")


@pytest.mark.django_db
def test_a_model_lacking_a_parameter_the_release_sends_fails_in_one_line(
    imported_scenarios, models_server
):
    openrouter_release(stages=["generate", "refusal", "jury"], tasks=["T1"])
    models_server.models = models_payload(
        acme_writer_a={"supported_parameters": ("max_tokens", "temperature")},  # no seed
        delta_judge={"supported_parameters": ("max_tokens", "seed")},  # no temperature, JSON
        beta_writer_b={"supported_parameters": ("max_tokens", "seed")},  # all a writer sends
        # gamma and epsilon state none: not read as "none supported"
    )

    code, output = preflight("or.0")

    assert code == 1
    tail = ("; requests require every parameter they send (provider.require_parameters), so "
            "none would be served")
    assert sorted(failed(output)) == [
        "FAIL  acme/writer-a (writer): the models list's supported_parameters lack seed (sent "
        "by generate write T1)" + tail,
        "FAIL  delta/judge (juror): the models list's supported_parameters lack temperature "
        "(sent by jury juror T1), response_format (sent by jury juror T1)" + tail]
    assert "beta/writer-b (writer): on the list" in output
    assert "epsilon/judge (juror): on the list" in output


REASONING_PARAMETERS = ("max_tokens", "temperature", "seed", "response_format", "reasoning",
                        "include_reasoning")
SAYS_NOTHING = ("; declare `reasons: true` under models (reasoning capped at reply_reasoning, "
                "the reply budget kept whole), or `reasons: false` for a model that reasons "
                "only when asked")


def declaring(reasons: dict[str, bool | None]) -> list[dict]:
    """The test models, some declaring their reasoning (`models[].reasons`)."""
    return [model | ({"reasons": reasons[model["id"]]} if model["id"] in reasons else {})
            for model in MODELS]


@pytest.mark.django_db
def test_a_model_that_can_reason_and_is_not_declared_fails_until_the_release_says(
    imported_scenarios, models_server
):
    openrouter_release(stages=["generate", "refusal", "jury"], tasks=["T1"])
    models_server.models = models_payload(
        delta_judge={"supported_parameters": REASONING_PARAMETERS},
        # A writer that can reason keeps its own default: writers are not asked to say.
        acme_writer_a={"supported_parameters": REASONING_PARAMETERS})

    code, output = preflight("or.0")

    assert code == 1
    assert failed(output) == [
        "FAIL  delta/judge (juror): can reason (the models list's supported_parameters name "
        "include_reasoning, reasoning) and the release does not say whether it does: its "
        "reasoning would come out of the reply budget of jury juror T1 and cut replies at "
        "the limit" + SAYS_NOTHING]


@pytest.mark.django_db
@pytest.mark.parametrize("reasons", [True, False])
def test_a_model_declared_reasoning_or_not_passes_and_preflight_checks_what_is_sent(
    imported_scenarios, models_server, reasons
):
    release = openrouter_release(stages=["generate", "refusal", "jury"], tasks=["T1"],
                                 models=declaring({"delta/judge": reasons}))
    models_server.models = models_payload(
        delta_judge={"supported_parameters": REASONING_PARAMETERS})

    code, output = preflight("or.0")

    assert code == 0, output
    juror = next(p for p in call_profiles(prompt_inputs(release)) if p.purpose == "juror T1")
    assert juror.budget("delta/judge") == 4000 + (2048 if reasons else 0)
    assert juror.budget("epsilon/judge") == 4000
    # The high estimate pays for the reasoning cap too (at the completion price).
    (_, delta), (_, epsilon) = (call_cost(juror, 1, listing(model_id))
                                for model_id in ("delta/judge", "epsilon/judge"))
    assert delta - epsilon == pytest.approx(juror.attempts * (2048 if reasons else 0) * 2e-6)


@pytest.mark.django_db
def test_a_declared_reasoning_model_lacking_the_parameter_or_the_room_fails_in_one_line(
    imported_scenarios, models_server
):
    openrouter_release(stages=["generate", "refusal", "jury"], tasks=["T1"],
                       models=declaring({"delta/judge": True, "epsilon/judge": True}),
                       reply_reasoning={"juror": 0})
    models_server.models = models_payload(
        delta_judge={"supported_parameters": ("max_tokens", "temperature", "response_format")},
        epsilon_judge={"supported_parameters": REASONING_PARAMETERS},
        gamma_judge={"supported_parameters": REASONING_PARAMETERS})
    code, output = preflight("or.0")
    assert code == 1
    # With no room given, no reasoning setting is sent, so delta's list lacks nothing sent:
    # a model declared reasoning still needs room, whatever its list says.
    no_room = ("(juror): reasons (declared `reasons: true`), but jury juror T1 gives it no "
               "reasoning room (reply_reasoning.juror is 0): its reasoning would use up the "
               "reply budget and cut replies at the limit")
    assert sorted(failed(output)) == [
        f"FAIL  delta/judge {no_room}", f"FAIL  epsilon/judge {no_room}",
        "FAIL  gamma/judge (juror, reader, journalist): can reason (the models list's "
        "supported_parameters name include_reasoning, reasoning) and the release does not "
        "say whether it does: its reasoning would come out of the reply budget of refusal "
        "refusal T1 and cut replies at the limit" + SAYS_NOTHING]

    Release.objects.filter(code="or.0").delete()
    openrouter_release(stages=["generate", "refusal", "jury"], tasks=["T1"],
                       models=declaring({"delta/judge": True}))
    code, output = preflight("or.0")
    assert code == 1 and (
        "FAIL  delta/judge (juror): the models list's supported_parameters lack reasoning "
        "(sent by jury juror T1); requests require every parameter they send "
        "(provider.require_parameters), so none would be served") in failed(output)


@pytest.mark.django_db
def test_a_budget_with_reasoning_room_that_the_output_limit_or_context_cannot_hold_fails(
    imported_scenarios, models_server
):
    openrouter_release(stages=["generate", "refusal", "jury"], tasks=["T1"],
                       models=declaring({"delta/judge": True, "epsilon/judge": True}))
    models_server.models = models_payload(
        # Room for the verdict alone, not for the verdict and the reasoning cap.
        delta_judge={"supported_parameters": REASONING_PARAMETERS,
                     "max_completion_tokens": 5_000},
        epsilon_judge={"supported_parameters": REASONING_PARAMETERS, "context_length": 6_000})

    code, output = preflight("or.0")

    assert code == 1
    delta, epsilon = sorted(failed(output))
    assert delta == ("FAIL  delta/judge (juror): max output 5,000 tokens < 6,048 requested by "
                     "jury juror T1 (reply budget 4,000 + reasoning 2,048)")
    assert epsilon.startswith("FAIL  epsilon/judge (juror): context 6,000 tokens < ")
    assert epsilon.endswith("needed by jury juror T1 (longest prompt + completion budget)")


@pytest.mark.django_db
def test_unknown_prices_fail_and_an_unstated_output_limit_passes_with_a_note(
    imported_scenarios, models_server
):
    openrouter_release()
    payload = models_payload(delta_judge={"max_completion_tokens": None})
    for entry in payload["data"]:
        if entry["id"] == "epsilon/judge":
            entry["pricing"]["completion"] = "-1"  # how OpenRouter marks a routed price
    models_server.models = payload

    code, output = preflight("or.0")

    assert code == 1
    assert failed(output) == ["FAIL  epsilon/judge (juror): prices unknown on the models list "
                              "(prompt or completion price missing or negative)"]
    assert "delta/judge (juror): on the list; context 200,000 >= " in output
    assert "max output not stated (limited by the context only)" in output
    assert "not in the sums (prices unknown): epsilon/judge" in output


@pytest.mark.django_db
def test_the_reader_family_rule_is_a_check_with_its_message(
    imported_scenarios, models_server, settings, tmp_path
):
    config = {
        "code": "family.0", "language": "en", "models": MODELS,
        "writers": ["acme/writer-a", "gamma/judge"],
        "jurors": ["gamma/judge", "delta/judge", "epsilon/judge"], "reader": "gamma/judge",
        # A journalist, so that the reader's family is the file's only problem (every
        # problem is reported at once: uptake without a journalist would be one too).
        "journalist": "delta/judge",
        "scenarios": ["greenvale-listeria"], "tasks": ["T1"], "conditions": ["C0"],
    }
    (tmp_path / "family.0.yaml").write_text(yaml.safe_dump(config))
    settings.RELEASES_DIR = tmp_path

    code, output = preflight("family.0")

    assert code == 1
    assert failed(output) == [
        f"FAIL  {tmp_path}/family.0.yaml: reader: gamma/judge belongs to family 'gamma', as "
        f"writer(s) gamma/judge do; the reader must come from a family no writer belongs to"]
    assert not Release.objects.filter(code="family.0").exists()
    assert models_server.models_requests == 0


@pytest.mark.django_db
def test_a_fixture_release_needs_no_models_list_and_is_free(demo_release, monkeypatch):
    monkeypatch.setenv("OPENROUTER_BASE_URL", "http://127.0.0.1:9/api/v1")  # nothing listens

    code, output = preflight("demo.0")

    assert code == 0, output
    assert ("ok    fixture/candid (writer): fixture model, offline: free, no context or output "
            "limit (not looked up)") in output
    assert "fixture models are offline and free" in output
    assert "release total" in output and "models list" not in output.split("checks")[0]


# ---------------------------------------------------------------------------------------
# The models list: fetched once, cached, refreshed on request, a failed fetch
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_models_list_is_fetched_once_cached_and_refetched_when_asked_or_stale(
    imported_scenarios, models_server
):
    openrouter_release()

    preflight("or.0")
    preflight("or.0")
    assert models_server.models_requests == 1
    assert OpenRouterModelsList.objects.get().source == f"{models_server.base_url}/models"

    preflight("or.0", "--refresh")
    assert models_server.models_requests == 2

    OpenRouterModelsList.objects.update(fetched_at=timezone.now() - dt.timedelta(days=2))
    preflight("or.0")
    assert models_server.models_requests == 3


@pytest.mark.django_db
def test_a_failed_fetch_is_a_failed_check_or_falls_back_to_the_cached_list(
    imported_scenarios, models_server, monkeypatch
):
    openrouter_release()
    monkeypatch.setenv("OPENROUTER_BASE_URL", "http://127.0.0.1:9/api/v1")  # nothing listens

    code, output = preflight("or.0")
    assert code == 1
    assert failed(output) == ["FAIL  models list unavailable: http://127.0.0.1:9/api/v1/models: "
                              "ConnectError: could not fetch the models list"]

    monkeypatch.setenv("OPENROUTER_BASE_URL", models_server.base_url)
    preflight("or.0")  # cached now
    OpenRouterModelsList.objects.update(
        source="http://127.0.0.1:9/api/v1/models", fetched_at=timezone.now() - dt.timedelta(days=2))
    monkeypatch.setenv("OPENROUTER_BASE_URL", "http://127.0.0.1:9/api/v1")
    code, output = preflight("or.0")
    assert code == 0, output
    assert "warning: http://127.0.0.1:9/api/v1/models: ConnectError: could not fetch the models " \
           "list; using the list fetched" in output


def test_prices_are_read_as_usd_per_token_strings_and_bad_entries_are_named():
    models = parse_models_list({"data": [{
        "id": "x/y", "context_length": 1000,
        "pricing": {"prompt": "0.0000025", "completion": "0.00001", "request": "0.002",
                    "internal_reasoning": "0"},
        "top_provider": {"max_completion_tokens": None},
    }]}, "list")
    model = models["x/y"]
    assert (model.prompt_price, model.completion_price, model.request_price) == (
        2.5e-6, 1e-5, 0.002)
    # A zero reasoning price means reasoning is billed as completion tokens.
    assert model.price_per_reasoning_token == 1e-5 and model.max_completion_tokens is None

    with pytest.raises(Exception, match=r"list: data\[1\]: not a model with an 'id'"):
        parse_models_list({"data": [{"id": "a/b"}, {"name": "no id"}]}, "list")


# ---------------------------------------------------------------------------------------
# The estimate
# ---------------------------------------------------------------------------------------


def priced(ids: list[str], **prices: float) -> ModelsList:
    zero = {"prompt_price": 0.0, "completion_price": 0.0, "request_price": 0.0}
    return ModelsList({model_id: ModelListing(model_id, context_length=10**6,
                                              **(zero | prices)) for model_id in ids}, "test")


def by_stage(result) -> dict[str, tuple[float, float, float]]:
    return {total.label: (total.calls, round(total.low_usd, 6), round(total.high_usd, 6))
            for total in result.stage_totals}


@pytest.mark.django_db
def test_the_method_note_names_only_the_release_s_own_tasks_and_calls(imported_scenarios):
    t1_only = release_preflight(openrouter_release(
        code="t1.0", tasks=["T1"], stages=["generate", "refusal", "jury"]), None)
    interviews = release_preflight(openrouter_release(
        code="t4.0", tasks=["T1", "T3", "T4"],
        stages=["generate", "refusal", "jury", "panel", "uptake", "crossexam"]), None)

    assert "(T1 400 words)" in t1_only.method_note
    assert "typical replies (refusal 50, juror 500 tokens)" in t1_only.method_note
    assert "(T1 400 words, T3 80 words, T4 120 words)" in interviews.method_note
    for kind in ("reader 60", "journalist 250", "frame_judge 40", "crossexam 60",
                 "answer_judge 360"):
        assert kind in interviews.method_note
    assert "T2" not in interviews.method_note and "reveal" not in interviews.method_note


@pytest.mark.django_db
def test_the_estimate_against_a_hand_count(imported_scenarios):
    release = openrouter_release(code="hand.0", tasks=["T1", "T3"], conditions=["C0", "C2"],
                                 stages=["generate", "refusal", "jury"], text_budget=900,
                                 max_attempts=3, max_reply_attempts=2)
    # 2 writers x 1 scenario x 2 tasks x 2 conditions = 8 texts; every text's jury is all
    # three jurors (no juror shares a writer's family): 24 seats.

    # $0.01 a call and nothing per token: the calls, and the attempts of the high end.
    per_call = release_preflight(release, priced(IDS, request_price=0.01))
    assert by_stage(per_call) == {"generate": (8, 0.08, 0.24),  # 3 attempts
                                  "refusal": (8, 0.08, 0.16),  # 2 reply attempts
                                  "jury": (24, 0.24, 0.48)}
    assert {(line.model, line.calls) for line in per_call.lines if line.stage == "jury"} == {
        ("gamma/judge", 8), ("delta/judge", 8), ("epsilon/judge", 8)}

    # $1 per million completion tokens: typical sizes low, whole budgets high.
    completion = release_preflight(release, priced(IDS, completion_price=1e-6))
    typical_text = 4 * 400 * 4 / 3 + 4 * 80 * 4 / 3  # four T1 texts of 400 words, four T3 of 80
    assert by_stage(completion) == {
        "generate": (8, round(typical_text * 1e-6, 6), round(8 * 3 * (900 + 16_000) * 1e-6, 6)),
        "refusal": (8, round(8 * 50 * 1e-6, 6), round(8 * 2 * 4000 * 1e-6, 6)),
        "jury": (24, round(24 * 500 * 1e-6, 6), round(24 * 2 * 4000 * 1e-6, 6)),
    }

    # $1 per million prompt tokens: the writer prompts, counted here by hand (chars / 4).
    prompts = []
    document = release.scenario_versions.get().document()
    for task in ("T1", "T3"):
        for condition in ("C0", "C2"):
            prompts.append(assemble_writer_prompt(
                document=document, task_code=task,
                brief=Task.objects.get(code=task, language="en", version=1).brief,
                overlay=Condition.objects.get(code=condition, language="en", version=1).overlay,
            ).text)
    hand = 2 * sum(math.ceil(len(prompt) / 4) + 4 for prompt in prompts)  # two writers
    prompt_only = release_preflight(release, priced(IDS, prompt_price=1e-6))
    low, high = by_stage(prompt_only)["generate"][1:]
    assert low == pytest.approx(hand * 1e-6) and high == pytest.approx(3 * hand * 1e-6)


@pytest.mark.django_db
@pytest.mark.parametrize("code", ["demo.0", "en.0", "pilot.0"])
def test_the_calls_split_among_models_add_up_to_each_stages_planned_calls(
    imported_scenarios, code
):
    release = release_get_or_load(code=code)
    config = release.parsed_config()
    profiles = call_profiles(prompt_inputs(release))
    for stage in config.stages:
        split = sum(profile.total_calls for profile in profiles if profile.stage == stage)
        assert split == pytest.approx(get_stage(stage).planned_calls(config)), stage


@pytest.mark.django_db
def test_the_en0_snapshot_lists_every_model_of_en0_and_labels_itself_offline(
    imported_scenarios
):
    snapshot = read_models_file(SNAPSHOT)
    config = release_get_or_load(code="en.0").parsed_config()
    assert {spec.id for spec in config.models} <= set(snapshot.models)
    assert snapshot.offline and snapshot.note.startswith("OFFLINE SNAPSHOT")
    assert all(model.priced for model in snapshot.models.values())

    code, output = preflight("en.0", "--models-file", str(SNAPSHOT))
    assert "models list read from a file, not fetched" in output
    assert "not on OpenRouter's models list" not in output
    assert "release total" in output
