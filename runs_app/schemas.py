"""A release's configuration (DESIGN sections 1, 6): loaded from `releases/CODE.yaml` or the
admin, frozen when the first run starts. The stored form pins scenario versions by hash."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TASK_CODES = ("T1", "T2", "T3", "T4")
CONDITION_CODES = ("C0", "C1", "C2", "C3")
# The chain in order (DESIGN section 5); a release runs the stages its file names.
STAGE_NAMES = ("generate", "refusal", "jury", "panel", "uptake", "reveal", "crossexam")
StageName = Literal["generate", "refusal", "jury", "panel", "uptake", "reveal", "crossexam"]
# A stage needs these stages of the same release: it reads what they wrote.
STAGE_NEEDS: dict[str, tuple[str, ...]] = {
    "generate": (),
    "refusal": ("generate",),
    "jury": ("refusal",),
    "panel": ("refusal",),
    "uptake": ("refusal",),
    "reveal": ("jury", "panel"),
    "crossexam": ("refusal",),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSpec(_Strict):
    id: Annotated[str, Field(min_length=3, pattern=r"^[\w.\-:]+/[\w.\-:@]+$")]
    family: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]


class Weights(_Strict):
    """Honesty index weights (DESIGN section 2): v1 0.5 / 0.3 / 0.2."""

    claims: float = 0.5
    omission: float = 0.3
    knowledge_harm: float = 0.2

    @model_validator(mode="after")
    def _sum_to_one(self) -> Weights:
        total = self.claims + self.omission + self.knowledge_harm
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"weights must sum to 1, not {total:g}")
        return self


class Bootstrap(_Strict):
    seed: int = 20261129
    resamples: Annotated[int, Field(ge=100, le=100_000)] = 2000
    level: Annotated[float, Field(gt=0.5, lt=1.0)] = 0.95


class Gate(_Strict):
    """Minimum human spot-check coverage and agreement before publishing (DESIGN section 8)."""

    min_coverage: Annotated[float, Field(ge=0, le=1)] = 0.0
    min_agreement: Annotated[float, Field(ge=-1, le=1)] = 0.0


class ReleaseConfig(_Strict):
    code: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$", max_length=50)]
    language: Literal["en", "nl"]
    title: str = ""
    models: list[ModelSpec]
    writers: Annotated[list[str], Field(min_length=1)]
    jurors: Annotated[list[str], Field(min_length=3)]
    jury_size: Literal[3] = 3
    reader: str
    # The journalist agent: needed by uptake and the cross-examination only.
    journalist: str | None = None
    # The stages this release runs, in chain order; the default is the whole chain.
    stages: Annotated[list[StageName], Field(min_length=1)] = list(STAGE_NAMES)
    panel: str = "v1"
    # slug, or slug@content-hash once pinned; the stored config always has the hash.
    scenarios: Annotated[list[str], Field(min_length=1)]
    tasks: Annotated[list[Literal["T1", "T2", "T3", "T4"]], Field(min_length=1)]
    conditions: Annotated[list[Literal["C0", "C1", "C2", "C3"]], Field(min_length=1)]
    variants: Annotated[int, Field(ge=1, le=20)] = 1
    # Versions of the task briefs and condition overlays, pinned with the release.
    task_version: Annotated[int, Field(ge=1)] = 1
    condition_version: Annotated[int, Field(ge=1)] = 1
    text_budget: Annotated[int, Field(ge=100, le=8000)] = 1200
    reasoning_budget: Annotated[int, Field(ge=0)] = 16_000
    max_attempts: Annotated[int, Field(ge=1, le=10)] = 3
    max_reply_attempts: Annotated[int, Field(ge=1, le=10)] = 3
    weights: Weights = Weights()
    # The scoring version (runs_app/scoring/NAME.yaml): a name in a release file, pinned as
    # name@content-hash when the release is created; None only in configurations stored
    # before scoring versions existed (they resolve to v1, `scoring_versions.LEGACY_PIN`).
    scoring_version: Annotated[str | None, Field(pattern=r"^v[0-9]+(@[0-9a-f]{64})?$")] = None
    # The cap belongs to the scoring version. Older files still name it: it must then equal
    # the pinned version's cap (checked when the release is created).
    knowledge_harm_cap: Annotated[int | None, Field(ge=1)] = None
    ranking_rule: Literal["paired", "classes"] = "paired"
    bootstrap: Bootstrap = Bootstrap()
    gate: Gate = Gate()

    @model_validator(mode="before")
    @classmethod
    def _default_stages(cls, data: object) -> object:
        """No `stages:` means the whole chain, less the cross-examination when there is no
        T4 to cross-examine (it would plan nothing)."""
        if isinstance(data, dict) and "stages" not in data:
            tasks = data.get("tasks") or []
            data = {**data, "stages": [name for name in STAGE_NAMES
                                       if name != "crossexam" or "T4" in tasks]}
        return data

    @model_validator(mode="after")
    def _models_are_declared(self) -> ReleaseConfig:
        declared = {spec.id for spec in self.models}
        journalist = [self.journalist] if self.journalist else []
        for role, ids in (("writers", self.writers), ("jurors", self.jurors),
                          ("reader", [self.reader]), ("journalist", journalist)):
            missing = [model_id for model_id in ids if model_id not in declared]
            if missing:
                raise ValueError(f"{role}: {', '.join(missing)} not declared under models")
        if len({spec.family for spec in self.models if spec.id in self.jurors}) < 3:
            raise ValueError("jurors: the pool needs at least three model families")
        return self

    @model_validator(mode="after")
    def _reader_outside_the_writers_families(self) -> ReleaseConfig:
        """The simulated public must not read with a relative of a model under test
        (DESIGN section 2): its family would judge its own family's texts."""
        problem = self.reader_family_problem()
        if problem:
            raise ValueError(problem)
        return self

    def reader_family_problem(self) -> str:
        """Why the reader may not read for these writers ("" when it may): preflight shows
        the rule as a check with the same words."""
        reader_family = self.family_of(self.reader)
        relatives = [writer for writer in self.writers if self.family_of(writer) == reader_family]
        if not relatives:
            return ""
        return (f"reader: {self.reader} belongs to family {reader_family!r}, as writer(s) "
                f"{', '.join(relatives)} do; the reader must come from a family no writer "
                f"belongs to")

    @model_validator(mode="after")
    def _stages_fit_together(self) -> ReleaseConfig:
        stages = list(self.stages)
        if len(set(stages)) != len(stages):
            raise ValueError("stages: a stage is named twice")
        if stages != [name for name in STAGE_NAMES if name in stages]:
            raise ValueError(f"stages: list them in chain order: {', '.join(STAGE_NAMES)}")
        for stage in stages:
            missing = [need for need in STAGE_NEEDS[stage] if need not in stages]
            if missing:
                raise ValueError(f"stages: {stage} needs {', '.join(missing)}")
        # A T4 text is the first answer of its interview: without the cross-examination it
        # measures nothing. (The stage without T4 plans nothing, which does no harm.)
        if "T4" in self.tasks and "crossexam" not in stages:
            raise ValueError("stages: task T4 needs the cross-examination stage (crossexam)")
        if ("uptake" in stages or "crossexam" in stages) and not self.journalist:
            raise ValueError("journalist: uptake and crossexam need a journalist model")
        return self

    @property
    def texts(self) -> int:
        """Cells to write: writers x scenarios x tasks x conditions x variants."""
        return (len(self.writers) * len(self.scenarios) * len(self.tasks)
                * len(self.conditions) * self.variants)

    @property
    def max_tokens(self) -> int:
        """Text budget plus reasoning tokens: writers keep their own reasoning default."""
        return self.text_budget + self.reasoning_budget

    def family_of(self, model_id: str) -> str:
        return next(spec.family for spec in self.models if spec.id == model_id)

    def pinned(self) -> list[tuple[str, str]]:
        """(slug, content hash) pairs; only valid once the config has been pinned."""
        return [tuple(item.split("@", 1)) for item in self.scenarios]  # type: ignore[misc]
