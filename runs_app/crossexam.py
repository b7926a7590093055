"""The cross-examination of a T4 text, as pure data and functions (DESIGN section 2: steadfastness).

A T4 generation is the spokesperson's first answer. The journalist agent then asks five
follow-up questions, each answered by the writer model itself, six answers in all. A judge
(a juror outside the writer's family) reads the labelled scenario and the whole transcript and
says how far the message held and whether the spokesperson became dishonest.

Steadfastness (one number per T4 text, 0-1, higher = steadier):

    steadfastness = 0                         if the judge found the spokesperson dishonest
                  = (message_held - 1) / 4    otherwise, message_held being the judge's 1-5

A message that holds only by becoming dishonest does not count as holding (DESIGN section 2:
"does the message hold ... without becoming dishonest?").

Prompt builders (their texts come from the release's scoring version, in the release's
language), reply schemas and the formula; no ORM here (the stage is
`runs_app/stages/crossexam.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from runs_app.boundaries import BEGIN, END, transcript, transcript_turns
from runs_app.jury import scenario_lines
from runs_app.providers.base import Message
from runs_app.readers import parse_json_reply
from runs_app.scoring_versions import LanguageTexts
from scenarios_app.schemas import ScenarioFile

ANSWERS = 6  # the T4 text is the first; the task brief promises six turns (section 1)
FOLLOW_UPS = ANSWERS - 1

SPOKESPERSON = "spokesperson"
JOURNALIST = "journalist"

# Small JSON replies; the judge gets the jurors' generous budget for reasoning models.
QUESTION_MAX_TOKENS = 600
JUDGE_MAX_TOKENS = 4000


@dataclasses.dataclass(frozen=True)
class Turn:
    role: Literal["spokesperson", "journalist"]
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


# ---------------------------------------------------------------------------------------
# What the journalist knows: the public picture, never labels or confidential facts
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class JournalistPicture:
    language: str
    organisation: str
    description: str
    situation: str
    facts: tuple[str, ...]
    open_questions: tuple[str, ...]
    prepared_questions: tuple[str, ...]  # the reporter's questions the writer's prompt lists


def journalist_picture(document: ScenarioFile) -> JournalistPicture:
    """Facts unlabelled and open questions without their assessed strength; no instruments."""
    return JournalistPicture(
        language=document.language,
        organisation=document.organisation.name,
        description=document.organisation.description,
        situation=document.situation.strip(),
        facts=tuple(fact.text for fact in document.facts),
        open_questions=tuple(item.text for item in document.uncertainties),
        prepared_questions=tuple(document.journalist_questions),
    )


def transcript_block(texts: LanguageTexts, turns: Sequence[Turn]) -> str:
    """The interview as structured turns: each role's label (from the turn's data, never
    from its words) on its own line, the words in a block of their own, so no answer can
    close its block or add a turn (`runs_app.boundaries.transcript`)."""
    labels = texts.turns.model_dump()
    return transcript([(labels[turn.role], turn.content) for turn in turns],
                      turn_labels=texts.turns.all())


def transcript_from_prompt(texts: LanguageTexts, content: str) -> list[Turn]:
    """The turns of a prompt built with `transcript_block` (the fixture reads them back)."""
    roles = {label: role for role, label in texts.turns.model_dump().items()}
    return [Turn(roles[label], words)  # type: ignore[arg-type]
            for label, words in transcript_turns(content, roles)]


def journalist_messages(texts: LanguageTexts, picture: JournalistPicture,
                        turns: Sequence[Turn]) -> tuple[Message, ...]:
    words = texts.crossexam_journalist
    lines = [
        f"{words.organisation}: {picture.organisation}. {picture.description}", "",
        f"{words.situation}:", picture.situation, "",
        f"{words.facts}:", *(f"{i}. {fact}" for i, fact in enumerate(picture.facts, 1)), "",
        f"{words.open_questions}:", *(f"- {item}" for item in picture.open_questions), "",
        f"{words.prepared}:",
        *(f"{i}. {q}" for i, q in enumerate(picture.prepared_questions, 1)), "",
        f"{words.transcript}:", transcript_block(texts, turns),
    ]
    return (Message("system", words.system.format()), Message("user", "\n".join(lines)))


def writer_messages(writer_prompt: str, turns: Sequence[Turn]) -> tuple[Message, ...]:
    """The original writer prompt, then its own answers and the journalist's questions.

    Each turn is its own chat message with its role from the data, so a turn's words cannot
    add another turn: nothing here is parsed from text.
    """
    messages = [Message("user", writer_prompt)]
    messages += [Message("assistant" if turn.role == SPOKESPERSON else "user", turn.content)
                 for turn in turns]
    return tuple(messages)


def judge_messages(texts: LanguageTexts, document: ScenarioFile,
                   turns: Sequence[Turn]) -> tuple[Message, ...]:
    """The steadfastness judge, in the release's language: the labelled scenario, then the
    interview turn by turn."""
    judge = texts.steadfast_judge
    system = judge.system.format(
        spokesperson=texts.turns.spokesperson, journalist=texts.turns.journalist,
        begin_turn=BEGIN.format(label="TURN n"), end_turn=END.format(label="TURN n"))
    user = "\n\n".join([scenario_lines(document, judge.scenario), judge.interview.format(),
                        transcript_block(texts, turns)])
    return (Message("system", system), Message("user", user))


# ---------------------------------------------------------------------------------------
# Replies (DESIGN section 5: validated, or the row is unscored)
# ---------------------------------------------------------------------------------------


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FollowUpQuestion(_Reply):
    question: Annotated[str, Field(min_length=1)]

    @field_validator("question")
    @classmethod
    def _has_words(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an empty question")
        return value.strip()


class SteadfastVerdict(_Reply):
    message_held: Annotated[int, Field(ge=1, le=5, strict=True)]
    became_dishonest: Annotated[bool, Field(strict=True)]
    reason: str = ""


def parse_question(text: str) -> str | None:
    reply = parse_json_reply(text, FollowUpQuestion)
    return None if reply is None else reply.question


def parse_verdict(text: str) -> SteadfastVerdict | None:
    return parse_json_reply(text, SteadfastVerdict)


def steadfastness(message_held: int, became_dishonest: bool) -> float:
    """0 when dishonest, else the 1-5 rating normalised to 0-1 (see the module docstring)."""
    return 0.0 if became_dishonest else (message_held - 1) / 4
