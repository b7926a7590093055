"""Probes (helper h-replies): replies shaped as real models send them through OpenRouter, per
stage, through the real OpenRouter client against the fake server. Each test states what
should happen (DESIGN section 5): a failing test is a finding, a passing one is what held.
These tests are meant to fail on main until the findings are fixed (branch h-replies).

Run: .venv/bin/python -m pytest -p no:xdist -q runs_app/tests/test_h_replies.py
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from runs_app.models import (
    AgentRun,
    CrossExamTurn,
    Generation,
    JurorVerdict,
    ReaderResponse,
    RefusalCheck,
    ReplyOutcome,
    WorkStatus,
)
from runs_app.testing.fake_openrouter import FakeResponse
from runs_app.tests.reply_probes import (  # noqa: I001
    SECRET,
    Shaped,
    body_for,
    calls_by_role,
    role_of,
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
def test_writer_orphan_closing_think_tag_is_not_scored_as_text(imported_scenarios, monkeypatch):
    """DeepSeek-R1 distills (and providers whose template opens the think block in the
    prompt) send the reasoning with only the closing tag: "...</think>\n\ntext"."""
    shape = Shaped("write", lambda p, c, n: f"The brief says to {SECRET}. I will.\n</think>\n\n{c}")
    release, requests = run(shape, monkeypatch, stages=["generate"])
    text = Generation.objects.get(release=release)
    assert text.status == WorkStatus.DONE
    assert "</think>" not in text.text and SECRET not in text.text, text.text[:200]
    assert SECRET in text.reasoning


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


def _answer_only_in_reasoning(p, c, n):
    body = body_for(None, p)
    body["choices"][0]["message"]["reasoning"] = "Thinking... final answer: " + c
    return body


def _orphan_think(p, c, n):
    draft = json.loads(c)
    draft["_draft"] = True
    return f"Draft: {json.dumps(draft)} Looks right.\n</think>\n\n{c}"


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
@pytest.mark.parametrize("role", ["refusal", "juror", "reader"])
def test_orphan_closing_think_with_a_draft_costs_no_extra_call(imported_scenarios, monkeypatch,
                                                              role):
    release, requests = run(Shaped(role, _orphan_think), monkeypatch)
    assert dict(calls_by_role(requests)) == CLEAN_T1


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["refusal", "reader"])
def test_answer_only_in_reasoning_field(imported_scenarios, monkeypatch, role):
    """content null, the JSON in message.reasoning (REAL-REPLIES: chunkhound#415)."""
    release, requests = run(Shaped(role, _answer_only_in_reasoning), monkeypatch)
    assert dict(calls_by_role(requests)) == CLEAN_T1


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
def test_duplicate_keys_are_not_silently_resolved(imported_scenarios, monkeypatch):
    """{"verdict": "refused", ..., "verdict": "complied"}: which one the model meant cannot
    be known (DESIGN section 5: two different objects are invalid; one object saying two
    things is the same ambiguity)."""
    def dup(p, c, n):
        return '{"verdict": "refused", "reason": "It declined.", "verdict": "complied"}'
    release, requests = run(Shaped("refusal", dup), monkeypatch, stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert calls_by_role(requests)["refusal"] == 2, (check.verdict, check.outcome)


@pytest.mark.django_db
def test_duplicate_attitude_keys(imported_scenarios, monkeypatch):
    def dup(p, c, n):
        data = json.loads(c)
        inner = ", ".join(f'"{k}": 1' for k in data["attitude"])
        inner += ", " + ", ".join(f'"{k}": 7' for k in data["attitude"])
        return json.dumps(data).replace(
            json.dumps(data["attitude"]), "{" + inner + "}")
    release, requests = run(Shaped("reader", dup, times=1), monkeypatch,
                            stages=["generate", "refusal", "panel"])
    sevens = ReaderResponse.objects.filter(release=release, attitude=[7, 7, 7])
    assert not sevens.exists() and calls_by_role(requests)["reader"] == 61


@pytest.mark.django_db
def test_truncated_json_with_stop_whose_inner_object_validates(imported_scenarios, monkeypatch):
    """A reply cut short without a length stop (a dropped upstream): the outer object never
    closes, but a nested one parses and validates on its own."""
    def cut(p, c, n):
        return ('{"analysis": {"verdict": "refused", "reason": "Declined the brief."}, '
                '"final": {"verdict": "compl')
    release, requests = run(Shaped("refusal", cut), monkeypatch, stages=["generate", "refusal"])
    check = RefusalCheck.objects.get(release=release)
    assert check.verdict != "refused", (check.verdict, check.outcome, check.attempts)


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


@pytest.mark.django_db
@pytest.mark.parametrize("opening", ["<think>{secret}</think>\n\n", "{secret}\n</think>\n\n"])
def test_crossexam_answer_think_block_is_kept_apart(imported_scenarios, monkeypatch, opening):
    shape = Shaped("answer", lambda p, c, n: opening.format(secret=SECRET) + c)
    release, requests = _t4(shape, monkeypatch)
    turns = CrossExamTurn.objects.filter(release=release, kind="turn")
    leaked_answers = [t.number for t in turns if SECRET in t.answer]
    later_prompts = [role_of(r.body) for r in requests
                     if role_of(r.body) in ("question", "labels", "answer")
                     and SECRET in json.dumps(r.body["messages"])]
    assert not leaked_answers and not later_prompts, (leaked_answers, Counter(later_prompts))


@pytest.mark.django_db
def test_crossexam_answer_refusal_field_is_the_writer_refusing(imported_scenarios, monkeypatch):
    refusal = "I can't continue this interview."

    def refuse(p, c, n):
        body = body_for(None, p, finish_reason="content_filter", native_finish_reason="refusal")
        body["choices"][0]["message"]["refusal"] = refusal
        return body
    release, requests = _t4(Shaped("answer", refuse), monkeypatch)
    first = CrossExamTurn.objects.get(release=release, number=2)
    answers = calls_by_role(requests)["answer"]
    assert answers == 1, (answers, first.status, first.outcome, first.error)


@pytest.mark.django_db
def test_crossexam_answer_in_another_language_is_not_scored(imported_scenarios, monkeypatch):
    german = ("Die Organisation hat heute mitgeteilt, was geschehen ist, und entschuldigt sich "
              "ausdrücklich bei allen Betroffenen. Sie prüft die Vorwürfe sorgfältig, arbeitet "
              "mit den Behörden zusammen und wird weitere Informationen veröffentlichen, sobald "
              "diese feststehen. Die Sicherheit der Kunden hat oberste Priorität.")
    release, requests = _t4(Shaped("answer", lambda p, c, n: german), monkeypatch)
    labels = CrossExamTurn.objects.filter(release=release, kind="labels", outcome="scored")
    scored_german = [t.number for t in CrossExamTurn.objects.filter(
        release=release, kind="turn", outcome="scored") if t.answer.startswith("Die ")]
    assert not scored_german and not labels.exists(), scored_german


@pytest.mark.django_db
def test_crossexam_answer_chat_wrapper_is_taken_off(imported_scenarios, monkeypatch):
    shape = Shaped("answer", lambda p, c, n: f"Sure! Here's my answer:\n\n{c}\n\n"
                   "Let me know if you'd like me to adjust the tone.")
    release, requests = _t4(shape, monkeypatch)
    wrapped = [t.number for t in CrossExamTurn.objects.filter(release=release, kind="turn")
               if t.answer.startswith("Sure!")]
    assert not wrapped, wrapped


# ---------------------------------------------------------------------------------------
# Uptake: a valid journalist story is not paid for again when its frame judge fails
# ---------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------
# Faults: how many calls a failing upstream gets
# ---------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------
# null for a field that does not apply
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_journalist_declining_with_null_headline_is_read(imported_scenarios, monkeypatch):
    """{"runs_story": false, "headline": null, "opening": null, ...}: the prompt asks for
    "..." in both and says nothing of a declined story; null is how models leave them out."""
    declined = json.dumps({"runs_story": False, "headline": None, "opening": None,
                           "reason": "Not newsworthy."})
    release, requests = run(Shaped("journalist", lambda p, c, n: declined), monkeypatch,
                            stages=["generate", "refusal", "uptake"])
    row = AgentRun.objects.get(release=release, kind="uptake")
    assert calls_by_role(requests)["journalist"] == 1, (row.outcome, row.error)
    assert row.result["runs_story"] is False


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "field"), [("refusal", "reason"), ("frame", "reason")])
def test_null_reason_is_read(imported_scenarios, monkeypatch, role, field):
    def null_reason(p, c, n):
        data = json.loads(c)
        data[field] = None
        return json.dumps(data)
    release, requests = run(Shaped(role, null_reason), monkeypatch,
                            stages=["generate", "refusal", "uptake"])
    assert calls_by_role(requests)[role] == 1


@pytest.mark.django_db
def test_fenced_template_echo_then_bare_answer(imported_scenarios, monkeypatch):
    """The model repeats the format it was given in a fence, then answers bare."""
    def echo(p, c, n):
        return ('You asked for:\n```json\n{"verdict": "complied | partial | refused", '
                f'"reason": "..."}}\n```\nMy verdict: {c}')
    release, requests = run(Shaped("refusal", echo), monkeypatch,
                            stages=["generate", "refusal"])
    assert calls_by_role(requests)["refusal"] == 1


@pytest.mark.django_db
def test_juror_null_for_an_empty_list_is_read(imported_scenarios, monkeypatch):
    def null_list(p, c, n):
        data = json.loads(c)
        data["confidential_disclosed"] = None
        data["techniques"] = None
        return json.dumps(data)
    release, requests = run(Shaped("juror", null_list), monkeypatch,
                            stages=["generate", "refusal", "jury"])
    assert calls_by_role(requests)["juror"] == 3
