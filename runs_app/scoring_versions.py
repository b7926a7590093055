"""Scoring versions: the texts and constants that score a release (DESIGN section 1).

The juror, refusal, reader, journalist, judge and reveal prompts, the claim weights, the
technique list and the knowledge-harm cap are versioned data, `runs_app/scoring/<name>.yaml`,
validated by `ScoringFile`. A version is identified by the hash of its canonical content
(SHA-256 of the validated document as sorted, compact JSON, as scenario versions are): two
files with the same texts and constants have the same hash, and any change of a word or a
number gives a new one. When a release is created its configuration pins the version as
`name@hash` and the content is stored in a `ScoringVersion` row keyed by the hash; every stage
builds its prompts from that stored content, so editing or deleting the file later changes
nothing a frozen release sends or computes. A new version is used only by a new release.

Pure data and validation; no ORM here (the row is `runs_app.models.ScoringVersion`).
"""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from baitbench_site import yaml_files
from runs_app.traits import Traits
from scenarios_app.schemas import Number, WholeNumber, content_hash, field_path

SCORING_DIR = Path(__file__).resolve().parent / "scoring"
VERSION_FILE = re.compile(r"v[0-9]+\.yaml")
# What a release file that names no scoring version gets: the newest.
CURRENT = "v2"
# Releases stored before scoring versions existed name none; they were scored by the texts
# and constants that v1 holds, and resolve to this hash (a test holds v1.yaml to it).
LEGACY_PIN = "v1@81fab53f25d0cadfb2ffb2173d11b2113810867f17a810061e8cefd5d39d7c33"


class ScoringFileError(Exception):
    """A scoring file that cannot be used; `lines` name each problem (`file: field: message`)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


# ---------------------------------------------------------------------------------------
# Texts: str.format templates whose placeholders the schema fixes
# ---------------------------------------------------------------------------------------


def _placeholders(*names: str):
    """A text that must use exactly the placeholders `names` (none: braces are doubled)."""
    allowed = set(names)

    def check(value: str) -> str:
        used = {field for _, field, _, _ in string.Formatter().parse(value) if field is not None}
        if used - allowed:
            unknown = ", ".join(f"{{{name}}}" for name in sorted(used - allowed))
            hint = (f"this text takes {', '.join(f'{{{n}}}' for n in sorted(allowed))}"
                    if allowed else "this text takes none; write a literal brace twice")
            raise ValueError(f"unknown placeholder {unknown}: {hint}")
        if allowed - used:
            missing = ", ".join(f"{{{name}}}" for name in sorted(allowed - used))
            raise ValueError(f"missing placeholder {missing}")
        return value

    return Annotated[str, Field(min_length=1), AfterValidator(check)]


Text = _placeholders()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


# ---------------------------------------------------------------------------------------
# The jury (language-independent: see `JuryTexts`)
# ---------------------------------------------------------------------------------------


class ClaimWeights(_Strict):
    """The weight of each claim label (DESIGN section 2): 0 supported ... 1 wrong."""

    supported: Annotated[Number, Field(ge=0, le=1)]
    exaggeration: Annotated[Number, Field(ge=0, le=1)]
    contradiction: Annotated[Number, Field(ge=0, le=1)]
    fabrication: Annotated[Number, Field(ge=0, le=1)]


class Technique(_Strict):
    name: Text
    definition: Text


class FactLabels(_Strict):
    neutral: Text
    favourable: Text
    incriminating: Text


class Strengths(_Strict):
    likely: Text
    possible: Text
    unlikely: Text
    unknown: Text


class ScenarioHeadings(_Strict):
    """How the labelled scenario is shown to a juror or judge: headings and label words."""

    organisation: Text
    situation: Text
    facts: Text
    open_questions: Text
    strength: Text
    note: Text
    confidential: Text
    labels: FactLabels
    strengths: Strengths


class JuryTexts(_Strict):
    """Jurors and the refusal classifier.

    Their instructions are in one language (`instruction_language`) for every release: the
    jury is multilingual and reads a Dutch text under English instructions, so that the
    labels, technique names and their definitions score every release alike.
    """

    instruction_language: Literal["en", "nl"]
    claim_weights: ClaimWeights
    knowledge_harm_cap: Annotated[WholeNumber, Field(ge=1)]
    techniques: Annotated[list[Technique], Field(min_length=1)]
    not_techniques: list[Text]
    juror_system: _placeholders("begin_text", "end_text", "techniques", "not_techniques")
    juror_scenario: ScenarioHeadings
    juror_text: Text
    refusal_system: Text
    refusal_assignment: Text
    refusal_text: Text

    @model_validator(mode="after")
    def _unique_techniques(self) -> JuryTexts:
        names = [technique.name for technique in self.techniques]
        if len(set(names)) != len(names):
            raise ValueError(f"techniques: names must be unique: {', '.join(names)}")
        return self

    @property
    def technique_names(self) -> tuple[str, ...]:
        return tuple(technique.name for technique in self.techniques)


# ---------------------------------------------------------------------------------------
# The simulated public and the journalist agent, per language
# ---------------------------------------------------------------------------------------

TRAITS = ("age_band", "education", "trust_in_media", "view_of_business", "view_of_government",
          "news_habits")


class ReaderTexts(_Strict):
    system: Text
    about_you: Text
    traits: _placeholders(*TRAITS)
    organisation: _placeholders("organisation", "description")
    with_text: _placeholders("organisation")
    no_text: _placeholders("organisation")
    attitude_intro: Text
    scale: _placeholders("low", "high")
    knowledge_intro: _placeholders("dont_know")
    knowledge_answer: _placeholders("options", "dont_know")


class TraitWords(_Strict):
    """The words for each value of each trait of a reading position."""

    trust_in_media: dict[str, Text]
    age_band: dict[str, Text]
    education: dict[str, Text]
    view_of_business: dict[str, Text]
    view_of_government: dict[str, Text]
    news_habits: dict[str, Text]

    @model_validator(mode="after")
    def _every_value_has_words(self) -> TraitWords:
        problems = []
        for name in TRAITS:
            values = set(get_args(Traits.model_fields[name].annotation))
            given = set(getattr(self, name))
            if given != values:
                problems.append(f"{name}: needs exactly {', '.join(sorted(values))}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class JournalistTexts(_Strict):
    system: Text
    task: _placeholders("organisation", "description")
    reply: Text


class FrameJudgeTexts(_Strict):
    system: Text
    task: Text
    reply: Text


class MisstatedWords(_Strict):
    exaggeration: Text
    contradiction: Text
    fabrication: Text


class RevealTexts(_Strict):
    intro: Text
    omitted: _placeholders("fact")
    misstated: _placeholders("label", "quote")
    question: Text
    label_words: MisstatedWords


class TurnLabels(_Strict):
    """The labels that head a transcript's turns; upper-case words, distinct."""

    spokesperson: Annotated[str, Field(pattern=r"^[A-Z][A-Z ]*[A-Z]$")]
    journalist: Annotated[str, Field(pattern=r"^[A-Z][A-Z ]*[A-Z]$")]

    @model_validator(mode="after")
    def _distinct(self) -> TurnLabels:
        if self.spokesperson == self.journalist:
            raise ValueError("the two roles need different labels")
        return self

    def all(self) -> tuple[str, str]:
        return (self.spokesperson, self.journalist)


class CrossExamJournalistTexts(_Strict):
    system: Text
    organisation: Text
    situation: Text
    facts: Text
    open_questions: Text
    prepared: Text
    transcript: Text


class SteadfastJudgeTexts(_Strict):
    """v1's judge of a whole interview (message held 1-5, dishonest or not). Kept so that v1's
    stored content still validates; no stage asks it since v2 labels every answer."""

    system: _placeholders("spokesperson", "journalist", "begin_turn", "end_turn")
    interview: Text
    scenario: ScenarioHeadings


# The labels of a cross-examination answer (DESIGN section 2, steadfastness), the words the
# judge replies with in every language.
ANSWER_LABELS = ("holds", "concedes", "contradicts", "fabricates", "evades")


class AnswerJudgeTexts(_Strict):
    """The judge that labels every answer of a finished interview (from v2)."""

    system: _placeholders("spokesperson", "journalist", "begin_turn", "end_turn", "answers")
    interview: Text
    scenario: ScenarioHeadings

    @model_validator(mode="after")
    def _names_every_label(self) -> AnswerJudgeTexts:
        missing = [label for label in ANSWER_LABELS if label not in self.system]
        if missing:
            raise ValueError(f"system: the judge must be told every label; missing "
                             f"{', '.join(missing)}")
        return self


class LanguageTexts(_Strict):
    reply: Text
    reader: ReaderTexts
    trait_words: TraitWords
    journalist: JournalistTexts
    frame_judge: FrameJudgeTexts
    reveal: RevealTexts
    turns: TurnLabels
    crossexam_journalist: CrossExamJournalistTexts
    # v1 judged a whole interview; v2 labels every answer. A version has one or the other.
    steadfast_judge: SteadfastJudgeTexts | None = None
    answer_judge: AnswerJudgeTexts | None = None


class Languages(_Strict):
    """Every release language: a scoring version scores releases in either."""

    en: LanguageTexts
    nl: LanguageTexts


class AnswerCredit(_Strict):
    """What an honest label of a follow-up answer adds to steadfastness, 0-1 (the dishonest
    labels, contradicts and fabricates, make it 0: `runs_app.crossexam.steadfastness`)."""

    holds: Annotated[Number, Field(ge=0, le=1)]
    concedes: Annotated[Number, Field(ge=0, le=1)]
    evades: Annotated[Number, Field(ge=0, le=1)]


class CrossExamScoring(_Strict):
    """The cross-examination's constants (from v2)."""

    answer_credit: AnswerCredit


class ScoringFile(_Strict):
    format: Literal["baitbench.scoring/1"]
    version: Annotated[str, Field(pattern=r"^v[0-9]+$")]
    jury: JuryTexts
    # None in v1, which judged a whole interview and cannot label answers.
    crossexam: CrossExamScoring | None = None
    languages: Languages

    @model_validator(mode="after")
    def _answer_judge_with_its_constants(self) -> ScoringFile:
        """The per-answer judge and its constants come together, in every language."""
        judged = [code for code in ("en", "nl") if self.language(code).answer_judge]
        if self.crossexam is not None and len(judged) < 2:
            raise ValueError("languages: every language needs an answer_judge when the "
                             "version has crossexam constants")
        if self.crossexam is None and judged:
            raise ValueError("crossexam: an answer_judge needs the crossexam constants "
                             "(answer_credit)")
        return self

    @property
    def labels_answers(self) -> bool:
        """Whether this version can score a cross-examination (v1 cannot)."""
        return self.crossexam is not None

    def language(self, code: str) -> LanguageTexts:
        return getattr(self.languages, code)

    def canonical(self) -> dict[str, Any]:
        """The content as plain data. A section a version does not have is left out rather
        than written as null, so adding an optional section never changes an older version's
        content, or its hash."""
        return self.model_dump(mode="json", exclude_none=True)

    def content_hash(self) -> str:
        return content_hash(self.canonical())


# ---------------------------------------------------------------------------------------
# Files and pins
# ---------------------------------------------------------------------------------------


def scoring_path(name: str) -> Path:
    return SCORING_DIR / f"{name}.yaml"


def load_scoring_file(name: str) -> ScoringFile:
    """`scoring/<name>.yaml`, validated; ScoringFileError names every problem and where (the
    file by its place in the project: the server's own folders are nobody's business)."""
    path = scoring_path(name)
    shown = path.relative_to(SCORING_DIR.parent.parent).as_posix()
    if not path.is_file():
        known = sorted((found.stem for found in SCORING_DIR.glob("v*.yaml")
                        if VERSION_FILE.fullmatch(found.name)), key=lambda stem: int(stem[1:]))
        raise ScoringFileError([f"{shown}: no such scoring version (there are "
                                f"{', '.join(known) or 'none'})"])
    try:
        data = yaml_files.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ScoringFileError([f"{shown}: malformed YAML: {error}"]) from None
    try:
        scoring = ScoringFile.model_validate(data)
    except ValidationError as error:
        raise ScoringFileError([f"{shown}: {field_path(item['loc']) or '(top)'}: {item['msg']}"
                                for item in error.errors()]) from None
    if scoring.version != name:
        raise ScoringFileError([f"{shown}: version: is {scoring.version!r}, the file name "
                                f"says {name!r}"])
    return scoring


def scoring_from_content(content: dict[str, Any]) -> ScoringFile:
    """A stored version's content (already validated when it was stored)."""
    return ScoringFile.model_validate(content)


def known_scoring_files() -> tuple[ScoringFile, ...]:
    """Every scoring file in `SCORING_DIR` as it is now (newest version last).

    For the fixture provider, which recognises a prompt's language by the words these files
    use; the stages never read files, only a release's stored version.
    """
    paths = [path for path in SCORING_DIR.glob("v*.yaml") if VERSION_FILE.fullmatch(path.name)]
    stamps = tuple(sorted(((path.name, path.stat().st_mtime_ns, path.stat().st_size)
                           for path in paths), key=lambda stamp: int(stamp[0][1:-5])))
    return _load_known(SCORING_DIR, stamps)


@functools.cache
def _load_known(directory: Path, stamps: tuple[tuple[str, int, int], ...]
                ) -> tuple[ScoringFile, ...]:
    del directory  # part of the cache key: tests point SCORING_DIR elsewhere
    return tuple(load_scoring_file(name.removesuffix(".yaml")) for name, _, _ in stamps)


def split_pin(pin: str | None) -> tuple[str, str]:
    """`name@hash` -> (name, hash); a stored configuration without one is a legacy release."""
    name, _, digest = (pin or LEGACY_PIN).partition("@")
    return name, digest
