"""The one reply reader (runs_app.reply_reader) and the repair turn (runs_app.stages.replies),
the latter through the real OpenRouter client against the fake server on loopback."""

from __future__ import annotations

import asyncio
import json

import pytest

from runs_app.jury import parse_refusal_reply
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
from runs_app.stages.replies import ask_structured
from runs_app.testing.fake_openrouter import FakeOpenRouter, completion_body

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
            return await ask_structured(request, parse_refusal_reply, attempts, pool)
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


def test_a_parser_that_raises_anything_makes_an_invalid_reply_not_a_crash() -> None:
    def broken(text: str):
        raise RecursionError("deep")

    request = CompletionRequest(model="acme/reader", max_tokens=100, json_mode=True,
                                messages=(Message("user", "Reply in JSON."),))
    with FakeOpenRouter() as server:
        server.enqueue(body=_completion(json.dumps(VERDICT)))
        pool = ProviderPool("openrouter", base_url=server.base_url, api_key="test-key")
        asked = asyncio.run(ask_structured(request, broken, 1, pool))
    assert asked.reply is None and "nested too deeply" in asked.raw_replies[0]["invalid"]


def test_a_wrapped_reply_costs_no_extra_call() -> None:
    with FakeOpenRouter() as server:
        server.enqueue(body=_completion(f"My verdict follows.\n{FENCED}\nDone."))
        asked = _ask(server)
        assert server.count() == 1
    assert asked.reply.verdict == "complied"


def _completion(content: str) -> dict:
    return completion_body(content)
