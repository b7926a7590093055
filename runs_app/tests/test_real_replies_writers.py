"""A writer's free text as real models send it through OpenRouter (DESIGN section 5: a writer's
text is only the text), for the generated text and for the cross-examination's answers.

Replies come through the real OpenRouter client from the fake server (`reply_probes`): valid
ones except for the writer's (`write`) or the spokesperson's (`answer`) calls, which are put
through a real shape: a think block with only its closing tag (DeepSeek-R1 and its
distills), a whole think block, a chat wrapper, a refusal field, another language. What
holds in each case: a valid text inside a messy reply is taken, its reasoning and wrapper
kept apart, and never paid for again; what is not a text never reaches a score.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from runs_app.admin import crossexam_rows
from runs_app.models import CrossExamTurn, Generation, TextScore, WorkStatus
from runs_app.stages.crossexam import CrossExamStage
from runs_app.testing.replies import valid_reply
from runs_app.tests.reply_probes import SECRET, Shaped, body_for, calls_by_role, role_of, run
from runs_app.writer_text import NotAText, writer_text

T4_STAGES = ["generate", "refusal", "crossexam"]
# A clean T4 text: its generation, refusal check, five follow-ups and the judge's labels.
CLEAN_T4 = {"write": 1, "refusal": 1, "question": 5, "answer": 5, "labels": 1}
ANSWER = ("We recalled every affected batch the same day and we are working with the food "
          "safety authority on the cause.")
GERMAN = ("Die Organisation hat heute mitgeteilt, was geschehen ist, und entschuldigt sich "
          "ausdrücklich bei allen Betroffenen. Sie prüft die Vorwürfe sorgfältig, arbeitet "
          "mit den Behörden zusammen und wird weitere Informationen veröffentlichen, sobald "
          "diese feststehen. Die Sicherheit der Kunden hat oberste Priorität.")


def _t4(shape, monkeypatch):
    return run(shape, monkeypatch, tasks=("T4",), stages=T4_STAGES)


def _turns(release):
    return CrossExamTurn.objects.filter(release=release, kind="turn").order_by("number")


# ---------------------------------------------------------------------------------------
# What is the text of a reply (no model calls)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [
    f"{SECRET}\n</think>\n\n{ANSWER}",
    f"{SECRET}</think>{ANSWER}",
    f"{SECRET}\n</thinking>\n\n{ANSWER}",
    f"<think>{SECRET}</think>\n\n{ANSWER}",
])
def test_reasoning_before_a_closing_think_tag_is_kept_apart_from_the_text(content):
    text = writer_text(content, "en")
    assert text.text == ANSWER and text.reasoning == SECRET


def test_a_reply_that_is_only_reasoning_up_to_a_closing_tag_has_no_text():
    with pytest.raises(NotAText, match="only a think block"):
        writer_text(f"{SECRET}\n</think>\n\n", "en")


@pytest.mark.parametrize("answer", [
    f"Absolutely. {ANSWER}",
    f"Of course, {ANSWER[0].lower()}{ANSWER[1:]}",
    f"Absolutely.\n\n{ANSWER}",
    f"{ANSWER}\nI hope that answers your question.",
])
def test_a_spokespersons_interjection_or_closing_line_is_part_of_the_answer(answer):
    assert writer_text(answer, "en", spoken=True).text == answer


def test_a_chat_wrapper_around_a_spoken_answer_is_taken_off():
    text = writer_text(f"Sure! Here's my answer:\n\n{ANSWER}\n\nLet me know if you'd like me "
                       f"to adjust the tone.", "en", spoken=True)
    assert text.text == ANSWER
    assert [part["part"] for part in text.stripped] == ["opening", "closing"]


@pytest.mark.parametrize("answer", [
    f"Here's what we know: {ANSWER}",
    f"Here's what we know. {'We have nothing to hide about any of this. ' * 8}\n\n{ANSWER}",
    f"{ANSWER}\n\nI hope {'the families affected will accept our sincere apologies, ' * 6}.",
])
def test_wrapper_like_words_that_run_into_a_spoken_answer_are_speech(answer):
    """A press release that runs into a wrapper does not count (asked again); an answer is
    speech, and would be thrown away and paid for again for words a spokesperson says."""
    assert writer_text(answer, "en", spoken=True).text == answer.strip()
    with pytest.raises(NotAText, match="chat wrapper"):
        writer_text(answer, "en")


def test_a_short_english_answer_is_not_a_dutch_answer():
    """A spokesperson's answer is often short, under the 25 words a text's language is
    otherwise identified from; a short English answer has no Dutch function word at all."""
    answer = ("We cannot comment on an ongoing investigation, but we are cooperating fully "
              "with the food safety authority.")
    assert len(answer.split()) < 25
    with pytest.raises(NotAText, match="English") as problem:
        writer_text(answer, "nl", spoken=True)
    assert problem.value.kind == "language"
    assert writer_text(answer, "en", spoken=True).text == answer


@pytest.mark.parametrize("answer", [
    "Geen commentaar.",
    "No comment.",  # too few words to tell: kept
    "Zoetkamp neemt voedselveiligheid uiterst serieus, zoals altijd.",
    "Wij hebben alle batches teruggehaald uit de winkels.",
    "Klopt. Wij werken volledig mee met de NVWA.",
    "Dat onderzoeken we nog. Meer kan ik nu niet zeggen.",
])
def test_a_short_dutch_answer_is_a_dutch_answer(answer):
    assert writer_text(answer, "nl", spoken=True).text == answer


# ---------------------------------------------------------------------------------------
# The generated text
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_writer_reasoning_before_an_orphan_closing_think_tag_is_stored_apart(
        imported_scenarios, monkeypatch):
    """DeepSeek-R1 distills (and providers whose template opens the think block in the
    prompt) send the reasoning with only the closing tag: "...</think>\\n\\ntext"."""
    shape = Shaped("write", lambda p, c, n: f"The brief says to {SECRET}. I will.\n</think>\n\n{c}")
    release, requests = run(shape, monkeypatch, stages=["generate"])
    text = Generation.objects.get(release=release)
    assert text.status == WorkStatus.DONE and len(requests) == 1
    assert "</think>" not in text.text and SECRET not in text.text, text.text[:200]
    assert SECRET in text.reasoning


@pytest.mark.django_db
def test_a_dutch_closing_wrapper_never_reaches_the_jury(imported_scenarios, monkeypatch):
    closer = "Laat het me weten als je nog aanpassingen wilt!"
    shape = Shaped("write", lambda p, c, n: f"{c}\n\n{closer}")
    release, requests = run(shape, monkeypatch, code="nl.w", stages=["generate", "refusal"],
                            language="nl", scenario="zoetkamp-pinda-haverkoekjes")
    text = Generation.objects.get(release=release)
    read_by_the_check = [r for r in requests if role_of(r.body) == "refusal"
                         and closer in json.dumps(r.body["messages"])]
    assert text.status == WorkStatus.DONE and calls_by_role(requests)["write"] == 1
    assert closer not in text.text and not read_by_the_check, text.stripped
    assert {"part": "closing", "text": closer} in text.stripped


# ---------------------------------------------------------------------------------------
# The cross-examination: each answer is a writer's text too
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_clean_interview_costs_one_call_per_answer(imported_scenarios, monkeypatch):
    release, requests = _t4(Shaped("none", lambda p, c, n: c), monkeypatch)
    assert dict(calls_by_role(requests)) == CLEAN_T4


@pytest.mark.django_db
@pytest.mark.parametrize("opening", ["<think>{secret}</think>\n\n", "{secret}\n</think>\n\n"],
                         ids=["think_block", "orphan_closing_tag"])
def test_an_answers_think_block_is_kept_apart_and_reaches_no_one(imported_scenarios,
                                                                 monkeypatch, opening):
    shape = Shaped("answer", lambda p, c, n: opening.format(secret=SECRET) + c)
    release, requests = _t4(shape, monkeypatch)
    turns = _turns(release)
    leaked_answers = [t.number for t in turns if SECRET in t.answer]
    later_prompts = [role_of(r.body) for r in requests
                     if role_of(r.body) in ("question", "labels", "answer")
                     and SECRET in json.dumps(r.body["messages"])]
    assert not leaked_answers and not later_prompts, (leaked_answers, Counter(later_prompts))
    # Read, not asked again; the reasoning is kept in the answer's raw reply.
    assert dict(calls_by_role(requests)) == CLEAN_T4
    assert all(SECRET in t.raw_replies[-1]["reasoning"] for t in turns)
    assert TextScore.objects.get(release=release).steadfastness is not None


@pytest.mark.django_db
def test_an_answers_chat_wrapper_is_taken_off_and_kept_apart(imported_scenarios, monkeypatch):
    shape = Shaped("answer", lambda p, c, n: f"Sure! Here's my answer:\n\n{c}\n\n"
                   "Let me know if you'd like me to adjust the tone.")
    release, requests = _t4(shape, monkeypatch)
    turns = _turns(release)
    assert [t.number for t in turns if t.answer.startswith("Sure!")
            or "Let me know" in t.answer] == []
    assert dict(calls_by_role(requests)) == CLEAN_T4
    assert all([part["part"] for part in t.raw_replies[-1]["stripped"]]
               == ["opening", "closing"] for t in turns)


@pytest.mark.django_db
def test_an_answer_in_another_language_is_not_scored(imported_scenarios, monkeypatch):
    german = ("Die Organisation hat heute mitgeteilt, was geschehen ist, und entschuldigt sich "
              "ausdrücklich bei allen Betroffenen. Sie prüft die Vorwürfe sorgfältig, arbeitet "
              "mit den Behörden zusammen und wird weitere Informationen veröffentlichen, sobald "
              "diese feststehen. Die Sicherheit der Kunden hat oberste Priorität.")
    release, requests = _t4(Shaped("answer", lambda p, c, n: german), monkeypatch)
    labels = CrossExamTurn.objects.filter(release=release, kind="labels", outcome="scored")
    scored_german = [t.number for t in _turns(release).filter(outcome="scored")
                     if t.answer.startswith("Die ")]
    assert not scored_german and not labels.exists(), scored_german
    # Asked again within max_attempts (3), as a generation is, then the turn fails naming it.
    turn = _turns(release).get()
    assert turn.status == WorkStatus.FAILED and "German" in turn.error, turn.error
    assert calls_by_role(requests)["answer"] == 3


@pytest.mark.django_db
def test_an_answer_refusal_field_is_the_writer_refusing(imported_scenarios, monkeypatch):
    refusal = "I can't continue this interview."

    def refuse(p, c, n):
        body = body_for(None, p, finish_reason="content_filter", native_finish_reason="refusal")
        body["choices"][0]["message"]["refusal"] = refusal
        return body
    release, requests = _t4(Shaped("answer", refuse), monkeypatch)
    first = CrossExamTurn.objects.get(release=release, number=2)
    answers = calls_by_role(requests)["answer"]
    assert answers == 1, (answers, first.status, first.outcome, first.error)
    # Recorded as generate records a refusal; the interview stops, unlabelled, unscored.
    assert first.status == WorkStatus.DONE and first.writer_refusal == refusal
    assert first.answer == "" and first.outcome == ""
    assert CrossExamTurn.objects.filter(CrossExamStage().state_filters()["refused"],
                                        release=release).get() == first
    assert list(_turns(release)) == [first]
    assert not CrossExamTurn.objects.filter(release=release, kind="labels").exists()
    score = TextScore.objects.filter(release=release).first()
    assert score is None or score.steadfastness is None
    # Staff see it as a refusal, in the writer's words.
    row = crossexam_rows(first.generation)[1]
    assert (row["status"], row["error"], row["answer"]) == ("Refused", refusal, "")


# ---------------------------------------------------------------------------------------
# A reply that does not count is asked again with the next seed
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("stages,tasks,role", [
    (["generate"], ("T1",), "write"),
    (T4_STAGES, ("T4",), "answer"),
])
def test_a_writer_reply_that_does_not_count_is_not_bought_again_identically(
        imported_scenarios, monkeypatch, stages, tasks, role):
    """Writers go only to providers that honour `seed` (`provider.require_parameters`); such
    a provider answers the request that gave a German reply with German again, every time.
    The re-ask goes with the next seed (`writer_seed`), so one re-ask buys the text, and the
    seed of every call is kept with what it wrote."""
    first_seen: dict[str, object] = {}

    def seed_honouring(payload):
        if role_of(payload) == role:
            key = json.dumps(payload["messages"], sort_keys=True)
            if first_seen.setdefault(key, payload.get("seed")) == payload.get("seed"):
                return body_for(GERMAN, payload)
        return body_for(valid_reply(payload), payload)

    release, requests = run(seed_honouring, monkeypatch, code=f"seed.{role}", tasks=tasks,
                            stages=stages)
    mine = [json.dumps(r.body, sort_keys=True) for r in requests if role_of(r.body) == role]
    text = Generation.objects.get(release=release)
    assert text.status == WorkStatus.DONE, text.error
    if role == "write":
        assert len(mine) == 2 and len(set(mine)) == 2, mine
        assert [(a.outcome, a.seed) for a in text.attempt_log.all()] == [("language", 0),
                                                                        ("ok", 1)]
        assert text.seed == 1 and not text.text.startswith("Die ")
        return
    # Every answer: German with its first seed, then written with the next one.
    turns = list(_turns(release))
    assert [t.outcome for t in turns] == ["scored"] * 5
    assert len(mine) == 10 and len(set(mine)) == 10
    for turn in turns:
        answers = [("German" in e.get("invalid", ""), e["seed"]) for e in turn.raw_replies
                   if e["call"] == "answer"]
        assert answers == [(True, 0), (False, 1)], answers
        assert not turn.answer.startswith("Die ")


WORDS = "I can't help with this."
NO_WORDS = "(no words; finish_reason content_filter)"


@pytest.mark.django_db
@pytest.mark.parametrize(("content", "refusal"), [
    (f"<think>{SECRET}</think>\n\n{WORDS}", WORDS),
    (f"{SECRET}\n</think>\n\n{WORDS}", WORDS),
    (f"<think>{SECRET}", NO_WORDS),
], ids=["think_block", "orphan_closing_tag", "unfinished_think"])
@pytest.mark.parametrize("role", ["write", "answer"])
def test_a_filtered_refusals_think_block_is_kept_apart_from_its_words(imported_scenarios,
                                                                      monkeypatch, content,
                                                                      refusal, role):
    """A content filter stops a reasoning model that leaks its thinking into the content:
    the refusal's words are what it said after the thinking, and the thinking is stored apart
    as any writer's reasoning is (DESIGN section 5), never shown as the refusal (an
    interview's refusal is on the public page)."""
    def filtered(p, c, n):
        return body_for(content, p, finish_reason="content_filter",
                        native_finish_reason="content_filter")
    stages, tasks = (["generate"], ("T1",)) if role == "write" else (T4_STAGES, ("T4",))
    release, requests = run(Shaped(role, filtered), monkeypatch, stages=stages, tasks=tasks)
    if role == "write":
        row = Generation.objects.get(release=release)
        reasoning = row.reasoning
    else:
        row = CrossExamTurn.objects.get(release=release, number=2)
        reasoning = row.raw_replies[-1].get("reasoning", "")
    assert row.status == WorkStatus.DONE and row.writer_refusal == refusal, row.writer_refusal
    assert SECRET in reasoning
    assert calls_by_role(requests)[role] == 1
