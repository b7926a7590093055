"""The release snapshot as a typed value: what a publication freezes and every page, CSV, API
answer and archive reads (DESIGN sections 6 and 8).

`release_snapshot` builds the snapshot as JSON-safe data and checks it against this model
before it is frozen, so a builder that drifts from what the readers expect fails at
publication, not on a public page. `snapshot_load` reads a stored snapshot back as a model.

Versions. A snapshot carries `schema_version` from version 1 on; one without it was frozen
before this model (version 0) and still loads: every field added since has a default that
says "not measured" (an empty list, None), never a made-up figure. Fields this model does
not name are kept as they are (`extra="allow"`), so a snapshot frozen by a later version of
the code loads here and dumps unchanged. The values are strict: a boolean is never read as a
number, nor a string as a count.

The figures' own shapes (boards, rows, pairs) are typed here; the larger tables that only
one page reads (per condition, per task, agreement, calibration) stay JSON objects whose
reader documents them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SNAPSHOT_SCHEMA_VERSION = 1

Number = float | None


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)


class ReleaseEntry(_Part):
    code: str
    language: str
    title: str = ""
    config: dict[str, Any]
    config_hash: str


class ModelEntry(_Part):
    id: str
    name: str
    family: str = ""


class JurorEntry(ModelEntry):
    key: int | None = None  # the registry row a verdict points to


class ScenarioEntry(_Part):
    slug: str
    title: str
    visibility: str  # public | held_out
    version_hash: str
    organisation: str = ""


class BoardRow(_Part):
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


class PairRow(_Part):
    a: str
    b: str
    diff: Number
    low: Number
    high: Number
    significant: bool


class Board(_Part):
    higher_is_better: bool
    rule: str
    pair_correction: str = "none"
    rows: list[BoardRow]
    pairs: list[PairRow] = Field(default_factory=list)
    sensitivity: list[dict[str, Any]] = Field(default_factory=list)
    label: str = ""
    what: str = ""
    direction: str = ""


class TextEntry(_Part):
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


class ArenaCell(_Part):
    scenario: str
    task: str
    condition: str
    variant: int


class ArenaEntry(_Part):
    cells: list[ArenaCell] = Field(default_factory=list)


class Counts(_Part):
    texts: int = 0
    scored: int = 0
    refused: int = 0
    scenarios: int = 0
    models: int = 0


class Gate(_Part):
    coverage: Number = None
    agreement: Number = None
    min_coverage: Number = None
    min_agreement: Number = None
    passed: bool = False
    reasons: list[str] = Field(default_factory=list)
    override_reason: str = ""


class Chart(_Part):
    honesty: list[float] = Field(default=[0.0, 1.0], min_length=2, max_length=2)
    persuasion: list[float] = Field(default=[1.0, 7.0], min_length=2, max_length=2)
    anchors: list[str] = Field(default_factory=list)


class Measure(_Part):
    key: str
    label: str
    higher_is_better: bool
    stage: str = ""
    task: str | None = None


class Method(_Part):
    seed: int
    resamples: int
    level: float
    rule: str
    pair_correction: str = "none"
    weights: dict[str, float] = Field(default_factory=dict)
    scoring_version: str = ""
    scoring_hash: str = ""
    tasks: list[dict[str, Any]] = Field(default_factory=list)
    conditions: list[dict[str, Any]] = Field(default_factory=list)
    measures: list[Measure] = Field(default_factory=list)
    stages: list[str] = Field(default_factory=list)
    error_rates: dict[str, Any] | None = None


class ReleaseSnapshot(_Part):
    """Everything a publication freezes (see `publication.snapshot.release_snapshot`)."""

    schema_version: int = 0
    release: ReleaseEntry
    models: list[ModelEntry]
    jurors: list[JurorEntry] = Field(default_factory=list)
    scenarios: list[ScenarioEntry]
    leaderboards: dict[str, Board]
    refusal_rates: list[dict[str, Any]] = Field(default_factory=list)
    anchors: list[dict[str, Any]] = Field(default_factory=list)
    anchors_overall: list[dict[str, Any]] = Field(default_factory=list)
    per_condition: dict[str, dict[str, list[BoardRow]]] = Field(default_factory=dict)
    per_task: dict[str, dict[str, list[BoardRow]]] = Field(default_factory=dict)
    scenario_content: dict[str, dict[str, Any]] = Field(default_factory=dict)
    texts: list[TextEntry] = Field(default_factory=list)
    arena: ArenaEntry = Field(default_factory=ArenaEntry)
    reading_studies: ArenaEntry | None = None  # only where the release holds cells for studies
    counts: Counts = Field(default_factory=Counts)
    agreement: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    reader_trial: dict[str, Any] | None = None
    gate: Gate = Field(default_factory=Gate)
    chart: Chart = Field(default_factory=Chart)
    method: Method

    def as_data(self) -> dict[str, Any]:
        """The snapshot as the JSON it was read from: the fields it had, no defaults added."""
        return self.model_dump(mode="json", exclude_unset=True)


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
        raise SnapshotError("\n".join(
            f"snapshot.{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
            for problem in error.errors())) from None
