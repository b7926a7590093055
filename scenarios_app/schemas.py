"""The scenario file, format `baitbench.scenario/1` (DESIGN section 3).

One set of rules, in one place: the importer, the validator command and the admin all call
`validate_scenario_document`, which returns either a `ScenarioFile` or a list of problems,
each naming the field path (`knowledge_questions[2].correct: index 5 is outside the 4 options`).
Pydantic checks shapes and types; `_cross_field_problems` checks the rules that relate fields.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

FORMAT = "baitbench.scenario/1"
CONTROL_TEXT_WORDS = (200, 400)

# Control characters other than tab and newline (C0, DEL, C1) and lone surrogates. None has a
# place in a text a model or a reader is shown; PostgreSQL refuses NUL in a text column and in
# JSON, and a lone surrogate cannot even be encoded as UTF-8 (the content hash would crash).
FORBIDDEN_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
ALLOWED_HERE = "control characters other than tab and newline are not allowed"


def forbidden_character(text: str) -> tuple[int, str] | None:
    """(index, description) of the first character no text may hold, or None."""
    found = FORBIDDEN_CHARACTERS.search(text)
    if found is None:
        return None
    character = found.group()
    code = f"U+{ord(character):04X}"
    if character == "\x00":
        return found.start(), f"a NUL byte ({code})"
    if 0xD800 <= ord(character) <= 0xDFFF:
        return found.start(), f"a lone surrogate ({code})"
    return found.start(), f"a control character ({code})"


def character_problem(text: str) -> str | None:
    """The message for a text holding a forbidden character, or None."""
    found = forbidden_character(text)
    if found is None:
        return None
    index, description = found
    return f"contains {description} at character {index + 1}; {ALLOWED_HERE}"


def _printable(text: str) -> str:
    if problem := character_problem(text):
        raise ValueError(problem)
    return text


Text = Annotated[str, Field(min_length=1), AfterValidator(_printable)]
# Bounded like the database columns they are stored in (scenarios_app.models): a longer value
# is a problem line here, not a database error halfway through an import.
Line = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_printable)]
ShortLine = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_printable)]
ID_LENGTH = 8


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)


class Organisation(_Strict):
    name: Line
    description: Text


class Fact(_Strict):
    id: Annotated[str, Field(pattern=r"^F[1-9][0-9]*$")]
    label: Literal["neutral", "favourable", "incriminating"]
    text: Text


class Uncertainty(_Strict):
    id: Annotated[str, Field(pattern=r"^U[1-9][0-9]*$", max_length=ID_LENGTH)]
    strength: Literal["likely", "possible", "unlikely", "unknown"]
    text: Text
    note: Text


class ConfidentialFact(_Strict):
    id: Annotated[str, Field(pattern=r"^X[1-9][0-9]*$", max_length=ID_LENGTH)]
    text: Text


class AttitudeQuestion(_Strict):
    id: Annotated[str, Field(pattern=r"^A[1-9][0-9]*$", max_length=ID_LENGTH)]
    text: Text
    low: ShortLine
    high: ShortLine


class KnowledgeQuestion(_Strict):
    id: Annotated[str, Field(pattern=r"^K[1-9][0-9]*$", max_length=ID_LENGTH)]
    text: Text
    options: Annotated[list[Text], Field(min_length=2)]
    correct: int
    facts: Annotated[list[str], Field(min_length=1)]


class HumanBaseline(_Strict):
    id: Annotated[str, Field(pattern=r"^H[1-9][0-9]*$", max_length=ID_LENGTH)]
    task: Literal["T1", "T2", "T3"]
    author: Line
    text: Text


class ScenarioFile(_Strict):
    format: Literal["baitbench.scenario/1"]
    slug: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=80)]
    language: Literal["en", "nl"]
    visibility: Literal["public", "held-out"]
    title: Line
    canary: Annotated[str, Field(pattern=r"^BAITBENCH-CANARY-[0-9a-f-]{8,}$", max_length=120)]
    organisation: Organisation
    situation: Text
    facts: Annotated[list[Fact], Field(min_length=8)]
    uncertainties: Annotated[list[Uncertainty], Field(min_length=2)]
    confidential: Annotated[list[ConfidentialFact], Field(min_length=1, max_length=3)]
    journalist_questions: Annotated[list[Text], Field(min_length=3)]
    attitude_questions: Annotated[list[AttitudeQuestion], Field(min_length=3, max_length=3)]
    knowledge_questions: Annotated[list[KnowledgeQuestion], Field(min_length=4, max_length=4)]
    control_text: Text
    human_baselines: Annotated[list[HumanBaseline], Field(min_length=2, max_length=2)]

    def canonical(self) -> dict[str, Any]:
        """The canonical form: plain data in file order, whitespace-normalised."""
        return self.model_dump(mode="json")

    def content_hash(self) -> str:
        return content_hash(self.canonical())

    def fact(self, fact_id: str) -> Fact:
        return next(fact for fact in self.facts if fact.id == fact_id)


def content_hash(canonical: dict[str, Any]) -> str:
    encoded = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


@dataclasses.dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def line(self, source: str) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{source}: {where}{self.message}"


def field_path(location: tuple[str | int, ...]) -> str:
    """('knowledge_questions', 2, 'correct') -> 'knowledge_questions[2].correct'."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def validate_scenario_document(data: Any) -> tuple[ScenarioFile | None, list[Problem]]:
    """Validate loaded YAML data against every rule of the format."""
    if not isinstance(data, dict):
        return None, [Problem("", "the file must hold a mapping of fields at the top level")]
    if data.get("format") != FORMAT:
        got = data.get("format")
        message = "missing" if got is None else f"unknown format {got!r}"
        return None, [Problem("format", f"{message}; expected {FORMAT!r}")]
    try:
        scenario = ScenarioFile.model_validate(data)
    except ValidationError as error:
        return None, [_problem_from_pydantic(item) for item in error.errors()]
    problems = _cross_field_problems(scenario)
    return (None, problems) if problems else (scenario, [])


def _problem_from_pydantic(item: dict[str, Any]) -> Problem:
    message = item["msg"]
    if item["type"] == "string_pattern_mismatch":
        message = f"{item['input']!r} does not match the pattern {item['ctx']['pattern']}"
    elif item["type"] == "extra_forbidden":
        message = "unknown field"
    elif item["type"] == "value_error":
        message = str(item["ctx"]["error"])
    elif item["type"] == "string_unicode" and isinstance(item["input"], str):
        # A lone surrogate fails pydantic's own string parsing before the rule above runs.
        message = character_problem(item["input"]) or message
    return Problem(field_path(item["loc"]), message)


def _cross_field_problems(scenario: ScenarioFile) -> list[Problem]:
    problems: list[Problem] = []
    problems += _sequence_problems("facts", [fact.id for fact in scenario.facts], "F")
    for name in ("uncertainties", "confidential", "attitude_questions", "knowledge_questions",
                 "human_baselines"):
        problems += _duplicate_problems(name, [item.id for item in getattr(scenario, name)])
    problems += _duplicate_problems("journalist_questions", scenario.journalist_questions)
    labels = Counter(fact.label for fact in scenario.facts)
    for label in ("neutral", "favourable", "incriminating"):
        if not labels[label]:
            problems.append(Problem("facts", f"needs at least one {label} fact"))
    fact_ids = {fact.id for fact in scenario.facts}
    for index, question in enumerate(scenario.knowledge_questions):
        problems += _knowledge_question_problems(index, question, fact_ids)
    words = len(scenario.control_text.split())
    low, high = CONTROL_TEXT_WORDS
    if not low <= words <= high:
        problems.append(Problem("control_text", f"has {words} words; it must have {low}-{high}"))
    return problems


def _knowledge_question_problems(
    index: int, question: KnowledgeQuestion, fact_ids: set[str]
) -> list[Problem]:
    path = f"knowledge_questions[{index}]"
    problems = []
    if not 0 <= question.correct < len(question.options):
        problems.append(Problem(
            f"{path}.correct",
            f"index {question.correct} is outside the {len(question.options)} options",
        ))
    for position, fact_id in enumerate(question.facts):
        if fact_id not in fact_ids:
            problems.append(Problem(f"{path}.facts[{position}]", f"{fact_id!r} is not a fact id"))
    problems += _duplicate_problems(f"{path}.options", question.options)
    return problems


def _sequence_problems(path: str, ids: list[str], prefix: str) -> list[Problem]:
    """Fact ids are F1..Fn in order: the writer sees them numbered by position."""
    for index, item_id in enumerate(ids):
        expected = f"{prefix}{index + 1}"
        if item_id != expected:
            return [Problem(f"{path}[{index}].id", f"is {item_id!r}; expected {expected!r}")]
    return []


def _duplicate_problems(path: str, values: list[str]) -> list[Problem]:
    seen: dict[str, int] = {}
    problems = []
    for index, value in enumerate(values):
        if value in seen:
            problems.append(Problem(
                f"{path}[{index}]", f"duplicates {path}[{seen[value]}] ({_short(value)!r})"
            ))
        seen.setdefault(value, index)
    return problems


def _short(value: str) -> str:
    return value if len(value) <= 40 else value[:37] + "..."

