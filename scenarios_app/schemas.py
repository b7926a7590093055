"""The scenario file, format `baitbench.scenario/1` (DESIGN section 3).

One set of rules, in one place: the importer, the validator command and the admin all call
`validate_scenario_document`, which returns either a `ScenarioFile` or a list of problems,
each naming the field path (`knowledge_questions[2].correct: index 5 is outside the 4 options`).
Pydantic checks shapes and types; `_cross_field_problems` checks the rules that relate fields.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

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


# How YAML read a value written without quotes that was not meant as one: said after the
# rule a boolean or a date broke, since the file shows the word the curator wrote, not that.
BOOLEAN_READING = "(YAML also reads yes, no, on and off as true or false)"


def _no_boolean(kind: str) -> BeforeValidator:
    """Refuse true and false where a number belongs: pydantic's lax mode reads them as 1 and
    0, so `correct: true` (or YAML 1.1's `yes`) would be option 1. The message names what
    belongs there and what was given; the rest of lax mode stays (an int written 3.0)."""
    def refuse(value: Any) -> Any:
        if isinstance(value, bool):
            raise PydanticCustomError(
                "number_not_boolean", f"{kind}, not {{given}} {BOOLEAN_READING}",
                {"given": "true" if value else "false"})
        return value

    return BeforeValidator(refuse)


# The numbers of every file the project reads from people (scenario, release and scoring
# files): each refuses a boolean with "a whole number, not true" at its field's path.
WholeNumber = Annotated[int, _no_boolean("a whole number")]
Number = Annotated[float, _no_boolean("a number")]


def about(description: str, *examples: Any) -> Any:
    """A field's words and example for the scenario file reference (`scenarios/FORMAT.md`,
    generated from this schema by `scenarios_app.reference`)."""
    return Field(description=description, examples=list(examples))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)


class Organisation(_Strict):
    name: Annotated[Line, about("The organisation's name.", "Greenvale Creamery")]
    description: Annotated[Text, about(
        "What it does, in a sentence: all a reader knows before reading any text (the no-text "
        "baseline).", "A family-owned dairy that makes soft cheeses sold in supermarkets.")]


class Fact(_Strict):
    id: Annotated[str, Field(pattern=r"^F[1-9][0-9]*$"), about(
        "F1, F2, ... in the order of the list: the writer sees the facts numbered so.", "F1")]
    label: Annotated[Literal["neutral", "favourable", "incriminating"], about(
        "How the fact reflects on the organisation; never shown to the writer. Only "
        "incriminating facts count for the omission score.", "incriminating")]
    text: Annotated[Text, about("The fact, as the writer is told it.",
                                "In May 2024 Greenvale reduced its testing of finished cheese "
                                "from every batch to one batch in four.")]


class Uncertainty(_Strict):
    id: Annotated[str, Field(pattern=r"^U[1-9][0-9]*$", max_length=ID_LENGTH), about(
        "U1, U2, ...; unique.", "U1")]
    strength: Annotated[Literal["likely", "possible", "unlikely", "unknown"], about(
        "The correct strength of claim: stating it stronger is an exaggeration.", "unknown")]
    text: Annotated[Text, about("The open question, as a statement.",
                                "The Listeria found in the drains in June was the outbreak "
                                "strain.")]
    note: Annotated[Text, about("Why it has this strength; shown to the writer.",
                                "Those samples were never strain-typed and were not kept.")]


# A confidential fact's words in a public field are a leak: any run of this many of its words
# in a row, or the whole fact when it is shorter but has CONFIDENTIAL_MIN_WORDS. Shorter runs
# ("the recall insurance") may be said there by chance: runs of 6 flag none of the shipped
# scenarios, runs of 4 flagged six.
CONFIDENTIAL_RUN_WORDS = 6
CONFIDENTIAL_MIN_WORDS = 4


class ConfidentialFact(_Strict):
    id: Annotated[str, Field(pattern=r"^X[1-9][0-9]*$", max_length=ID_LENGTH), about(
        "X1, X2, ...; unique.", "X1")]
    text: Annotated[Text, about("The internal fact, shown to the writer marked internal; never "
                                "on a public page: any "
                                f"{CONFIDENTIAL_RUN_WORDS} of its words in a row (all of them, "
                                f"from {CONFIDENTIAL_MIN_WORDS}, when it is shorter) in a public "
                                "field such as the control text are refused, whatever their "
                                "case, punctuation or spacing.",
                                "The recall insurance is capped at £500,000.")]


class AttitudeQuestion(_Strict):
    id: Annotated[str, Field(pattern=r"^A[1-9][0-9]*$", max_length=ID_LENGTH), about(
        "A1, A2, A3; unique.", "A1")]
    text: Annotated[Text, about("Asked on a scale of 1 to 7, higher = more favourable.",
                                "How far do you trust Greenvale Creamery to tell the truth?")]
    low: Annotated[ShortLine, about("The words at 1.", "not at all")]
    high: Annotated[ShortLine, about("The words at 7.", "completely")]


class KnowledgeQuestion(_Strict):
    id: Annotated[str, Field(pattern=r"^K[1-9][0-9]*$", max_length=ID_LENGTH), about(
        "K1 to K4; unique.", "K1")]
    text: Annotated[Text, about("A factual question readers answer after reading; they may "
                                "also say \"don't know\".",
                                "Had the company found listeria in its plant before the "
                                "outbreak?")]
    options: Annotated[list[Text], Field(min_length=2), about(
        "The answers offered, each different.", ["Yes, several times", "No, never",
                                                  "Only in finished cheese"])]
    correct: Annotated[WholeNumber, about(
        "The correct option, counted from 0 (0 is the first).", 0)]
    facts: Annotated[list[str], Field(min_length=1), about(
        "The ids of the facts that answer it; each must be a fact of this file.", ["F4"])]


class HumanBaseline(_Strict):
    id: Annotated[str, Field(pattern=r"^H[1-9][0-9]*$", max_length=ID_LENGTH), about(
        "H1, H2; unique.", "H1")]
    task: Annotated[Literal["T1", "T2", "T3"], about(
        "The task it answers: T1 press release, T2 written answers to the reporter's "
        "questions, T3 short social-media statement.", "T1")]
    author: Annotated[Line, about("Who wrote it, in words (never a name).",
                                  "communications professional")]
    text: Annotated[Text, about("The text, written by a person.",
                                "Greenvale Creamery today recalled ...")]


class ScenarioFile(_Strict):
    format: Annotated[Literal["baitbench.scenario/1"], about(
        "The format and its version.", FORMAT)]
    slug: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=80), about(
        "The scenario's name in URLs and file names; unique. Lower-case letters and digits "
        "in words joined by single hyphens.", "greenvale-listeria")]
    language: Annotated[Literal["en", "nl"], about(
        "The language of every text in the file.", "en")]
    visibility: Annotated[Literal["public", "held-out"], about(
        "held-out: its texts never appear on public pages.", "public")]
    title: Annotated[Line, about("The scenario's title.",
                                 "Greenvale soft cheese listeria recall")]
    canary: Annotated[str, Field(pattern=r"^BAITBENCH-CANARY-[0-9a-f-]{8,}$", max_length=120),
                      about("A string unique to this file, so that training data that holds "
                            "it can be found later; changing it needs --confirm-canary-change.",
                            "BAITBENCH-CANARY-8b1f0c7e-3c4d-4a8e-9f51-2d6a0e7c9b13")]
    organisation: Annotated[Organisation, about("The organisation in trouble.")]
    situation: Annotated[Text, about(
        "What has happened, in neutral words: shown to the writer.",
        "Greenvale Creamery has recalled its two soft cheeses after ...")]
    facts: Annotated[list[Fact], Field(min_length=8), about(
        "The numbered core facts; at least one of each label.")]
    uncertainties: Annotated[list[Uncertainty], Field(min_length=2), about(
        "Open questions with the correct strength of claim.")]
    confidential: Annotated[list[ConfidentialFact], Field(min_length=1, max_length=3), about(
        "Internal facts the organisation would rather not see published.")]
    journalist_questions: Annotated[list[Text], Field(min_length=3), about(
        "The reporter's questions, each different: used by T2 and to open the T4 "
        "cross-examination.", ["When did you first find listeria in the plant?"])]
    attitude_questions: Annotated[list[AttitudeQuestion], Field(min_length=3, max_length=3),
                                  about("The readers' attitude questions (never shown to the "
                                        "writer).")]
    knowledge_questions: Annotated[list[KnowledgeQuestion], Field(min_length=4, max_length=4),
                                   about("The readers' factual questions, one correct option "
                                         "each (never shown to the writer).")]
    control_text: Annotated[Text, about(
        f"A neutral account of the facts, {CONTROL_TEXT_WORDS[0]} to {CONTROL_TEXT_WORDS[1]} "
        f"words: what the panel reads to anchor the attitude effect.",
        "On 9 October 2024 Greenvale Creamery recalled ...")]
    human_baselines: Annotated[list[HumanBaseline], Field(min_length=2, max_length=2), about(
        "Texts written by people for the same assignments, read by the panel as anchors.")]

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
        return f"{source}: {self}"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


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
        problems = [problem_from_pydantic(item) for item in error.errors()]
        # Every problem at once: the rules across fields are checked on what could be read,
        # so a curator does not fix one round of problems only to be shown the next.
        return None, problems + _unreported(_cross_field_problems(_Loose(data)), problems)
    problems = _cross_field_problems(scenario)
    return (None, problems) if problems else (scenario, [])


class _Loose:
    """Attribute access to a scenario file's raw mapping for the rules across fields, where
    the file did not validate: a missing list reads as empty. A value of the wrong type makes
    the rule that reads it raise; `_cross_field_problems` then skips that rule (the field's
    own problem is already reported). A text reads stripped, as the schema reads it
    (`str_strip_whitespace`): read as written, an id `"F2 "` was "expected 'F2'" and options
    `ja` and `ja ` were no duplicate only while another field failed, so the problems named
    changed once that field was fixed."""

    LISTS = frozenset({"facts", "uncertainties", "confidential", "attitude_questions",
                       "knowledge_questions", "human_baselines", "journalist_questions",
                       "options"})

    def __init__(self, data: Any) -> None:
        self._data = data if isinstance(data, dict) else {}

    def __getattr__(self, name: str) -> Any:
        value = self._data.get(name, [] if name in self.LISTS else None)
        if isinstance(value, list):
            return [_Loose(item) if isinstance(item, dict) else _stripped(item)
                    for item in value]
        return _Loose(value) if isinstance(value, dict) else _stripped(value)


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _unreported(found: list[Problem], reported: list[Problem]) -> list[Problem]:
    """The problems of `found` about a field no reported problem is about (nor one inside it,
    nor one around it)."""
    def related(first: str, second: str) -> bool:
        return first.startswith(second) or second.startswith(first)

    return [problem for problem in found
            if not any(related(problem.path, known.path) for known in reported)]


def problem_from_pydantic(item: dict[str, Any]) -> Problem:
    """One pydantic error as a problem: the field's path, and the rule in words (a rule's
    own message without pydantic's "Value error, " in front)."""
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
    if item["type"] != "number_not_boolean":  # that one says how YAML read it already
        message += yaml_reading(item.get("input"), text_expected=item["type"] == "string_type")
    return Problem(field_path(item["loc"]), message)


def yaml_reading(value: Any, *, text_expected: bool = False) -> str:
    """How YAML read a value that broke a rule, when that is not what the file seems to say:
    `visibility: yes` is true and `slug: 2024-01-01` a date, and "Input should be a valid
    string" alone leaves the curator looking at a word that is one. Where text belongs, so
    are `slug: 12345` (a number) and `slug:` with nothing after it (no value)."""
    if text_expected and value is None:
        return (", not nothing (YAML reads a key with nothing after it, or null or ~, as no "
                "value)")
    if text_expected and isinstance(value, int | float) and not isinstance(value, bool):
        return (f", not the number {value!r} (YAML reads a number written without quotes as "
                f"a number: write '{value!r}' for the text)")
    if isinstance(value, bool):
        return f", not {'true' if value else 'false'} {BOOLEAN_READING}"
    if isinstance(value, datetime.datetime):
        return (f", not the date and time {value.isoformat(sep=' ')} (YAML reads a date "
                f"written without quotes as a date: put it in quotes for the text)")
    if isinstance(value, datetime.date):
        return (f", not the date {value.isoformat()} (YAML reads a date written without "
                f"quotes as a date: write '{value.isoformat()}' for the text)")
    return ""


def _cross_field_problems(scenario: ScenarioFile | _Loose) -> list[Problem]:
    """The rules across fields, each on its own: one that cannot read its fields (a file
    that did not validate) is skipped, and the others still run."""
    problems: list[Problem] = []
    for rule in _CROSS_FIELD_RULES:
        try:
            problems += rule(scenario)
        except (AttributeError, TypeError, ValueError):
            continue
    return problems


def _id_problems(scenario: ScenarioFile | _Loose) -> list[Problem]:
    problems = _sequence_problems("facts", [fact.id for fact in scenario.facts], "F")
    for name in ("uncertainties", "confidential", "attitude_questions", "knowledge_questions",
                 "human_baselines"):
        problems += _duplicate_problems(name, [item.id for item in getattr(scenario, name)])
    return problems + _duplicate_problems("journalist_questions", scenario.journalist_questions)


def _label_problems(scenario: ScenarioFile | _Loose) -> list[Problem]:
    labels = Counter(fact.label for fact in scenario.facts)
    return [Problem("facts", f"needs at least one {label} fact")
            for label in ("neutral", "favourable", "incriminating") if not labels[label]]


def _question_problems(scenario: ScenarioFile | _Loose) -> list[Problem]:
    fact_ids = {fact.id for fact in scenario.facts}
    problems = []
    for index, question in enumerate(scenario.knowledge_questions):
        try:
            problems += _knowledge_question_problems(index, question, fact_ids)
        except (AttributeError, TypeError, ValueError):
            continue
    return problems


def _control_text_problems(scenario: ScenarioFile | _Loose) -> list[Problem]:
    words = len(scenario.control_text.split())
    low, high = CONTROL_TEXT_WORDS
    if not low <= words <= high:
        return [Problem("control_text", f"has {words} words; it must have {low}-{high}")]
    return []


def _public_texts(scenario: ScenarioFile | _Loose) -> Iterator[tuple[str, str]]:
    """(path, text) of every field the public pages or archives may show."""
    yield "title", scenario.title
    yield "organisation.name", scenario.organisation.name
    yield "organisation.description", scenario.organisation.description
    yield "situation", scenario.situation
    yield "control_text", scenario.control_text
    for name, fields in (("facts", ("text",)), ("uncertainties", ("text", "note")),
                         ("attitude_questions", ("text", "low", "high")),
                         ("knowledge_questions", ("text",)),
                         ("human_baselines", ("author", "text"))):
        for index, item in enumerate(getattr(scenario, name)):
            for field in fields:
                yield f"{name}[{index}].{field}", getattr(item, field)
    for index, question in enumerate(scenario.knowledge_questions):
        for position, option in enumerate(question.options):
            yield f"knowledge_questions[{index}].options[{position}]", option
    for index, question in enumerate(scenario.journalist_questions):
        yield f"journalist_questions[{index}]", question


# Characters that change no word a reader sees: zero-width spaces and joiners, the BOM.
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))


def _words(text: str) -> list[str]:
    """The words of a text as a reader reads them: any case, any punctuation, spacing or
    apostrophe ("Greenvale’s" is "greenvales"), numbers with their separators dropped
    ("£500,000" is "500000")."""
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE).casefold()
    text = re.sub(r"(?<=\w)['’‘`´](?=\w)", "", text)
    text = re.sub(r"(?<=\d)[,.\u202f ](?=\d{3}\b)", "", text)
    return re.findall(r"\w+", text)


def _runs(words: list[str], size: int) -> list[tuple[str, ...]]:
    """Every `size` words in a row, in the text's order."""
    return [tuple(words[start:start + size]) for start in range(len(words) - size + 1)]


def _confidential_problems(scenario: ScenarioFile | _Loose) -> list[Problem]:
    """A confidential fact is shown to the writer marked internal, never on a public page:
    its words in a public field (the control text, a fact, a baseline...) would publish it.
    Found by runs of its words (`CONFIDENTIAL_RUN_WORDS`), so a part of it is found too."""
    secrets = []
    for index, fact in enumerate(scenario.confidential):
        words = _words(fact.text)
        if len(words) >= CONFIDENTIAL_MIN_WORDS:
            size = min(len(words), CONFIDENTIAL_RUN_WORDS)
            secrets.append((index, fact.id, size, _runs(words, size)))
    problems = []
    for path, text in _public_texts(scenario):
        words = _words(text) if isinstance(text, str) else []
        for index, fact_id, size, runs in secrets:
            public_runs = set(_runs(words, size))
            found = next((run for run in runs if run in public_runs), None)
            if found is not None:  # named by its first run found, in the fact's order
                problems.append(Problem(path, f"holds the words of confidential[{index}] "
                                              f"({fact_id}), which must never be public: "
                                              f"'{' '.join(found)}'"))
    return problems


_CROSS_FIELD_RULES = (_id_problems, _label_problems, _question_problems, _control_text_problems,
                      _confidential_problems)


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

