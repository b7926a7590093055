"""Replies shaped as real models send them through OpenRouter, per stage, through the real
OpenRouter client against the fake server: what is read without an extra call (several
fences, reasoning apart, extra keys, an array of one object, scale values as strings), what is
never scored (booleans, NaN, out-of-range values), the minimum calls of a clean run, and
the provider and language a text records. What was fixed after these probes found it lives
beside them: test_real_replies_writers.py, test_real_replies_structured.py and
test_real_replies_retries.py (shared support: reply_probes.py)."""

from __future__ import annotations

import json

import pytest

from runs_app.models import (
    AgentRun,
    Generation,
    JurorVerdict,
    ReaderResponse,
    RefusalCheck,
    ReplyOutcome,
    WorkStatus,
)
from runs_app.testing.fake_openrouter import FakeResponse
from runs_app.tests.reply_probes import (  # noqa: I001
    Shaped,
    body_for,
    calls_by_role,
    run,
)

# ---------------------------------------------------------------------------------------
# Baseline: a clean run, to know the minimum number of calls per role
# ---------------------------------------------------------------------------------------

CLEAN_T1 = {"write": 1, "refusal": 1, "juror": 3, "reader": 60, "journalist": 1, "frame": 1,
            "reveal": 3}


@pytest.mark.django_db
def test_clean_run_counts(imported_scenarios, monkeypatch):
    release, requests = run(Shaped("none", lambda p, c, n: c), monkeypatch)
    assert dict(calls_by_role(requests)) == CLEAN_T1
    assert set(ReaderResponse.objects.filter(release=release)
               .values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}


# ---------------------------------------------------------------------------------------
# Writers (generate)
# ---------------------------------------------------------------------------------------




@pytest.mark.django_db
def test_writer_missing_provider_is_recorded_absent(imported_scenarios, monkeypatch):
    def no_provider(p, c, n):
        body = body_for(c, p)
        body.pop("provider")
        body.pop("usage")
        return body
    release, requests = run(Shaped("write", no_provider), monkeypatch, stages=["generate"])
    text = Generation.objects.get(release=release)
    assert text.status == WorkStatus.DONE and len(requests) == 1
    assert text.upstream_provider is None
    assert text.cost_estimated and text.cost_usd and text.cost_usd > 0


@pytest.mark.django_db
def test_writer_english_text_for_a_dutch_release_is_caught(imported_scenarios, monkeypatch):
    english = ("The company said today that it has found the cause of the problem and that it "
               "apologises to everyone who was affected. It is working with the authorities "
               "and will publish more information as soon as it is known. The safety of our "
               "customers has the highest priority for the whole organisation.")
    release, _ = run(Shaped("write", lambda p, c, n: english), monkeypatch, stages=["generate"],
                     language="nl", scenario="zoetkamp-pinda-haverkoekjes")
    text = Generation.objects.get(release=release)
    assert text.status == WorkStatus.FAILED and "English" in text.error




# ---------------------------------------------------------------------------------------
# Structured replies (refusal, jury, panel, uptake, reveal)
# ---------------------------------------------------------------------------------------


def _two_fences(p, c, n):
    example = '```json\n{"field": "value", ...}\n```'
    return f"The format is:\n{example}\n\nMy answer:\n```json\n{c}\n```"


def _reasoning_tag(p, c, n):
    return f"<reasoning>I weigh it: {c[:40]}</reasoning>\n{c}"


def _reasoning_field(p, c, n):
    body = body_for(c, p)
    body["choices"][0]["message"]["reasoning"] = "Step by step: " + c
    return body


def _fence_no_lang_extra_keys(p, c, n):
    data = json.loads(c)
    data["confidence"] = 0.8
    return f"```\n{json.dumps(data)}\n```"


def _native_max_tokens_cut(p, c, n):
    return body_for(c[: len(c) // 2], p, finish_reason=None, native_finish_reason="MAX_TOKENS")


def _error_in_200(p, c, n):
    return {"error": {"code": 502, "message": "Upstream error", "metadata": {
        "provider_name": "Up", "raw": "boom"}}}


def _throttled_retry_after(p, c, n):
    return FakeResponse(429, {"error": {"code": 429, "message": "Rate limit"}},
                        headers={"Retry-After": "0.05"})


STRUCTURED = ["refusal", "juror", "reader", "journalist", "frame", "reveal"]
READABLE = [("two_fences", _two_fences), ("reasoning_tag", _reasoning_tag),
            ("reasoning_field", _reasoning_field), ("fence_extra_keys", _fence_no_lang_extra_keys)]


def _rows_of(release, role):
    if role == "refusal":
        return RefusalCheck.objects.filter(release=release)
    if role == "juror":
        return JurorVerdict.objects.filter(release=release)
    if role == "reader":
        return ReaderResponse.objects.filter(release=release)
    if role in ("journalist", "frame"):
        return AgentRun.objects.filter(release=release, kind="uptake")
    if role == "reveal":
        return AgentRun.objects.filter(release=release, kind="reveal")
    raise ValueError(role)


@pytest.mark.django_db
@pytest.mark.parametrize("role", STRUCTURED)
@pytest.mark.parametrize(("name", "shape"), READABLE)
def test_readable_structured_replies_cost_no_extra_call(imported_scenarios, monkeypatch, role,
                                                        name, shape):
    release, requests = run(Shaped(role, shape), monkeypatch)
    assert dict(calls_by_role(requests)) == CLEAN_T1
    rows = _rows_of(release, role)
    assert set(rows.values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}


@pytest.mark.django_db
def test_error_in_200_and_429_cost_one_retry_each(imported_scenarios, monkeypatch):
    shape = Shaped("refusal", lambda p, c, n: _error_in_200(p, c, n) if n == 1 else
                   (_throttled_retry_after(p, c, n) if n == 2 else c), repairs=True)
    release, requests = run(shape, monkeypatch, stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert check.outcome == ReplyOutcome.SCORED
    assert calls_by_role(requests)["refusal"] == 3


# ---------------------------------------------------------------------------------------
# Values: what a reader's scale answer may be
# ---------------------------------------------------------------------------------------


def _reader_with(value_json: str):
    def shape(p, c, n):
        data = json.loads(c)
        first = sorted(data["attitude"])[0]
        text = json.dumps(data)
        return text.replace(f'"{first}": 4', f'"{first}": {value_json}', 1)
    return shape


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "scored"), [
    ('"7"', True), ("7.0", True), ("true", False), ('"seven"', False), ("NaN", False),
    ("1e309", False), ("8", False), ("0", False), ("4.5", False), ("-Infinity", False),
    ('"4.0"', True), ("null", False), ("[4]", False), ('{"value": 4}', False),
])
def test_reader_scale_values(imported_scenarios, monkeypatch, value, scored):
    shape = Shaped("reader", _reader_with(value), times=1)
    release, requests = run(shape, monkeypatch, stages=["generate", "refusal", "panel"])
    rows = ReaderResponse.objects.filter(release=release)
    first = sorted(rows.values_list("raw_replies", "attitude", "outcome", "attempts"),
                   key=lambda row: -row[3])
    extra = calls_by_role(requests)["reader"] - 60
    assert extra == (0 if scored else 1), (value, extra, first[0])
    if not scored:
        # the invalid reply was never taken as a score: the repair's answer (all 4s) was
        assert all(a == [4, 4, 4] for a in rows.values_list("attitude", flat=True))


@pytest.mark.django_db
def test_a_readers_dont_know_spelled_as_people_write_it_costs_no_repair(imported_scenarios,
                                                                        monkeypatch):
    """The prompt asks for "dont_know"; a reader that writes "don't know" gives the same
    answer: scored from its first reply as don't know, no second paid call."""
    def spelled(p, c, n):
        data = json.loads(c)
        data["knowledge"] = {qid: "don't know" for qid in data["knowledge"]}
        return json.dumps(data)
    release, requests = run(Shaped("reader", spelled, times=1), monkeypatch,
                            stages=["generate", "refusal", "panel"])
    assert calls_by_role(requests)["reader"] == CLEAN_T1["reader"]
    rows = ReaderResponse.objects.filter(release=release)
    assert set(rows.values_list("outcome", "attempts")) == {(ReplyOutcome.SCORED, 1)}
    assert [None] * 4 in list(rows.values_list("knowledge", flat=True))


@pytest.mark.django_db
def test_array_of_one_object_is_read(imported_scenarios, monkeypatch):
    release, requests = run(Shaped("refusal", lambda p, c, n: f"[{c}]"), monkeypatch,
                            stages=["generate", "refusal"])
    assert calls_by_role(requests)["refusal"] == 1


# ---------------------------------------------------------------------------------------
# Cross-examination: the spokesperson's answers are a writer's texts too (section 5)
# ---------------------------------------------------------------------------------------

T4_STAGES = ["generate", "refusal", "crossexam"]
CLEAN_T4 = {"write": 1, "refusal": 1, "question": 5, "answer": 5, "labels": 1}


def _t4(shape, monkeypatch):
    return run(shape, monkeypatch, tasks=("T4",), stages=T4_STAGES)


@pytest.mark.django_db
def test_t4_clean_counts(imported_scenarios, monkeypatch):
    release, requests = _t4(Shaped("none", lambda p, c, n: c), monkeypatch)
    assert dict(calls_by_role(requests)) == CLEAN_T4


# ---------------------------------------------------------------------------------------
# Uptake: a valid journalist story is not paid for again when its frame judge fails
# ---------------------------------------------------------------------------------------




# ---------------------------------------------------------------------------------------
# Faults: how many calls a failing upstream gets
# ---------------------------------------------------------------------------------------






