"""What each kind of model call of a release sends: its flags, its reply budget and its
reasoning room. The stages build every request with `call_request`, and preflight checks
the parameters and budgets that the same function gives, so what is checked is what is sent.

Budgets and reasoning (DESIGN section 5). OpenRouter counts reasoning tokens as output
tokens, within the request's `max_tokens` (its effort levels are shares of `max_tokens`),
and models such as Gemini 2.5 Flash and Grok 3 mini reason unasked. A structured reply's
fixed budget is then partly spent on reasoning and the reply is cut at the limit: unscored
after paid calls, and which verdicts survive would depend on how long a model thought.

The rule: a model the release declares as reasoning (`models[].reasons`; preflight fails a
model whose models-list entry supports `reasoning` and is not declared) has its reasoning
capped and its reply budget kept whole: `reasoning.max_tokens` is its role's
`reply_reasoning` and `max_tokens` is the reply budget plus that cap. Capped rather than
turned off: not every model can stop reasoning (OpenAI's o-series, Gemini 2.5 Pro), a cap is
one setting OpenRouter maps for every reasoning model (a thinking budget for Gemini and
Anthropic; for effort-only models such as Grok and the o-series, the effort level that the
cap's share of `max_tokens` stands for), and the juror scores as it was built to. A model
that does not reason is sent no `reasoning` key, so that `provider.require_parameters`
does not rule out its providers. Writers keep their own reasoning default: text budget plus
reasoning budget, no `reasoning` key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from runs_app.contamination import PROBE_MAX_TOKENS
from runs_app.crossexam import JUDGE_MAX_TOKENS as ANSWER_JUDGE_MAX_TOKENS
from runs_app.crossexam import QUESTION_MAX_TOKENS
from runs_app.providers.base import CompletionRequest, Message
from runs_app.readers import (
    JOURNALIST_MAX_TOKENS,
    JUDGE_MAX_TOKENS,
    PAIR_MAX_TOKENS,
    READER_MAX_TOKENS,
)
from runs_app.schemas import ReleaseConfig, ReplyReasoning

# A verdict (the juror's claims, facts and techniques) and the refusal check's reply.
VERDICT_MAX_TOKENS = 4000


@dataclasses.dataclass(frozen=True)
class CallKind:
    """One kind of call: whose reasoning room it gets (`ReplyReasoning`'s roles, or
    "writer"), its reply budget (writers: the release's text and reasoning budget), and
    the flags its request sets."""

    role: str
    reply_tokens: int = 0
    temperature: float | None = None
    json_mode: bool = True
    seeded: bool = False


# Keyed by the request's purpose (`CompletionRequest.purpose`). Every structured reply asks
# for a JSON object; the refusal check, the jurors and the answer judge read at
# temperature 0; writers write with a seed (`writer_seed`).
CALL_KINDS: dict[str, CallKind] = {
    "write": CallKind("writer", json_mode=False, seeded=True),
    "refusal": CallKind("reader", VERDICT_MAX_TOKENS, temperature=0.0),
    "juror": CallKind("juror", VERDICT_MAX_TOKENS, temperature=0.0),
    "reader": CallKind("reader", READER_MAX_TOKENS),
    "reveal": CallKind("reader", READER_MAX_TOKENS),
    # The arena's simulated voters: the release's reader, asked about a pair of texts.
    "pair_reader": CallKind("reader", PAIR_MAX_TOKENS),
    "journalist": CallKind("journalist", JOURNALIST_MAX_TOKENS),
    "frame_judge": CallKind("journalist", JUDGE_MAX_TOKENS),
    "crossexam": CallKind("journalist", QUESTION_MAX_TOKENS),
    "answer_judge": CallKind("judge", ANSWER_JUDGE_MAX_TOKENS, temperature=0.0),
    # The contamination check's probes of every model of the release, at temperature 0 (a
    # memorised string comes out unchanged): a short reply in prose, with the reader's
    # reasoning room, whichever role the model has.
    "probe": CallKind("reader", PROBE_MAX_TOKENS, temperature=0.0, json_mode=False),
}


def reasoning_cap(purpose: str, model: str, config: ReleaseConfig) -> int:
    """The reasoning tokens a call of this kind to this model may spend (0: no room)."""
    return _cap(purpose, config.reasons(model), config.reply_reasoning)


def _cap(purpose: str, reasons: bool, room: ReplyReasoning) -> int:
    kind = CALL_KINDS[purpose]
    if kind.role == "writer" or not reasons:
        return 0
    return getattr(room, kind.role)


def writer_seed(variant: int, earlier: int, variants: int) -> int:
    """The seed of a writer's call (a text, or an answer of its interview) after `earlier`
    calls made for it: its variant at first, then one stride of the release's variants per
    call. Writers go only to providers that honour the seed (`provider.require_parameters`),
    and such a provider answers a request it was sent before the same way again, so a reply
    that does not count (cut at the budget, another language, a wrapper) is asked again
    with the next seed, never the same request. The variants' seeds never meet: a re-ask
    cannot write another variant's text. The seed is stored with what it wrote."""
    return variant + earlier * variants


def call_request(purpose: str, *, config: ReleaseConfig, model: str,
                 messages: Iterable[Message] = (), seed: int | None = None,
                 ) -> CompletionRequest:
    """The request of one call, by the rule above (`seed` is sent by seeded kinds only)."""
    cap = reasoning_cap(purpose, model, config)
    return _request(purpose, model, messages, cap, writer_budget=config.max_tokens, seed=seed)


def candidate_request(purpose: str, *, model: str, reasons: bool,
                      messages: Iterable[Message] = ()) -> CompletionRequest:
    """The request of a structured reply from a model tried outside any release (the reader
    trial): what a release that declares the model's reasoning as `reasons`, with the
    default reasoning room (`ReplyReasoning()`), sends it."""
    if CALL_KINDS[purpose].role == "writer":
        raise ValueError(f"{purpose}: a writer's budget is a release's, not a candidate's")
    return _request(purpose, model, messages, _cap(purpose, reasons, ReplyReasoning()))


def _request(purpose: str, model: str, messages: Iterable[Message], cap: int, *,
             writer_budget: int = 0, seed: int | None = None) -> CompletionRequest:
    kind = CALL_KINDS[purpose]
    budget = writer_budget if kind.role == "writer" else kind.reply_tokens + cap
    return CompletionRequest(
        model=model, messages=tuple(messages), max_tokens=budget,
        seed=seed if kind.seeded else None, temperature=kind.temperature,
        json_mode=kind.json_mode, purpose=purpose, reasoning_cap=cap or None)
