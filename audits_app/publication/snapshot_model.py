"""The release snapshot as a typed value: what a publication freezes and every page, CSV, API
answer and archive reads (DESIGN sections 6 and 8).

`release_snapshot` builds the snapshot as JSON-safe data and checks it against this model
before it is frozen, so a builder that drifts from what the readers expect fails at
publication, not on a public page. `snapshot_load` reads a stored snapshot back as a model;
pages, CSV files, API answers and the public archive get theirs from
`pages.viewer.load_snapshot`, which validates a publication's once per process and snapshot
hash, from its stored text (`snapshot_load_json`). Every figure is checked inside
pydantic-core, and a board's pairs stay JSON objects (`PairRow`): at 200 models a snapshot
holds 258,700 pairs, and a model instance or a Python check each took most of its load
(bench/snapshot.py). The stored JSON is never rewritten from the model: `as_data` gives a
part back as it was read (the keys it had, whole numbers whole), for answers that pass a part
on.

Versions. A snapshot carries `schema_version` from version 1 on; one without it was frozen
before this model (version 0) and still loads: every field added since has a default that
says "not measured" (an empty list, None), never a made-up figure. Fields this model does
not name are kept as they are (`extra="allow"`), so a snapshot frozen by a later version of
the code loads here and dumps unchanged. The values are strict: a boolean is never read as a
number, nor a string as a count.

The figures' own shapes (boards, rows, pairs, the per-scenario and per-condition rows, the
control text and anchors, counts, gate, chart frame, method) are typed here; what only one
reader takes apart (agreement, calibration, the reader trial, scenario content, the frozen
configuration) stays JSON objects whose reader documents them.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, GetPydanticSchema, ValidationError, with_config
from pydantic_core import core_schema
from typing_extensions import TypedDict  # pydantic reads a TypedDict of typing's only from 3.12

SNAPSHOT_SCHEMA_VERSION = 1


def _figure_schema(nullable: bool) -> GetPydanticSchema:
    """A figure as frozen, checked inside pydantic-core (a snapshot holds hundreds of
    thousands; a Python validator per figure cost most of a large snapshot's load): a whole
    number stays whole, so that a part dumps as the JSON it was read from (`as_data`); a
    boolean or a string is no number. One error, "a valid number", whichever branch failed."""
    figure = core_schema.union_schema(
        [core_schema.int_schema(strict=True), core_schema.float_schema(strict=True)],
        custom_error_type="float_type")  # "Input should be a valid number"
    schema = core_schema.nullable_schema(figure) if nullable else figure
    return GetPydanticSchema(lambda _source, _handler: schema)


Real = Annotated[int | float, _figure_schema(nullable=False)]
Number = Annotated[int | float | None, _figure_schema(nullable=True)]


class SnapshotPart(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    def as_data(self) -> dict[str, Any]:
        """The part as the JSON it was read from: the keys it had, no defaults added."""
        return self.model_dump(mode="json", exclude_unset=True)


class ReleaseEntry(SnapshotPart):
    code: str
    language: str
    title: str = ""
    config: dict[str, Any]
    config_hash: str


class ModelEntry(SnapshotPart):
    id: str
    name: str
    family: str = ""


class JurorEntry(ModelEntry):
    key: int | None = None  # the registry row a verdict points to


class ScenarioEntry(SnapshotPart):
    slug: str
    title: str
    visibility: str  # public | held_out
    version_hash: str
    organisation: str = ""


class BoardRow(SnapshotPart):
    model: str
    rank: int | None  # None: unranked (no data, or below the release's minimum)
    unranked_reason: str = ""
    point: Number
    point_clipped: bool = False
    abs_low: Number = None
    abs_high: Number = None
    cmp_low: Number = None
    cmp_high: Number = None
    n_texts: int = 0
    coverage: Number = None
    scenarios: int = 0
    refusal_rate: Number = None


@with_config(ConfigDict(extra="allow", strict=True))
class PairRow(TypedDict):
    """One pair of a board, kept as the JSON object it was (a board holds M(M-1)/2 of them:
    19,900 at 200 models, so a model instance each cost most of a snapshot's load); its
    fields are checked all the same. Nothing reads a pair but the API, which passes it on."""

    a: str
    b: str
    diff: Number
    low: Number
    high: Number
    significant: bool


class Board(SnapshotPart):
    higher_is_better: bool
    rule: str
    pair_correction: str = "none"
    rows: list[BoardRow]
    pairs: list[PairRow] = Field(default_factory=list)
    sensitivity: list[dict[str, Any]] = Field(default_factory=list)
    label: str = ""
    what: str = ""
    direction: str = ""


class TextEntry(SnapshotPart):
    """One finished text with every score of its `TextScore` (None: not scored)."""

    id: int
    model: str
    scenario: str
    task: str
    condition: str
    variant: int = 0
    visibility: str = ""
    scored: bool = False
    refusal: str | None = None
    jurors_scored: int | None = 0  # None: the text has no score row
    claims: Number = None
    omission: Number = None
    knowledge_harm: Number = None
    honesty_index: Number = None
    confidential_disclosed: Number = None
    persuasion: Number = None
    attitude_effect: Number = None
    baseline_gain: Number = None
    misleading: Number = None
    dont_know: Number = None
    uptake: Number = None
    frame_adoption: Number = None
    reveal_effect: Number = None
    steadfastness: Number = None
    honesty_under_pressure: Number = None


class ArenaCell(SnapshotPart):
    scenario: str
    task: str
    condition: str
    variant: int


class ArenaEntry(SnapshotPart):
    cells: list[ArenaCell] = Field(default_factory=list)


class Counts(SnapshotPart):
    # In the order `publication.gate.release_counts` gives them: the page lists them so.
    texts: int = 0
    scored: int = 0
    unscored_verdicts: int | None = None
    unscored_rows: int | None = None
    failed_cells: int | None = None
    unfilled_cells: int | None = None  # None: counted before the figure existed
    unfilled_cut_off: int | None = None
    failed_rows: int | None = None
    refused: int = 0
    scenarios: int = 0
    models: int = 0


class Gate(SnapshotPart):
    coverage: Number = None
    agreement: Number = None
    min_coverage: Number = None
    min_agreement: Number = None
    passed: bool = False
    reasons: list[str] = Field(default_factory=list)
    override_reason: str = ""


class Chart(SnapshotPart):
    honesty: list[Real] = Field(default=[0.0, 1.0], min_length=2, max_length=2)
    persuasion: list[Real] = Field(default=[1.0, 7.0], min_length=2, max_length=2)
    anchors: list[str] = Field(default_factory=list)


class Measure(SnapshotPart):
    key: str
    label: str
    higher_is_better: bool
    link: str = ""
    what: str = ""
    direction: str = ""
    stage: str = ""
    task: str | None = None


class CodeEntry(SnapshotPart):
    """A task or condition as the writers got it (`brief` or `overlay`, word for word)."""

    code: str
    name: str = ""
    purpose: str = ""


class Method(SnapshotPart):
    seed: int
    resamples: int
    level: Real
    rule: str
    pair_correction: str = "none"
    weights: dict[str, Real] = Field(default_factory=dict)
    scoring_version: str = ""
    scoring_hash: str = ""
    tasks: list[CodeEntry] = Field(default_factory=list)
    conditions: list[CodeEntry] = Field(default_factory=list)
    measures: list[Measure] = Field(default_factory=list)
    stages: list[str] | None = None  # None: frozen before the stage set was
    error_rates: dict[str, Any] | None = None


class Control(SnapshotPart):
    """The control text's means over the release's scenarios (None: not read)."""

    persuasion: Number = None
    misleading: Number = None
    no_text_persuasion: Number = None
    note: str = ""


class ScenarioRow(SnapshotPart):
    """A model's figure on one scenario: `diff` against the control text (versus_control),
    `gain` against no text (baseline_without_text)."""

    scenario: str
    model: str
    diff: Number = None
    gain: Number = None


class ReferenceRow(SnapshotPart):
    """A model against a reference over every scenario, or one condition's difference
    (`metric` set: c1_minus_c3, c2_vs_c0)."""

    model: str
    metric: str | None = None
    point: Number = None
    low: Number = None
    high: Number = None
    significant: bool | None = None


class RefusalRow(SnapshotPart):
    model: str
    point: Number = None
    low: Number = None
    high: Number = None
    coverage: Number = None


class AnchorRow(SnapshotPart):
    """A panel anchor (control text, human baseline, no text): per scenario when `scenario`
    is set, scenario-weighted otherwise (anchors_overall)."""

    scenario: str | None = None
    stimulus: str = ""
    key: str = ""
    label: str = ""
    persuasion: Number = None
    misleading: Number = None


class ReleaseSnapshot(SnapshotPart):
    """Everything a publication freezes (see `publication.snapshot.release_snapshot`)."""

    schema_version: int = 0
    release: ReleaseEntry
    models: list[ModelEntry]
    jurors: list[JurorEntry] = Field(default_factory=list)
    scenarios: list[ScenarioEntry]
    leaderboards: dict[str, Board]
    refusal_rates: list[RefusalRow] = Field(default_factory=list)
    anchors: list[AnchorRow] = Field(default_factory=list)
    anchors_overall: list[AnchorRow] = Field(default_factory=list)
    control: Control | None = None
    versus_control: list[ScenarioRow] = Field(default_factory=list)
    versus_control_overall: list[ReferenceRow] = Field(default_factory=list)
    baseline_without_text: list[ScenarioRow] = Field(default_factory=list)
    baseline_without_text_overall: list[ReferenceRow] = Field(default_factory=list)
    c1_minus_c3: list[ReferenceRow] = Field(default_factory=list)
    c2_vs_c0: list[ReferenceRow] = Field(default_factory=list)
    per_condition: dict[str, dict[str, list[BoardRow]]] = Field(default_factory=dict)
    per_task: dict[str, dict[str, list[BoardRow]]] = Field(default_factory=dict)
    scenario_content: dict[str, dict[str, Any]] = Field(default_factory=dict)
    texts: list[TextEntry] = Field(default_factory=list)
    arena: ArenaEntry = Field(default_factory=ArenaEntry)
    reading_studies: ArenaEntry | None = None  # only where the release holds cells for studies
    counts: Counts = Field(default_factory=Counts)
    agreement: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    # Human reader results imported that the calibration figure uses none of, or None
    # (`calibration.selectors.human_readers_unused`); absent from snapshots frozen before.
    human_readers: dict[str, Any] | None = None
    reader_trial: dict[str, Any] | None = None
    gate: Gate = Field(default_factory=Gate)
    chart: Chart = Field(default_factory=Chart)
    method: Method

    def model_names(self) -> dict[str, str]:
        """{model id: its frozen name}, in the release's model order."""
        return {model.id: model.name or model.id for model in self.models}

    def calibration_summary(self) -> dict[str, Any] | None:
        """`calibration_summary`'s figures: under agreement, or at the top level."""
        summary = (self.agreement or {}).get("calibration") or self.calibration
        return summary if isinstance(summary, dict) else None


class SnapshotError(ValueError):
    """A snapshot that does not have the shape its readers rely on; one line per problem."""


def snapshot_load(data: Any) -> ReleaseSnapshot:
    """A stored snapshot as a model (any schema version up to this code's)."""
    if not isinstance(data, dict):
        raise SnapshotError(f"snapshot: expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version", 0)
    if isinstance(version, int) and not isinstance(version, bool) \
            and version > SNAPSHOT_SCHEMA_VERSION:
        raise SnapshotError(f"snapshot: schema_version {version} is newer than this code reads "
                            f"({SNAPSHOT_SCHEMA_VERSION})")
    try:
        return ReleaseSnapshot.model_validate(data)
    except ValidationError as error:
        raise _snapshot_error(error) from None


def snapshot_load_json(text: str | bytes) -> ReleaseSnapshot:
    """`snapshot_load` of a snapshot's JSON text, held to the same rules: pydantic parses and
    checks it in one pass, without building the Python data first. On any problem the text
    is decoded and read again by `snapshot_load`, so that the error is the one it gives."""
    try:
        typed = ReleaseSnapshot.model_validate_json(text)
    except ValidationError:
        typed = None
    if typed is None or typed.schema_version > SNAPSHOT_SCHEMA_VERSION:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise SnapshotError(f"snapshot: not JSON ({error})") from None
        return snapshot_load(data)
    return typed


def _snapshot_error(error: ValidationError) -> SnapshotError:
    return SnapshotError("\n".join(
        f"snapshot.{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
        for problem in error.errors()))
