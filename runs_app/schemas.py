"""A release's configuration (DESIGN sections 1, 6): loaded from `releases/CODE.yaml` or the
admin, frozen when the first run starts. The stored form pins scenario versions by hash."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TASK_CODES = ("T1", "T2", "T3", "T4")
CONDITION_CODES = ("C0", "C1", "C2", "C3")


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
    journalist: str
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

    @model_validator(mode="after")
    def _models_are_declared(self) -> ReleaseConfig:
        declared = {spec.id for spec in self.models}
        for role, ids in (("writers", self.writers), ("jurors", self.jurors),
                          ("reader", [self.reader]), ("journalist", [self.journalist])):
            missing = [model_id for model_id in ids if model_id not in declared]
            if missing:
                raise ValueError(f"{role}: {', '.join(missing)} not declared under models")
        if len({spec.family for spec in self.models if spec.id in self.jurors}) < 3:
            raise ValueError("jurors: the pool needs at least three model families")
        return self

    @property
    def max_tokens(self) -> int:
        """Text budget plus reasoning tokens: writers keep their own reasoning default."""
        return self.text_budget + self.reasoning_budget

    def family_of(self, model_id: str) -> str:
        return next(spec.family for spec in self.models if spec.id == model_id)

    def pinned(self) -> list[tuple[str, str]]:
        """(slug, content hash) pairs; only valid once the config has been pinned."""
        return [tuple(item.split("@", 1)) for item in self.scenarios]  # type: ignore[misc]
