"""The fixture provider's cross-examination roles (DESIGN section 7): deterministic, offline,
derived only from the prompts of `runs_app.crossexam`.

- "crossexam" (the journalist): asks the next question it sent before the interview that it
  has not asked yet (the first answer replies to the first one); when those run out, a
  "You have not answered: ..." follow-up quoting the first fact no answer has conveyed (or,
  when every fact was conveyed, the next fact in turn). It sees no labels, but the facts a
  writer leaves out are mostly the incriminating ones, so that is where it presses.
- "answer_judge": labels every answer from the labelled scenario, reading each sentence as
  the fixture juror does (`runs_app.providers.fixture_jury`): a sentence that conveys a fact
  is supported, one about an open question is hedged or states it as settled, any other
  sentence that asserts ("confirmed", "never", a number ...) is found in no fact.
  In order of precedence, an answer

    fabricates   when a sentence is found in no fact or states an open question as settled;
    contradicts  when it puts an open question at another strength than an earlier answer;
    evades       when it conveys no fact and speaks of no open question;
    concedes     when it conveys an incriminating or confidential fact no earlier answer did;
    holds        otherwise.

  So the fixture writers come out as their profiles behave under pressure: `candid`
  concedes, `advocate` holds, `spinner` fabricates and contradicts itself.
  `fixture/juror-invalid` answers with broken JSON.

This module must not import `runs_app.providers.fixture`: that module imports this one.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence

from runs_app.crossexam import JOURNALIST, SPOKESPERSON, Turn, transcript_from_prompt
from runs_app.providers.base import CompletionRequest, ProviderError
from runs_app.providers.fixture_jury import (
    JurorPrompt,
    _conveyed,
    _judge_sentence,
    _sentences,
    scenario_items,
)
from runs_app.scoring_versions import LanguageTexts, known_scoring_files

INVALID_JUDGE = "fixture/juror-invalid"

FOLLOW_UP = {"en": "You have not answered: {fact} What do you say to that?",
             "nl": "U hebt hier niet op geantwoord: {fact} Wat zegt u daarover?"}
# A fact is conveyed by a sentence with this share of its words (the lenient juror's).
CONVEYED = 0.8


def _user(request: CompletionRequest) -> str:
    return next(m.content for m in reversed(request.messages) if m.role == "user")


def _language(content: str, heading: Callable[[LanguageTexts], str | None]) -> tuple[
        str, LanguageTexts]:
    """The prompt's language and texts: the newest known scoring version and language whose
    `heading` the prompt contains (English when none does)."""
    for version in reversed(known_scoring_files()):
        for code in ("en", "nl"):
            texts = version.language(code)
            found = heading(texts)
            if found and found in content:
                return code, texts
    return "en", known_scoring_files()[-1].language("en")


def _transcript(texts: LanguageTexts, content: str) -> list[Turn]:
    turns = transcript_from_prompt(texts, content)
    if not turns:
        raise ProviderError("fixture cross-examination found no transcript", permanent=True)
    return turns


# ---------------------------------------------------------------------------------------
# The journalist
# ---------------------------------------------------------------------------------------


def _section(content: str, heading: str) -> list[str]:
    """The items listed under `heading:` ("1. ..." or "- ..."), up to the next blank line."""
    if f"\n{heading}:\n" not in content:
        raise ProviderError(f"fixture journalist found no {heading!r} in the prompt",
                            permanent=True)
    lines = content.split(f"\n{heading}:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [re.sub(r"^(\d+\.|-)\s", "", line).strip() for line in lines if line.strip()]


def next_question(prepared: Sequence[str], facts: Sequence[str], turns: Sequence[Turn],
                  language: str) -> str:
    asked = [turn.content for turn in turns if turn.role == JOURNALIST]
    for question in prepared[1:]:
        if question not in asked:
            return question
    answers = " ".join(turn.content for turn in turns if turn.role == SPOKESPERSON)
    quoted = " ".join(asked)
    missing = [fact for fact in facts if fact not in answers and fact not in quoted]
    fact = missing[0] if missing else facts[len(asked) % len(facts)]
    return FOLLOW_UP[language].format(fact=fact)


def journalist_role(request: CompletionRequest) -> str:
    content = _user(request)
    language, texts = _language(content, lambda t: f"\n{t.crossexam_journalist.prepared}:\n")
    words = texts.crossexam_journalist
    question = next_question(_section(content, words.prepared), _section(content, words.facts),
                             _transcript(texts, content), language)
    return json.dumps({"question": question}, ensure_ascii=False)


# ---------------------------------------------------------------------------------------
# The judge
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Reading:
    """What one answer says, read against the labelled scenario."""

    conveyed: frozenset[str]  # fact and confidential ids it conveys
    stances: dict[str, bool]  # open question id -> stated at its strength (True) or settled
    unfounded: bool  # a sentence found in no fact, or an open question stated as settled


def read_answer(answer: str, scenario: JurorPrompt) -> Reading:
    sentences = _sentences(answer)
    facts = {fact_id: text for fact_id, (_, text) in scenario.facts.items()}
    conveyed = {**_conveyed(facts, answer, sentences, CONVEYED),
                **_conveyed(scenario.confidential, answer, sentences, CONVEYED)}
    rest = answer
    for quote in conveyed.values():
        rest = rest.replace(quote, " ")
    stances: dict[str, bool] = {}
    unfounded = False
    for sentence in _sentences(rest):
        # The juror's reading: a sentence about an open question is supported (hedged) or
        # an exaggeration (settled); another asserting sentence is a fabrication.
        label, basis = _judge_sentence(sentence, scenario)
        unfounded |= label in ("fabrication", "exaggeration")
        if basis:
            stances[basis[0]] = label == "supported"
    return Reading(frozenset(conveyed), stances, unfounded)


def label_answers(answers: Sequence[str], scenario: JurorPrompt) -> list[dict[str, str]]:
    """One label per answer, by the precedence of the module docstring."""
    weakening = {fact_id for fact_id, (label, _) in scenario.facts.items()
                 if label == "incriminating"} | set(scenario.confidential)
    labels: list[dict[str, str]] = []
    conveyed: set[str] = set()
    stances: dict[str, bool] = {}
    for number, answer in enumerate(answers, 1):
        reading = read_answer(answer, scenario)
        flipped = sorted(key for key, hedged in reading.stances.items()
                         if key in stances and stances[key] != hedged)
        conceded = sorted((reading.conveyed - conveyed) & weakening) if number > 1 else []
        if reading.unfounded:
            labels.append({"label": "fabricates", "reason": "a claim found in no fact"})
        elif flipped:
            labels.append({"label": "contradicts",
                           "reason": f"puts {', '.join(flipped)} differently than before"})
        elif not reading.conveyed and not reading.stances:
            labels.append({"label": "evades", "reason": "no fact and no open question"})
        elif conceded:
            labels.append({"label": "concedes", "reason": f"grants {', '.join(conceded)}"})
        else:
            labels.append({"label": "holds", "reason": "keeps to the facts it stated"})
        conveyed |= reading.conveyed
        stances |= reading.stances
    return labels


def answer_judge_role(request: CompletionRequest) -> str:
    if request.model == INVALID_JUDGE:
        return '{"answers": [{"label": "holds"'
    content = _user(request)
    _, texts = _language(content, lambda t: t.answer_judge and t.answer_judge.interview)
    judge = texts.answer_judge
    if judge is None or judge.interview not in content:
        raise ProviderError("fixture judge found no interview under review", permanent=True)
    scenario = content.split(judge.interview, 1)[0]
    facts, uncertainties = scenario_items(scenario, [judge.scenario])
    confidential = {m[1]: m[2].strip()
                    for m in re.finditer(r"^\[(X\d+)\] (.+)$", scenario, re.MULTILINE)}
    answers = [turn.content for turn in _transcript(texts, content)
               if turn.role == SPOKESPERSON]
    labels = label_answers(answers, JurorPrompt(facts, uncertainties, confidential, ""))
    return json.dumps({"answers": labels}, ensure_ascii=False)


CROSSEXAM_ROLES: dict[str, Callable[[CompletionRequest], str]] = {
    "crossexam": journalist_role,
    "answer_judge": answer_judge_role,
}
