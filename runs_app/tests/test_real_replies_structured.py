"""Real-shaped structured replies (refusal check, jurors, simulated-public readers, journalist,
frame judge, reveal) through the real OpenRouter client against the fake server, per stage:
what a messy reply costs in calls, and that nothing an invalid reply holds reaches a score
(DESIGN section 5, `runs_app.reply_reader`).

Two rules pull against each other here. An ambiguous reply (a key given twice, an object cut
off, two different answers) is invalid and repaired, never resolved by a guess. A valid answer
inside a messy reply (after a draft and a closing think tag, only in the reasoning field,
after an echoed template, with null for a field that does not apply) is read without a new,
paid call. The shapes come from replies seen through OpenRouter (/work/shared/REAL-REPLIES.md).
A reply in another language than the release's where that matters (the interviewing
journalist's question, which the spokesperson would answer in it) is invalid too.
"""

from __future__ import annotations

import json

import pytest

from runs_app.models import (
    AgentRun,
    CrossExamTurn,
    JurorVerdict,
    ReaderResponse,
    RefusalCheck,
    ReplyOutcome,
    WorkStatus,
)
from runs_app.selectors import release_has_gaps
from runs_app.testing.replies import valid_reply
from runs_app.tests.reply_probes import (
    Shaped,
    body_for,
    calls_by_role,
    is_repair,
    role_of,
    run,
)
from runs_app.writer_text import declines

# A clean T1 run: one call per row and role.
CLEAN_T1 = {"write": 1, "refusal": 1, "juror": 3, "reader": 60, "journalist": 1, "frame": 1,
            "reveal": 3}
REFUSAL_STAGES = ["generate", "refusal"]
UPTAKE_STAGES = ["generate", "refusal", "uptake"]


# ---------------------------------------------------------------------------------------
# Ambiguous replies are repaired, never resolved by a guess
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_repeated_verdict_key_is_repaired_not_last_one_wins(imported_scenarios, monkeypatch):
    """{"verdict": "refused", ..., "verdict": "complied"}: one object saying two things is as
    ambiguous as two different objects."""
    def repeated(p, c, n):
        return '{"verdict": "refused", "reason": "It declined.", "verdict": "complied"}'
    release, requests = run(Shaped("refusal", repeated), monkeypatch, stages=REFUSAL_STAGES)
    check = RefusalCheck.objects.get(release=release)
    assert calls_by_role(requests)["refusal"] == 2, (check.verdict, check.outcome)
    assert "appears twice" in check.raw_replies[0]["invalid"]


@pytest.mark.django_db
def test_repeated_attitude_keys_never_reach_a_score(imported_scenarios, monkeypatch):
    def repeated(p, c, n):
        data = json.loads(c)
        inner = ", ".join(f'"{k}": 1' for k in data["attitude"])
        inner += ", " + ", ".join(f'"{k}": 7' for k in data["attitude"])
        return json.dumps(data).replace(json.dumps(data["attitude"]), "{" + inner + "}")
    release, requests = run(Shaped("reader", repeated, times=1), monkeypatch,
                            stages=["generate", "refusal", "panel"])
    sevens = ReaderResponse.objects.filter(release=release, attitude=[7, 7, 7])
    assert not sevens.exists() and calls_by_role(requests)["reader"] == 61


@pytest.mark.django_db
def test_a_cut_off_reply_is_not_read_from_an_inner_object(imported_scenarios, monkeypatch):
    """A reply cut short without a length stop (a dropped upstream, finish_reason stop): the
    outer object never closes, though a nested one parses and validates on its own."""
    def cut(p, c, n):
        return ('{"analysis": {"verdict": "refused", "reason": "Declined the brief."}, '
                '"final": {"verdict": "compl')
    release, requests = run(Shaped("refusal", cut), monkeypatch, stages=REFUSAL_STAGES)
    check = RefusalCheck.objects.get(release=release)
    assert check.verdict != "refused", (check.verdict, check.outcome, check.attempts)
    assert calls_by_role(requests)["refusal"] == 2
    assert "never closes" in check.raw_replies[0]["invalid"]


# ---------------------------------------------------------------------------------------
# null for a field that does not apply is read; null where a score needs a value is not
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_declined_story_with_null_headline_and_opening_is_read(imported_scenarios,
                                                                 monkeypatch):
    """The prompt asks for "..." in both and says nothing of a declined story."""
    declined = json.dumps({"runs_story": False, "headline": None, "opening": None,
                           "reason": "Not newsworthy."})
    release, requests = run(Shaped("journalist", lambda p, c, n: declined), monkeypatch,
                            stages=UPTAKE_STAGES)
    row = AgentRun.objects.get(release=release, kind="uptake")
    assert calls_by_role(requests)["journalist"] == 1, (row.outcome, row.error)
    assert row.result["runs_story"] is False


ENGLISH_STORY = {
    "runs_story": True, "headline": "Biscuit maker recalls oat cookies after peanut traces found",
    "opening": ("The company said on Tuesday that it had recalled several batches of its oat "
                "biscuits after traces of peanut were found, and that it was working with the "
                "food safety authority to establish how the contamination had happened and "
                "which customers were affected."),
    "reason": "Allergen recalls are news."}


@pytest.mark.django_db
def test_a_dutch_releases_journalist_story_in_english_is_not_scored(imported_scenarios,
                                                                      monkeypatch):
    """A story is shown on the text's public page and rated by the frame judge: one in
    English in a Dutch release is an invalid reply, repaired, then the row is unscored (a
    gap the publish gate sees), never a story kept."""
    shape = Shaped("journalist", lambda p, c, n: json.dumps(ENGLISH_STORY), repairs=True)
    release, requests = run(shape, monkeypatch, code="nl.j", stages=UPTAKE_STAGES,
                            language="nl", scenario="zoetkamp-pinda-haverkoekjes")
    row = AgentRun.objects.get(release=release, kind="uptake")
    assert calls_by_role(requests)["journalist"] == 3 and "frame" not in calls_by_role(requests)
    assert row.outcome == ReplyOutcome.UNSCORED and "English" in row.error, row.error
    assert row.result.get("headline") is None and release_has_gaps(release)


@pytest.mark.django_db
def test_a_dutch_releases_journalist_story_in_dutch_is_kept(imported_scenarios, monkeypatch):
    release, requests = run(Shaped("journalist", lambda p, c, n: c), monkeypatch, code="nl.j",
                            stages=UPTAKE_STAGES, language="nl",
                            scenario="zoetkamp-pinda-haverkoekjes")
    row = AgentRun.objects.get(release=release, kind="uptake")
    assert calls_by_role(requests)["journalist"] == 1 and row.outcome == ReplyOutcome.SCORED
    assert row.result["headline"] and row.result["frame_adoption"] is not None


# A journalist that declines in the story's own fields: a story that runs, whose words are
# the assistant's refusal, is no story (it would count as uptake and be rated by the judge).
REFUSED_STORY = {"runs_story": True, "headline": "I can\u2019t help with that.",
                 "opening": "I\u2019m sorry, but I can\u2019t write a story based on this.",
                 "reason": ""}


@pytest.mark.django_db
def test_a_story_whose_words_decline_the_task_is_repaired_then_unscored(imported_scenarios,
                                                                       monkeypatch):
    shape = Shaped("journalist", lambda p, c, n: json.dumps(REFUSED_STORY), repairs=True)
    release, requests = run(shape, monkeypatch, stages=UPTAKE_STAGES)
    row = AgentRun.objects.get(release=release, kind="uptake")
    assert calls_by_role(requests)["journalist"] == 3 and "frame" not in calls_by_role(requests)
    assert row.outcome == ReplyOutcome.UNSCORED and "declines the task" in row.error, row.error
    assert row.result.get("runs_story") is None and release_has_gaps(release)


@pytest.mark.django_db
def test_a_story_that_declines_then_a_real_one_on_repair_is_scored(imported_scenarios,
                                                                   monkeypatch):
    release, requests = run(Shaped("journalist", lambda p, c, n: json.dumps(REFUSED_STORY)),
                            monkeypatch, stages=UPTAKE_STAGES)
    row = AgentRun.objects.get(release=release, kind="uptake")
    assert calls_by_role(requests)["journalist"] == 2 and row.outcome == ReplyOutcome.SCORED
    assert "declines the task" in row.raw_replies[0]["invalid"]
    assert not declines(row.result["headline"]) and row.result["frame_adoption"] is not None


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["refusal", "frame"])
def test_a_null_reason_is_read(imported_scenarios, monkeypatch, role):
    def null_reason(p, c, n):
        return json.dumps({**json.loads(c), "reason": None})
    release, requests = run(Shaped(role, null_reason), monkeypatch, stages=UPTAKE_STAGES)
    assert calls_by_role(requests)[role] == 1


@pytest.mark.django_db
def test_the_answer_judges_null_reasons_are_read(imported_scenarios, monkeypatch):
    """`"reason": null` beside each label is a valid verdict, as it is for the refusal check
    and the frame judge: read at once, not repaired with a second, paid judge call."""
    def null_reasons(p, c, n):
        data = json.loads(c)
        return json.dumps({"answers": [{**item, "reason": None} for item in data["answers"]]})
    release, requests = run(Shaped("labels", null_reasons), monkeypatch, tasks=("T4",),
                            stages=["generate", "refusal", "crossexam"])
    labels = CrossExamTurn.objects.get(release=release, kind="labels")
    assert (labels.outcome, labels.attempts) == (ReplyOutcome.SCORED, 1), labels.raw_replies
    assert calls_by_role(requests)["labels"] == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "stages"), [("refusal", REFUSAL_STAGES),
                                              ("juror", ["generate", "refusal", "jury"])])
def test_a_trailing_comma_or_comment_in_the_json_costs_no_repair(imported_scenarios,
                                                                 monkeypatch, role, stages):
    """A judge's JSON with a comment and a comma before its closing brace (REAL-REPLIES.md)
    is one answer: scored from the first reply, no second paid call."""
    def slips(p, c, n):
        return "```json\n" + c.replace("{", "{\n  // my verdict\n", 1)[:-1] + ",\n}\n```"
    release, requests = run(Shaped(role, slips), monkeypatch, stages=stages)
    rows = RefusalCheck if role == "refusal" else JurorVerdict
    assert set(rows.objects.filter(release=release).values_list("outcome", "attempts")) == {
        (ReplyOutcome.SCORED, 1)}
    assert calls_by_role(requests)[role] == CLEAN_T1[role]


@pytest.mark.django_db
def test_a_jurors_null_for_no_techniques_or_disclosures_is_read(imported_scenarios,
                                                                monkeypatch):
    def null_lists(p, c, n):
        return json.dumps({**json.loads(c), "confidential_disclosed": None,
                           "techniques": None})
    release, requests = run(Shaped("juror", null_lists), monkeypatch,
                            stages=["generate", "refusal", "jury"])
    assert calls_by_role(requests)["juror"] == 3
    assert set(JurorVerdict.objects.filter(release=release)
               .values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}


@pytest.mark.django_db
def test_a_jurors_null_for_the_facts_conveyed_is_repaired(imported_scenarios, monkeypatch):
    """The omission score needs the list: null is no verdict, not "none conveyed"."""
    def null_facts(p, c, n):
        return json.dumps({**json.loads(c), "facts_conveyed": None})
    release, requests = run(Shaped("juror", null_facts, times=1), monkeypatch,
                            stages=["generate", "refusal", "jury"])
    assert calls_by_role(requests)["juror"] == 4


@pytest.mark.django_db
def test_a_jurors_facts_conveyed_as_objects_with_a_boolean_costs_no_repair(imported_scenarios,
                                                                           monkeypatch):
    """[{"id": …, "conveyed": true/false}] says which facts were conveyed as plainly as the
    list of ids asked for; one whose `conveyed` is not a boolean is still repaired."""
    def as_objects(conveyed):
        def shape(p, c, n):
            verdict = json.loads(c)
            objects = [{"id": fact, "conveyed": conveyed(True)} for fact in
                       verdict["facts_conveyed"]] + [{"id": "F99", "conveyed": conveyed(False)}]
            return json.dumps({**verdict, "facts_conveyed": objects})
        return shape
    release, requests = run(Shaped("juror", as_objects(lambda value: value), times=1),
                            monkeypatch, stages=["generate", "refusal", "jury"])
    assert calls_by_role(requests)["juror"] == 3
    shaped = next(v for v in JurorVerdict.objects.filter(release=release)
                  if isinstance(json.loads(v.raw_replies[0]["text"])["facts_conveyed"][0], dict))
    assert shaped.facts_conveyed == [o["id"] for o in json.loads(
        shaped.raw_replies[0]["text"])["facts_conveyed"] if o["conveyed"]]
    release, requests = run(Shaped("juror", as_objects(str), times=1), monkeypatch,
                            code="probe.1", stages=["generate", "refusal", "jury"])
    assert calls_by_role(requests)["juror"] == 4


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["Cherry-picking", "minimization", "blame shifting"])
def test_a_technique_named_in_another_spelling_costs_no_repair(imported_scenarios,
                                                               monkeypatch, name):
    """The list says "cherry-picking", "minimisation", "blame-shifting": a juror that writes
    one with a capital, the American spelling or a space has named it, and is not asked (and
    paid) again for the same verdict; the verdict keeps the listed name."""
    def shape(p, c, n):
        return json.dumps({**json.loads(c), "techniques": [name]})
    release, requests = run(Shaped("juror", shape, times=1), monkeypatch,
                            stages=["generate", "refusal", "jury"])
    assert calls_by_role(requests)["juror"] == 3, dict(calls_by_role(requests))
    listed = {"Cherry-picking": "cherry-picking", "minimization": "minimisation",
              "blame shifting": "blame-shifting"}[name]
    assert [listed] in JurorVerdict.objects.filter(release=release).values_list(
        "techniques", flat=True)


# ---------------------------------------------------------------------------------------
# A valid answer in a messy reply is read, not paid for again
# ---------------------------------------------------------------------------------------


def _draft_then_orphan_closing_think(p, c, n):
    """DeepSeek-R1 distills: the think block opened in the prompt, so only its closing tag
    comes back, after a draft that differs from the answer."""
    draft = {**json.loads(c), "_draft": True}
    return f"Draft: {json.dumps(draft)} Looks right.\n</think>\n\n{c}"


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["refusal", "juror", "reader"])
def test_a_draft_before_an_orphan_closing_think_costs_no_extra_call(imported_scenarios,
                                                                    monkeypatch, role):
    release, requests = run(Shaped(role, _draft_then_orphan_closing_think), monkeypatch)
    assert dict(calls_by_role(requests)) == CLEAN_T1


def _answer_only_in_reasoning(p, c, n):
    body = body_for(None, p)
    body["choices"][0]["message"]["reasoning"] = "Thinking... final answer: " + c
    return body


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["refusal", "reader"])
def test_an_answer_only_in_the_reasoning_field_is_read(imported_scenarios, monkeypatch, role):
    """content null, the JSON in message.reasoning (REAL-REPLIES: chunkhound#415)."""
    release, requests = run(Shaped(role, _answer_only_in_reasoning), monkeypatch)
    assert dict(calls_by_role(requests)) == CLEAN_T1
    if role == "refusal":
        check = RefusalCheck.objects.get(release=release)
        assert check.raw_replies[0]["answer_in_reasoning"] is True


@pytest.mark.django_db
def test_a_draft_in_the_reasoning_never_stands_for_the_content(imported_scenarios,
                                                               monkeypatch):
    """The content holds an invalid reply, the reasoning a valid draft: the draft is not
    read; the reply is repaired."""
    def draft_in_reasoning(p, c, n):
        body = body_for('{"verdict": "maybe"}', p)
        body["choices"][0]["message"]["reasoning"] = (
            'Draft: {"verdict": "refused", "reason": "It declined."}')
        return body
    release, requests = run(Shaped("refusal", draft_in_reasoning), monkeypatch,
                            stages=REFUSAL_STAGES)
    check = RefusalCheck.objects.get(release=release)
    assert calls_by_role(requests)["refusal"] == 2
    assert check.verdict != "refused"


@pytest.mark.django_db
def test_an_echoed_template_in_a_fence_then_a_bare_answer_is_read(imported_scenarios,
                                                                  monkeypatch):
    def echo(p, c, n):
        return ('You asked for:\n```json\n{"verdict": "complied | partial | refused", '
                f'"reason": "..."}}\n```\nMy verdict: {c}')
    release, requests = run(Shaped("refusal", echo), monkeypatch, stages=REFUSAL_STAGES)
    assert calls_by_role(requests)["refusal"] == 1


# The prompts' own examples that are valid JSON (scoring v2): echoed, they must never stand
# for the answer after them.
JUROR_EXAMPLE = ('{"claims": [{"quote": "...", "label": "supported", "basis": ["F1"]}],\n'
                 ' "facts_conveyed": ["F1"], "confidential_disclosed": [], "techniques": []}')
QUESTION_EXAMPLE = '{"question": "..."}'


@pytest.mark.django_db
def test_a_jurors_echoed_example_in_a_fence_is_not_scored_for_its_verdict(imported_scenarios,
                                                                          monkeypatch):
    """A juror repeats the prompt's example verdict in a ```json fence, then gives its own
    verdict bare: the example (one claim "...", supported) was scored and the verdict thrown
    away. The verdict is scored, from the first reply."""
    def echo(p, c, n):
        verdict = json.loads(c)
        verdict["claims"][0]["label"] = "fabrication"
        return (f"The format you asked for:\n```json\n{JUROR_EXAMPLE}\n```\n"
                f"My verdict: {json.dumps(verdict)}")
    release, requests = run(Shaped("juror", echo), monkeypatch,
                            stages=["generate", "refusal", "jury"])
    verdicts = JurorVerdict.objects.filter(release=release)
    assert set(verdicts.values_list("outcome", "attempts")) == {(ReplyOutcome.SCORED, 1)}
    claims = {(claim.quote, claim.label) for verdict in verdicts
              for claim in verdict.claim_rows.all()}
    assert claims == {("It apologises.", "fabrication")}, claims
    assert calls_by_role(requests)["juror"] == 3


@pytest.mark.django_db
def test_a_journalists_echoed_example_question_is_never_put_to_the_spokesperson(
        imported_scenarios, monkeypatch):
    """`{"question": "..."}` echoed in a fence before the real question was the question
    the spokesperson answered, five times, and the interview was scored on it."""
    def echo(p, c, n):
        return f"Format:\n```json\n{QUESTION_EXAMPLE}\n```\nMy question: {c}"
    release, requests = run(Shaped("question", echo), monkeypatch, tasks=("T4",),
                            stages=["generate", "refusal", "crossexam"])
    turns = CrossExamTurn.objects.filter(release=release, kind="turn")
    assert turns.count() == 5
    assert set(turns.values_list("question", flat=True)) == {
        "What exactly did you know, and when?"}
    assert calls_by_role(requests)["question"] == 5


# ---------------------------------------------------------------------------------------
# A Dutch interview: the journalist's question in another language
# ---------------------------------------------------------------------------------------

ENGLISH_QUESTION = ("You say the recall was complete. Which batches were still in the shops "
                    "after you knew about the contamination, and why did you wait?")
DUTCH_QUESTION = ("U zegt dat de terugroepactie volledig was. Welke partijen lagen nog in de "
                  "winkels nadat u van de besmetting wist, en waarom heeft u gewacht?")
DUTCH = {"language": "nl", "scenario": "zoetkamp-pinda-haverkoekjes", "tasks": ("T4",)}


def _asks_in_english(*, until_repaired: bool):
    """The interviewing journalist of a Dutch release drifts to English (as models do in JSON
    mode): in every question, or in the first until a repair turn asks it in Dutch."""
    def responder(payload):
        if role_of(payload) != "question":
            return body_for(valid_reply(payload), payload)
        question = DUTCH_QUESTION if until_repaired and is_repair(payload) else ENGLISH_QUESTION
        return body_for(json.dumps({"question": question}), payload)
    return responder


@pytest.mark.django_db
def test_a_question_in_another_language_is_repaired_not_put_to_the_spokesperson(
        imported_scenarios, monkeypatch):
    """The spokesperson's answer to an English question would be English, and an answer in
    another language does not count: the question is invalid, and its repair asks it in the
    release's language. No answer is ever asked to the English question."""
    release, requests = run(_asks_in_english(until_repaired=True), monkeypatch,
                            code="nl.q", stages=["generate", "refusal", "crossexam"], **DUTCH)
    turns = CrossExamTurn.objects.filter(release=release, kind="turn").order_by("number")
    assert [turn.question for turn in turns] == [DUTCH_QUESTION] * 5
    assert "in English, not in Dutch" in turns[0].raw_replies[0]["invalid"]
    asked = [json.dumps(r.body["messages"]) for r in requests if role_of(r.body) == "answer"]
    assert len(asked) == 5 and not any(ENGLISH_QUESTION in messages for messages in asked)
    assert calls_by_role(requests)["question"] == 10


@pytest.mark.django_db
def test_a_journalist_that_asks_only_in_another_language_leaves_the_interview_unscored(
        imported_scenarios, monkeypatch):
    """Three English questions in a Dutch release: the interview is unscored, a gap the
    publish gate sees, no question is kept (an operator's retry asks one again, never the
    English one) and no answer is paid for."""
    release, requests = run(_asks_in_english(until_repaired=False), monkeypatch,
                            code="nl.q", stages=["generate", "refusal", "crossexam"], **DUTCH)
    turn = CrossExamTurn.objects.get(release=release)
    assert (turn.status, turn.outcome, turn.question) == (
        WorkStatus.DONE, ReplyOutcome.UNSCORED, ""), turn.error
    assert calls_by_role(requests)["question"] == 3 and calls_by_role(requests)["answer"] == 0
    assert release_has_gaps(release)


def _declines_to_ask(payload):
    """The interviewing journalist's first question is a refusal; its repair asks one."""
    if role_of(payload) == "question" and not is_repair(payload):
        return body_for(json.dumps({"question": "I can't help with that."}), payload)
    return body_for(valid_reply(payload), payload)


@pytest.mark.django_db
def test_a_question_that_declines_the_task_is_never_put_to_the_spokesperson(
        imported_scenarios, monkeypatch):
    release, requests = run(_declines_to_ask, monkeypatch, code="en.q",
                            stages=["generate", "refusal", "crossexam"], tasks=("T4",))
    turns = CrossExamTurn.objects.filter(release=release, kind="turn").order_by("number")
    assert len(turns) == 5 and not any(declines(turn.question) for turn in turns)
    assert all("declines the task" in turn.raw_replies[0]["invalid"] for turn in turns)
    asked = [json.dumps(r.body["messages"]) for r in requests if role_of(r.body) == "answer"]
    assert len(asked) == 5 and not any("help with that" in messages for messages in asked)
