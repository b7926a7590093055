"""Fixture candidates for the reader trial (DESIGN section 6), each with one known flaw.

`fixture/reader-able` behaves as the trial asks of a reader: after a text it answers a
knowledge question right when the text states the facts the question is about, and "don't
know" otherwise; with no text it does not know; its attitude moves with the text's wording,
further the more it trusts the news media; and it answers the same on a second reading. To
know which facts a question is about it recalls the shipped scenario file by the
organisation's name (`fixture_memory`): a stand-in for a model that understands what it reads.
Each other profile breaks exactly one criterion:

- `reader-forgetful` reads as `able` but picks a wrong option where `able` is right;
- `reader-fickle` answers its second reading (seed 2) differently: two attitude answers
  move two points in opposite directions, and one right answer becomes "don't know";
- `reader-contrarian` moves less the more it trusts the news media;
- `reader-knowall` answers every knowledge question with no text, from the file it recalls.
"""

from __future__ import annotations

import json
import math
from typing import Any

from runs_app.boundaries import block_content
from runs_app.providers.base import CompletionRequest, ProviderError
from runs_app.providers.fixture_memory import recall
from runs_app.providers.fixture_readers import (
    NEGATIVE_CUES,
    POSITIVE_CUES,
    _clamp,
    _content_words,
    _count,
    _questions,
    _texts,
    _trust,
)
from runs_app.readers import DONT_KNOW, TEXT

TRIAL_PROFILES = ("reader-able", "reader-forgetful", "reader-fickle", "reader-contrarian",
                  "reader-knowall")
# How far a position follows the text's lean, by its trust in news media.
TRUST_FOLLOW = {"low": 0.4, "medium": 0.8, "high": 1.2}
CONTRARIAN_FOLLOW = {"low": 1.2, "medium": 0.8, "high": 0.4}
# A text states a fact when it has at least this share of the fact's content words.
CONVEYED_SHARE = 0.5
FICKLE_SWING = 2


def lean(text: str) -> float:
    """-2.5 .. 2.5: how favourable the text's wording is (cue words, as `fixture/reader`)."""
    return 2.5 * math.tanh((_count(text, POSITIVE_CUES) - _count(text, NEGATIVE_CUES)) / 4)


def conveys(text: str, fact_texts: list[str]) -> bool:
    words = set().union(*(_content_words(fact) for fact in fact_texts)) if fact_texts else set()
    return bool(words) and len(words & _content_words(text)) / len(words) >= CONVEYED_SHARE


def _answer(profile: str, question: dict[str, Any], facts: dict[str, str],
            text: str | None) -> int | None:
    """0-based option, or None for don't know."""
    correct = int(question["correct"])
    if text is None:
        return correct if profile == "reader-knowall" else None
    if not conveys(text, [facts[f] for f in question.get("facts", []) if f in facts]):
        return None
    if profile == "reader-forgetful":
        return (correct + 1) % len(question["options"])
    return correct


def trial_reader_reply(request: CompletionRequest) -> str:
    profile = request.model.removeprefix("fixture/")
    if profile not in TRIAL_PROFILES:
        raise ProviderError(f"fixture provider has no reader profile {profile!r}",
                            permanent=True)
    system, user = _texts(request)
    text = block_content(user, TEXT)
    attitude_ids, knowledge = _questions(user)
    trust = _trust(system)
    follow = (CONTRARIAN_FOLLOW if profile == "reader-contrarian" else TRUST_FOLLOW)[trust]
    moved = 0.0 if text is None else lean(text) * follow
    attitude = [_clamp(4 + moved + 0.25 * (index - 1)) for index in range(len(attitude_ids))]
    document = recall(user) or {}
    facts = {fact["id"]: fact["text"] for fact in document.get("facts", [])}
    questions = {q["id"]: q for q in document.get("knowledge_questions", [])}
    answers = {qid: _answer(profile, questions[qid], facts, text) if qid in questions else None
               for qid, _ in knowledge}
    if profile == "reader-fickle" and request.seed == 2:
        attitude, answers = _second_thoughts(attitude, answers)
    return json.dumps({
        "attitude": dict(zip(attitude_ids, attitude, strict=True)),
        "knowledge": {qid: DONT_KNOW if answer is None else answer + 1
                      for qid, answer in answers.items()},
    })


def _second_thoughts(attitude: list[int], answers: dict[str, int | None]
                     ) -> tuple[list[int], dict[str, int | None]]:
    """A second reading that disagrees with the first but keeps its mean attitude and most of
    its right answers: the first two attitude answers swing apart, one answer is forgotten."""
    changed = list(attitude)
    if len(changed) >= 2:
        up = changed[0] + FICKLE_SWING <= 7 and changed[1] - FICKLE_SWING >= 1
        sign = 1 if up else -1
        changed[0] = _clamp(changed[0] + sign * FICKLE_SWING)
        changed[1] = _clamp(changed[1] - sign * FICKLE_SWING)
    known = [qid for qid, answer in answers.items() if answer is not None]
    changed_answers = dict(answers)
    if known:
        changed_answers[known[-1]] = None
    return changed, changed_answers
