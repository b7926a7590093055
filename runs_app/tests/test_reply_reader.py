"""The one reply reader (runs_app.reply_reader) and the repair turn (runs_app.stages.replies),
the latter through the real OpenRouter client against the fake server on loopback."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import pytest

from runs_app.jury import parse_refusal_reply
from runs_app.models import ReplyOutcome, WorkStatus
from runs_app.providers.base import CompletionRequest, Message
from runs_app.providers.pool import ProviderPool
from runs_app.readers import (
    JudgeReply,
    Question,
    ReaderBrief,
    parse_json_reply,
    parse_reader_reply,
)
from runs_app.reply_reader import InvalidReply, json_object, split_think
from runs_app.stages.replies import Turn, ask_turn, next_turn, reply_fields
from runs_app.testing.fake_openrouter import FakeOpenRouter, completion_body
from runs_app.testing.replies import ask_claim_by_claim

VERDICT = {"verdict": "complied", "reason": "It wrote the text."}
FENCED = f"```json\n{json.dumps(VERDICT)}\n```"

BRIEF = ReaderBrief(
    language="en", organisation="Acme", description="Makes things.",
    attitude_questions=(Question("A1", "Trust?", "no", "yes"),),
    knowledge_questions=(Question("K1", "What?", options=("a", "b", "c", "d")),),
)


@pytest.mark.parametrize("reply", [
    json.dumps(VERDICT),
    FENCED,
    f"Here is my verdict:\n\n{FENCED}\n\nI hope this helps.",
    f"Sure. {json.dumps(VERDICT)} That is all.",
    f"<think>The text is a press release {{so it complied}}.</think>\n{json.dumps(VERDICT)}",
    f"<think>Draft: {json.dumps(VERDICT)}</think>\n{FENCED}",
    f"{json.dumps(VERDICT)}\n\nAgain, to be sure:\n{json.dumps(VERDICT)}",
    f"``` \n{json.dumps(VERDICT)}\n```",
])
def test_one_object_is_read_from_every_wrapping(reply: str) -> None:
    assert parse_refusal_reply(reply).verdict == "complied"


@pytest.mark.parametrize(("reply", "reason"), [
    ("", "empty"),
    ("I think it complied.", "no JSON object"),
    ('{"verdict": "complied"} or rather {"verdict": "partial"}', "2 different JSON objects"),
    ('{"attitude": ' + "[" * 3000, "nested too deeply"),
    ("<think>still thinking " + "{" * 10, "never ends"),
    ('{"verdict": "complied", "reason": "cut', "no JSON object"),
])
def test_what_holds_no_single_object_is_invalid_with_its_reason(reply: str, reason: str) -> None:
    with pytest.raises(InvalidReply, match=reason):
        json_object(reply)


def test_deep_nesting_inside_an_object_is_an_invalid_reply_not_a_crash() -> None:
    deep = '{"attitude": ' + "[" * 3000 + "]" * 3000 + "}"
    with pytest.raises(InvalidReply, match="nested too deeply"):
        json_object(deep)


def test_a_leading_think_block_is_set_aside() -> None:
    assert split_think("<think>why</think>\nanswer") == ("why", "\nanswer")
    assert split_think("no think") == ("", "no think")


@pytest.mark.parametrize(("attitude", "knowledge", "problem"), [
    (True, 1, "attitude.A1"),
    (4.5, 1, "attitude.A1"),
    (8, 1, "attitude.A1"),
    (0, 1, "attitude.A1"),
    (4, True, "knowledge.K1"),
    (4, 5, "knowledge.K1"),
])
def test_values_are_validated_strictly(attitude, knowledge, problem) -> None:
    reply = json.dumps({"attitude": {"A1": attitude}, "knowledge": {"K1": knowledge}})
    with pytest.raises(InvalidReply, match=problem):
        parse_reader_reply(reply, BRIEF)


def test_numbers_as_strings_and_extra_keys_are_read() -> None:
    reply = json.dumps({"attitude": {"A1": "4", "A9": 2}, "knowledge": {"K1": "2"},
                        "notes": "extra"})
    answers = parse_reader_reply(reply, BRIEF)
    assert answers.attitude == [4] and answers.knowledge == [1]
    assert parse_json_reply('{"frame_adoption": 3, "why": 1}', JudgeReply).frame_adoption == 3
    with pytest.raises(InvalidReply, match="frame_adoption"):
        parse_json_reply('{"frame_adoption": true}', JudgeReply)


@pytest.mark.parametrize("spelled", ["dont_know", "don't know", "Don\u2019t know", "DONT-KNOW",
                                     "dont know"])
def test_dont_know_in_another_spelling_is_dont_know(spelled: str) -> None:
    reply = json.dumps({"attitude": {"A1": 4}, "knowledge": {"K1": spelled}})
    assert parse_reader_reply(reply, BRIEF).knowledge == [None]


@pytest.mark.parametrize("answer", ["I don't know", "know", None, True, "unknown"])
def test_other_words_for_a_knowledge_answer_stay_invalid(answer) -> None:
    with pytest.raises(InvalidReply, match="knowledge"):
        parse_reader_reply(json.dumps({"attitude": {"A1": 4}, "knowledge": {"K1": answer}}),
                           BRIEF)


def test_a_missing_answer_is_named() -> None:
    with pytest.raises(InvalidReply, match="no answer to K1"):
        parse_reader_reply('{"attitude": {"A1": 3}, "knowledge": {}}', BRIEF)


def _ask(server: FakeOpenRouter, attempts: int = 3):
    request = CompletionRequest(model="acme/reader", max_tokens=100, json_mode=True,
                                purpose="refusal",
                                messages=(Message("user", "Did it comply? Reply in JSON."),))
    pool = ProviderPool("openrouter", base_url=server.base_url, api_key="test-key")

    async def go():
        try:
            return await ask_claim_by_claim(request, parse_refusal_reply, attempts, pool)
        finally:
            await pool.aclose()

    return asyncio.run(go())


def test_an_invalid_reply_gets_a_repair_turn_that_quotes_what_was_wrong() -> None:
    with FakeOpenRouter() as server:
        server.enqueue(body=_completion('{"verdict": "maybe"}'))
        server.enqueue(body=_completion(json.dumps(VERDICT)))
        asked = _ask(server)
        second = server.requests[1].body["messages"]
    assert asked.reply.verdict == "complied" and asked.attempts == 2
    assert second[-2] == {"role": "assistant", "content": '{"verdict": "maybe"}'}
    assert second[-1]["role"] == "user" and "verdict" in second[-1]["content"]
    assert "could not be used" in second[-1]["content"]
    assert asked.raw_replies[0]["invalid"].startswith("verdict:")
    assert asked.raw_replies[1]["repair_turn"] is True


def test_a_row_s_next_turn_repairs_its_last_reply_within_its_budget_only() -> None:
    """One call per claim (`ask_turn`): the next claim sends the repair turn of the reply
    the last one got; a provider error in between changes nothing; an operator's retry
    (attempts back to 0) asks the question afresh."""
    question = CompletionRequest(model="acme/reader", max_tokens=100, json_mode=True,
                                 messages=(Message("user", "Did it comply? Reply in JSON."),))
    invalid = {"text": '{"verdict": "maybe"}', "invalid": "verdict: not a verdict"}
    error = {"error": "upstream 429", "permanent": False}

    def row(attempts: int, *raw_replies: dict) -> SimpleNamespace:
        return SimpleNamespace(attempts=attempts, raw_replies=list(raw_replies))

    assert next_turn(question, row(0)) == Turn(question)
    for item in (row(1, invalid), row(1, invalid, error)):
        turn = next_turn(question, item)
        assert turn.repair and turn.request.messages[:1] == question.messages
        assert turn.request.messages[1] == Message("assistant", invalid["text"])
        assert "verdict: not a verdict" in turn.request.messages[2].content
    assert next_turn(question, row(0, invalid)) == Turn(question)  # retried by an operator
    assert next_turn(question, row(1, {"text": "{}"})) == Turn(question)  # valid, asked again


def test_one_turn_per_call_gives_the_row_back_until_its_attempts_are_used() -> None:
    question = CompletionRequest(model="acme/reader", max_tokens=100, json_mode=True,
                                 purpose="refusal", messages=(Message("user", "Reply in JSON."),))
    item = SimpleNamespace(attempts=0, raw_replies=[], prompt_tokens=0, completion_tokens=0,
                           reasoning_tokens=0, cost_usd=0.0, cost_estimated=False)
    with FakeOpenRouter() as server:
        for reply in ('{"verdict": "maybe"}', '{"verdict": "perhaps"}'):
            server.enqueue(body=_completion(reply))
        pool = ProviderPool("openrouter", base_url=server.base_url, api_key="test-key")
        fields = []

        async def two_claims() -> None:  # each claim: build, one call, write
            for _ in range(2):
                turn = next_turn(question, item)
                asked = await ask_turn(turn, parse_refusal_reply, 2 - item.attempts, pool)
                fields.append(reply_fields(item, asked))
                item.attempts = fields[-1]["attempts"]
                item.raw_replies = fields[-1]["raw_replies"]
            await pool.aclose()

        asyncio.run(two_claims())
    assert fields[0]["status"] == WorkStatus.PENDING and fields[0]["claim_token"] == ""
    assert fields[0]["error"].startswith("last reply invalid: verdict:")
    assert fields[1]["status"] == WorkStatus.DONE
    assert fields[1]["outcome"] == ReplyOutcome.UNSCORED and len(fields[1]["raw_replies"]) == 2
    assert server.requests[1].body["messages"][1]["content"] == '{"verdict": "maybe"}'


def test_a_parser_that_raises_anything_makes_an_invalid_reply_not_a_crash() -> None:
    def broken(text: str):
        raise RecursionError("deep")

    request = CompletionRequest(model="acme/reader", max_tokens=100, json_mode=True,
                                messages=(Message("user", "Reply in JSON."),))
    with FakeOpenRouter() as server:
        server.enqueue(body=_completion(json.dumps(VERDICT)))
        pool = ProviderPool("openrouter", base_url=server.base_url, api_key="test-key")
        asked = asyncio.run(ask_claim_by_claim(request, broken, 1, pool))
    assert asked.reply is None and "nested too deeply" in asked.raw_replies[0]["invalid"]


def test_a_wrapped_reply_costs_no_extra_call() -> None:
    with FakeOpenRouter() as server:
        server.enqueue(body=_completion(f"My verdict follows.\n{FENCED}\nDone."))
        asked = _ask(server)
        assert server.count() == 1
    assert asked.reply.verdict == "complied"


def _completion(content: str) -> dict:
    return completion_body(content)


# ---------------------------------------------------------------------------------------
# Ambiguity is invalid; a valid answer in a messy reply is read
# ---------------------------------------------------------------------------------------

REFUSED = {"verdict": "refused", "reason": "It declined."}


@pytest.mark.parametrize(("reply", "reason"), [
    ('{"verdict": "refused", "reason": "x", "verdict": "complied"}', 'key "verdict" appears'),
    ('{"attitude": {"A1": 1, "A1": 7}, "knowledge": {"K1": 1}}', 'key "A1" appears twice'),
    ('{"analysis": {"verdict": "refused", "reason": "x"}, "final": {"verdict": "compl',
     "never closes"),
    ('{"analysis": {"verdict": "refused", "reason": "x"}, "final": ', "never closes"),
    ('{"analysis": {"verdict": "refused", "reason": "x"}, "final": tr', "never closes"),
    (f"{json.dumps(VERDICT)}\n{json.dumps(REFUSED)}", "2 different JSON objects, 2 of them"),
    (f"```json\n{json.dumps(VERDICT)}\n```\n```json\n{json.dumps(REFUSED)}\n```",
     "2 different JSON objects"),
])
def test_an_ambiguous_reply_is_invalid(reply: str, reason: str) -> None:
    with pytest.raises(InvalidReply, match=reason):
        parse_refusal_reply(reply)


@pytest.mark.parametrize("reply", ["{" * 20_000, "{/" * 10_000, "{[1,]" * 4_000,
                                   "{" * 150_000])
def test_a_degenerate_reply_is_read_past_its_slips_cheaply(reply: str) -> None:
    """Reading past slips is tried only where the JSON broke at one, and a few times a reply:
    tried at every "{", "{" 20,000 times took minutes of a worker's time. And a reply with
    thousands of "{" that start no object is invalid at once: each cost a pass over the text
    before it (150,000 of them took 10 s)."""
    started = time.monotonic()
    with pytest.raises(InvalidReply, match="no JSON object|start no JSON object"):
        json_object(reply)
    assert time.monotonic() - started < 2


def test_a_fenced_answer_and_a_different_bare_answer_are_ambiguous() -> None:
    """A fence does not decide between two answers (DESIGN section 5: two different answers
    are invalid): an echoed example that validates would otherwise beat the answer."""
    with pytest.raises(InvalidReply, match="2 different JSON objects, 2 of them answers"):
        parse_refusal_reply(f"```json\n{json.dumps(REFUSED)}\n```\n{json.dumps(VERDICT)}")


def test_the_prompts_placeholders_are_no_quote_and_no_question() -> None:
    from runs_app.crossexam import parse_question
    from runs_app.jury import ClaimReply
    with pytest.raises(InvalidReply, match="no words"):
        parse_question('{"question": "..."}')
    with pytest.raises(ValueError, match="no words"):
        ClaimReply.model_validate({"quote": "…", "label": "supported"})


def test_a_broken_outer_object_hides_the_objects_inside_it() -> None:
    """The scan goes on after the part of a broken object that read as JSON: an object
    nested in it is not a candidate, one after it is."""
    inner = '{"x": {"verdict": "refused", "reason": "inner"} oops}'
    assert parse_refusal_reply(f"{inner} then {json.dumps(VERDICT)}").verdict == "complied"
    with pytest.raises(InvalidReply, match="no JSON object"):
        parse_refusal_reply(inner)


@pytest.mark.parametrize("reply", [
    f"Draft: {json.dumps({**REFUSED, 'draft': 1})}\n</think>\n\n{json.dumps(VERDICT)}",
    f"Draft: {json.dumps(REFUSED)}</thinking>{FENCED}",
    f"{json.dumps(VERDICT)}\n</think>",  # the answer only before the tag: one object
    f"<think>Only this: {json.dumps(VERDICT)}</think>",
    'Format:\n```json\n{"verdict": "complied | partial | refused", "reason": "..."}\n```\n'
    f"My verdict: {json.dumps(VERDICT)}",
    f"Example: {json.dumps({'verdict': 'maybe'})}. Mine:\n{json.dumps(VERDICT)}",
    # The same answer, once with a key the schema ignores: one answer.
    f"{json.dumps({**VERDICT, 'confidence': 0.8})}\n{json.dumps(VERDICT)}",
])
def test_a_valid_answer_in_a_messy_reply_is_read(reply: str) -> None:
    assert parse_refusal_reply(reply).verdict == "complied"


@pytest.mark.parametrize("reply", [
    '{"verdict": "complied", "reason": "It wrote the text.",}',
    '```json\n{\n  "verdict": "complied", // a press release\n  "reason": "a // b,}"\n}\n```',
    '{/* my verdict */ "verdict": "complied", "reason": "x", "notes": [1, 2,],}',
])
def test_a_trailing_comma_or_a_comment_is_read_past(reply: str) -> None:
    """Slips judges make in otherwise plain JSON (REAL-REPLIES.md): the object still says
    one thing, so it is the answer, not a repair turn paid for the same verdict."""
    assert parse_refusal_reply(reply).verdict == "complied"


@pytest.mark.parametrize(("reply", "reason"), [
    ('{"verdict": "refused", "verdict": "complied",}', 'key "verdict" appears twice'),
    ('{"verdict": "complied", // cut', "no JSON object"),
    ('{"verdict": "complied" /* no end }', "no JSON object"),
    ('{"verdict": [1,,], "reason": "x"}', "no JSON object"),
])
def test_read_past_slips_stays_strict_about_the_rest(reply: str, reason: str) -> None:
    with pytest.raises(InvalidReply, match=reason):
        parse_refusal_reply(reply)


@pytest.mark.parametrize(("reply", "reason"), [
    # Only reasoning, holding a draft and a different answer: which one is meant is open.
    (f"Draft {json.dumps(REFUSED)}. Final: {json.dumps(VERDICT)}\n</think>", "2 different"),
    (f"<think>{json.dumps(REFUSED)} no, {json.dumps(VERDICT)}</think>", "2 different"),
    # Only reasoning, with an object that is no answer in it.
    (f'<think>{{"verdict": "x"}} then {json.dumps(VERDICT)}</think>', "reasoning's JSON"),
    # Content after the tag that is no answer: the reasoning's draft does not stand in.
    (f"{json.dumps(VERDICT)}</think>I think it complied.", "no JSON object"),
])
def test_reasoning_gives_an_answer_only_when_it_is_unambiguous(reply: str, reason: str) -> None:
    with pytest.raises(InvalidReply, match=reason):
        parse_refusal_reply(reply)


def test_null_is_empty_only_where_a_field_needs_no_value() -> None:
    from runs_app.jury import JurorReply
    from runs_app.readers import JournalistReply
    from runs_app.reply_reader import read_reply

    assert parse_refusal_reply('{"verdict": "partial", "reason": null}').reason == ""
    assert parse_json_reply('{"frame_adoption": 2, "reason": null}', JudgeReply).reason == ""
    declined = read_reply('{"runs_story": false, "headline": null, "opening": null}',
                          JournalistReply)
    assert (declined.headline, declined.opening) == ("", "")
    juror = {"claims": [{"quote": "q", "label": "supported", "basis": None}],
             "facts_conveyed": ["F1"], "confidential_disclosed": None, "techniques": None}
    read = read_reply(json.dumps(juror), JurorReply)
    assert (read.techniques, read.confidential_disclosed, read.claims[0].basis) == ([], [], [])
    with pytest.raises(InvalidReply, match="verdict"):
        parse_refusal_reply('{"verdict": null}')
    for needed, reply, schema in [
        ("runs_story", '{"runs_story": null}', JournalistReply),
        ("a story needs", '{"runs_story": true, "headline": null, "opening": "o"}',
         JournalistReply),
        ("frame_adoption", '{"frame_adoption": null}', JudgeReply),
    ]:
        with pytest.raises(InvalidReply, match=needed):
            read_reply(reply, schema)
    for field in ("claims", "facts_conveyed"):
        with pytest.raises(InvalidReply, match=field):
            read_reply(json.dumps({**juror, field: None}), JurorReply)
    with pytest.raises(InvalidReply, match="attitude.A1"):
        parse_reader_reply('{"attitude": {"A1": null}, "knowledge": {"K1": 1}}', BRIEF)


def _with_reasoning(content: str | None, reasoning: str) -> dict:
    body = completion_body(content)
    body["choices"][0]["message"]["reasoning"] = reasoning
    return body


def test_an_answer_only_in_the_reasoning_field_is_read_and_marked() -> None:
    with FakeOpenRouter() as server:
        server.enqueue(body=_with_reasoning(None, f"So: {json.dumps(VERDICT)}"))
        asked = _ask(server)
        assert server.count() == 1
    assert asked.reply.verdict == "complied"
    assert asked.raw_replies[0]["answer_in_reasoning"] is True


def test_the_reasoning_field_is_not_read_when_the_content_holds_anything() -> None:
    with FakeOpenRouter() as server:
        server.enqueue(body=_with_reasoning("I am not sure.", f"So: {json.dumps(REFUSED)}"))
        server.enqueue(body=_completion(json.dumps(VERDICT)))
        asked = _ask(server)
    assert asked.reply.verdict == "complied" and asked.attempts == 2
    assert "answer_in_reasoning" not in asked.raw_replies[1]


# A closing think tag inside the JSON; gpt-oss's leaked harmony channels
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("tag", ["</think>", "[/THINK]", "\u25c1/think\u25b7", "</reasoning>"])
@pytest.mark.parametrize("before", ["", "<think>It complied.</think>\n",
                                    f"Draft: {json.dumps(REFUSED)}\n</think>\n"])
def test_a_closing_think_tag_inside_the_json_is_part_of_the_answer(tag: str, before: str) -> None:
    """A reason that names the tag ("the text says </think>") was cut at it, as if the
    reasoning ended there: the reply held "no JSON object" and paid a repair turn."""
    answer = {"verdict": "complied", "reason": f"The text says {tag} literally."}
    reply = f"{before}{json.dumps(answer, ensure_ascii=False)}"
    assert parse_refusal_reply(reply).reason == answer["reason"]


def test_a_closing_think_tag_inside_a_slipped_or_nested_object_is_its_words() -> None:
    reply = '{"verdict": "complied", "reason": "says </think>", "notes": {"a": "[/THINK]"},}'
    assert json_object(reply)["notes"] == {"a": "[/THINK]"}


@pytest.mark.parametrize("reply", [
    # A real leading block holding JSON-like text (a tag in a string included): the object
    # after the block is the answer.
    f'<think>Maybe {{"verdict": "refused", "reason": "no"}}? {{odd</think>\n{FENCED}',
    f'<think>Draft: {{"verdict": "refused", "reason": "a </think> b"}}</think>{FENCED}',
    # An orphan closing tag outside any object still ends the reasoning.
    f'Draft: {json.dumps(REFUSED)} and {{"reason": "x"\n</think>\n{json.dumps(VERDICT)}',
])
def test_the_object_after_a_real_think_block_is_the_answer(reply: str) -> None:
    assert parse_refusal_reply(reply) == parse_refusal_reply(json.dumps(VERDICT))


HARMONY_REASONING = f"We need a verdict. Draft: {json.dumps(REFUSED)}. No: it complied."


@pytest.mark.parametrize("reply", [
    f"analysis{HARMONY_REASONING}assistantfinal{json.dumps(VERDICT)}",
    f"analysis{HARMONY_REASONING}assistantfinal{FENCED}",
    f"<|channel|>analysis<|message|>{HARMONY_REASONING}<|end|><|start|>assistant"
    f"<|channel|>final<|message|>{json.dumps(VERDICT)}",
    f"<|start|>assistant<|channel|>analysis<|message|>{HARMONY_REASONING}<|end|>"
    f"<|start|>assistant<|channel|>final<|message|>{json.dumps(VERDICT)}<|return|>",
    # Held to the response format: the final channel's header names it.
    f"<|channel|>analysis<|message|>{HARMONY_REASONING}<|end|><|start|>assistant"
    f"<|channel|>final <|constrain|>json<|message|>{json.dumps(VERDICT)}<|return|>",
])
def test_only_the_final_channel_of_a_leaked_harmony_reply_is_the_answer(reply: str) -> None:
    """gpt-oss served without its harmony parser sends its analysis channel in the content:
    the draft in it made the reply two different answers, and a repair turn was paid."""
    assert parse_refusal_reply(reply).verdict == "complied"


def test_a_harmony_reply_that_never_reaches_its_final_channel_is_only_reasoning() -> None:
    with pytest.raises(InvalidReply, match="no answer outside its reasoning"):
        parse_refusal_reply(f"<|channel|>analysis<|message|>{HARMONY_REASONING} "
                            f"{json.dumps(VERDICT)}")
    assert split_think("<|channel|>analysis<|message|>why<|end|>") == ("why<|end|>", "")


@pytest.mark.parametrize("reply", [
    f"Analysis of the text: {json.dumps(VERDICT)}",
    f"analysis: {json.dumps(VERDICT)}",
    f"Analysis{json.dumps(VERDICT)}assistantfinal",  # not lower case as gpt-oss writes it
])
def test_a_reply_that_only_begins_with_the_word_analysis_is_read_whole(reply: str) -> None:
    assert split_think(reply) == ("", reply)
    assert parse_refusal_reply(reply).verdict == "complied"


def test_every_closing_tag_inside_the_json_is_its_words() -> None:
    answer = json.dumps({"verdict": "complied", "reason": "</think>"})
    assert parse_refusal_reply(f"{answer}\nAgain:\n{answer}").reason == "</think>"
    reply = f"{json.dumps(REFUSED)} </think> {answer} {answer}"  # after a real orphan tag
    assert parse_refusal_reply(reply).reason == "</think>"
