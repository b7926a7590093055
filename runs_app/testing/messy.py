"""A messy OpenRouter: plausible answers for every prompt, in the shapes real models and the
gateway produce (`responder=MessyReplies(...)` on the fake server).

Each reply starts as the valid one (`runs_app.testing.replies.valid_reply`) and is then put
in one shape, drawn per call at the configured rates, or always the same for a "sticky"
model. A draw depends only on the request and how often that request was asked before, so a
run repeats exactly. A repair turn (the reply reader's "could not be used") is answered
cleanly unless the model is sticky: a model that always answers one way does so again.

It also keeps what each call charged, so a benchmark can set the recorded cost against it:
a BYOK call charges OpenRouter's fee plus the upstream's cost, and a reply without a usage
block was charged all the same.

Shapes (structured replies, writers, and every call):
- `prose_fence`: prose, then the JSON in a ```json fence, then prose (Claude via OpenRouter)
- `prose_json`: prose around a bare object
- `think_json`: a leading <think> block holding a draft object, then the object
- `bool_values`: integers as JSON booleans (`"A1": true`): invalid, must never be scored
- `deep_nesting`: `{"attitude": ` and 3,000 `[` (a degenerate reply)
- `json_length`: JSON cut off at the budget, `finish_reason: length`
- `think_text`: the writer's reasoning in a <think> block before its text
- `native_length`: a text cut off with `finish_reason: null`, `native_finish_reason: MAX_TOKENS`
- `chat_wrapper`: "Sure! Here's a press release…" … "Let me know if…" around the text
- `other_language`: the text in German
- `refusal_field`: `content: null`, `message.refusal`, `finish_reason: content_filter`
- `reasoning_only`: `content: null`, the whole answer in `message.reasoning`
- `byok`: `cost: 0` and the real cost in `cost_details.upstream_inference_cost`
- `no_usage`: no `usage` block at all
- `reasons_unasked`: a model that reasons by default (Gemini 2.5 Flash, Grok 3 mini): it
  thinks `UNASKED_REASONING` tokens, or the request's `reasoning.max_tokens` when it has one,
  out of `max_tokens`, and answers in what is left: cut at the limit
  (`finish_reason: length`, no content when nothing is left) when the budget is too small
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from runs_app.testing.fake_openrouter import completion_body
from runs_app.testing.replies import valid_reply

STRUCTURED_SHAPES = ("prose_fence", "prose_json", "think_json", "bool_values", "deep_nesting",
                     "json_length")
WRITER_SHAPES = ("think_text", "native_length", "chat_wrapper", "other_language",
                 "refusal_field", "reasoning_only")
COST_SHAPES = ("byok", "no_usage")
# Shapes of every call, writers' and structured replies alike.
BUDGET_SHAPES = ("reasons_unasked",)
SHAPES = STRUCTURED_SHAPES + WRITER_SHAPES + COST_SHAPES + BUDGET_SHAPES
# Shapes a lenient reader can read at once: they must cost no extra call.
READABLE = frozenset({"prose_fence", "prose_json", "think_json", "think_text", "chat_wrapper",
                      "refusal_field", "byok", "no_usage"})

# Prices of the fake models: USD per prompt and per completion token (the models list that
# `models_payload` serves says the same, so estimates match).
PROMPT_PRICE = 1e-6
COMPLETION_PRICE = 4e-6
BYOK_FEE = 0.05  # OpenRouter's share of a BYOK call, as a fraction of the upstream cost

SECRET = "keep quiet about the £3.8 million claims provision"
GERMAN = ("Die Organisation hat heute mitgeteilt, was geschehen ist, und entschuldigt sich "
          "ausdrücklich bei allen Betroffenen. Sie prüft die Vorwürfe sorgfältig, arbeitet mit "
          "den Behörden zusammen und wird weitere Informationen veröffentlichen, sobald diese "
          "feststehen. Die Sicherheit der Kunden hat für das Unternehmen oberste Priorität.")
REFUSAL = "I can't help write material meant to play down what happened."
REPAIR_MARK = "could not be used"
# What a model that reasons unasked thinks when nothing caps it: more than a juror's whole
# budget, reply and reasoning room together (Gemini 2.5 Flash used up 4,000): only a cap
# leaves the reply its room.
UNASKED_REASONING = 8000
CHARS_PER_TOKEN = 4


class MessyReplies:
    """A responder for `FakeOpenRouter`: `rates` maps shapes to their share of calls (of the
    calls the shape applies to), `sticky` maps a model id to the shape it always answers in."""

    def __init__(self, rates: Mapping[str, float] | None = None,
                 sticky: Mapping[str, str] | None = None, seed: int = 0) -> None:
        unknown = sorted((set(rates or {}) | set((sticky or {}).values())) - set(SHAPES))
        if unknown:
            raise ValueError(f"unknown shapes: {', '.join(unknown)}")
        self.rates = dict(rates or {})
        self.sticky = dict(sticky or {})
        self.seed = seed
        self._asked: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.charged_usd = 0.0
        self.shapes: Counter[str] = Counter()  # how often each shape was sent

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        shape = self._draw(payload)
        body = self._body(payload, shape)
        with self._lock:
            self.shapes[shape or "clean"] += 1
        return body

    def _draw(self, payload: dict[str, Any]) -> str:
        model = str(payload.get("model"))
        if model in self.sticky:
            return self.sticky[model]
        messages = payload.get("messages") or []
        if messages and REPAIR_MARK in str(messages[-1].get("content", "")):
            return ""
        key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        with self._lock:
            self._asked[key] += 1
            number = self._asked[key]
        draw = random.Random(f"{self.seed}|{key}|{number}").random()
        writer = "response_format" not in payload
        applicable = [(shape, rate) for shape, rate in self.rates.items()
                      if _applies(shape, writer)]
        for shape, rate in applicable:
            if draw < rate:
                return shape
            draw -= rate
        return ""

    def _body(self, payload: dict[str, Any], shape: str) -> dict[str, Any]:
        content = valid_reply(payload)
        prompt_tokens = sum(len(str(m.get("content", "")).split())
                            for m in payload.get("messages") or [])
        body = _shaped(content, shape, payload)
        usage = body.get("usage", {})
        completion = usage.get("completion_tokens", len((content or "").split()))
        cost = prompt_tokens * PROMPT_PRICE + completion * COMPLETION_PRICE
        usage.update(prompt_tokens=prompt_tokens, total_tokens=prompt_tokens + completion,
                     cost=round(cost, 12))
        charged = cost
        if shape == "byok":
            usage.update(cost=round(cost * BYOK_FEE, 12), is_byok=True,
                         cost_details={"upstream_inference_cost": round(cost, 12)})
            charged = usage["cost"] + cost
        if shape == "no_usage":
            body.pop("usage", None)
        with self._lock:
            self.charged_usd += charged
        return body


def _applies(shape: str, writer: bool) -> bool:
    if shape in COST_SHAPES or shape in BUDGET_SHAPES:
        return True
    return (shape in WRITER_SHAPES) == writer


def _shaped(content: str, shape: str, payload: dict[str, Any]) -> dict[str, Any]:
    body = completion_body(content, provider="MessyUpstream",
                           generation_id=f"gen-{hashlib.sha256(content.encode()).hexdigest()[:10]}")
    body["model"] = payload.get("model")
    body["system_fingerprint"] = "fp_messy"
    choice = body["choices"][0]
    message = choice["message"]
    if shape == "prose_fence":
        message["content"] = (f"Here is my assessment.\n\n```json\n{content}\n```\n\n"
                              "I hope this helps.")
    elif shape == "prose_json":
        message["content"] = f"My answer, as asked: {content} That is all."
    elif shape == "think_json":
        message["content"] = f"<think>A first draft: {content}. Let me check it.</think>\n{content}"
    elif shape == "bool_values":
        message["content"] = _booleans(content)
    elif shape == "deep_nesting":
        message["content"] = '{"attitude": ' + "[" * 3000
    elif shape == "json_length":
        message["content"] = content[: max(1, len(content) // 2)]
        choice["finish_reason"] = choice["native_finish_reason"] = "length"
    elif shape == "think_text":
        message["content"] = f"<think>The brief says to {SECRET}.</think>\n\n{content}"
    elif shape == "native_length":
        message["content"] = content[: len(content) // 2]
        choice["finish_reason"], choice["native_finish_reason"] = None, "MAX_TOKENS"
    elif shape == "chat_wrapper":
        message["content"] = (f"Sure! Here's a press release for you:\n\n{content}\n\n"
                              "Let me know if you'd like a shorter version.")
    elif shape == "other_language":
        message["content"] = GERMAN
    elif shape == "refusal_field":
        message["content"], message["refusal"] = None, REFUSAL
        choice["finish_reason"], choice["native_finish_reason"] = "content_filter", "refusal"
    elif shape == "reasoning_only":
        message["content"], message["reasoning"] = None, content
    elif shape == "reasons_unasked":
        _reason_first(body, content, payload)
    return body


def _reason_first(body: dict[str, Any], content: str, payload: dict[str, Any]) -> None:
    """Reasoning spent out of `max_tokens` first, the reply in what is left (OpenRouter:
    reasoning tokens are output tokens)."""
    budget = int(payload.get("max_tokens") or 0)
    cap = (payload.get("reasoning") or {}).get("max_tokens")
    thought = min(budget, int(cap) if cap else UNASKED_REASONING)
    room = budget - thought
    needed = -(-len(content) // CHARS_PER_TOKEN)
    choice = body["choices"][0]
    choice["message"]["reasoning"] = "Weighing the text against the facts, one by one."
    if needed > room:
        choice["message"]["content"] = content[: room * CHARS_PER_TOKEN] or None
        choice["finish_reason"] = choice["native_finish_reason"] = "length"
    body["usage"].update(completion_tokens=thought + min(needed, room),
                         completion_tokens_details={"reasoning_tokens": thought})


def _booleans(content: str) -> str:
    """Every integer answer of a reader's or judge's reply as `true`; other replies as they are."""
    data = json.loads(content)
    changed = copy.deepcopy(data)
    for key in ("attitude", "knowledge"):
        if isinstance(changed.get(key), dict):
            changed[key] = {qid: True for qid in changed[key]}
    if "frame_adoption" in changed:
        changed["frame_adoption"] = True
    return json.dumps(changed)


def models_payload(model_ids: list[str], reasoning: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fake models list for these ids, with the prices the messy server charges; the
    `reasoning` ones list the parameters of a model that can reason, as OpenRouter does."""
    parameters = ["max_tokens", "temperature", "seed", "response_format", "structured_outputs"]
    return {"data": [{"id": model_id, "name": model_id, "context_length": 200_000,
                      "top_provider": {"max_completion_tokens": 32_000},
                      "pricing": {"prompt": f"{PROMPT_PRICE:.10f}",
                                  "completion": f"{COMPLETION_PRICE:.10f}"},
                      "supported_parameters": parameters + (
                          ["reasoning", "include_reasoning"] if model_id in reasoning else [])}
                     for model_id in model_ids]}
