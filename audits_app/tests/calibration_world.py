"""A release read by the simulated public and by people, for the calibration tests: each text
read by two simulated positions and two people (seeded answers), and published."""

from __future__ import annotations

import numpy as np

from audits_app.calibration.readers_import import human_readers_import
from audits_app.publication.snapshot import release_snapshot
from audits_app.tests.factories import publication_create
from runs_app.models import (
    Generation,
    ReaderResponse,
    Release,
    ReleaseStatus,
    ReplyOutcome,
    Stimulus,
    WorkStatus,
)
from runs_app.stages import get_stage
from runs_app.stages.base import drain


def _answers(rng: np.random.Generator, lean: int) -> tuple[list[int], list[int | None]]:
    attitude = [int(np.clip(lean + rng.integers(-1, 2), 1, 7)) for _ in range(3)]
    knowledge = [int(rng.integers(0, 4)) if rng.random() < 0.7 else None for _ in range(4)]
    return attitude, knowledge


def calibrated_create(small_demo_release: Release) -> tuple[Release, list[Generation]]:
    """Every text read by two simulated positions and by two people, with seeded answers
    whose model orderings mostly, not wholly, agree."""
    release = small_demo_release
    drain(get_stage("generate"), release)
    rng = np.random.default_rng(7)
    # In the order of their cells (text ids are planned in a random order).
    generations = list(Generation.objects.filter(release=release).select_related(
        "model", "scenario_version__scenario").order_by(
        "model__openrouter_id", "scenario_version__scenario__slug", "task", "condition",
        "variant"))
    writers = release.parsed_config().writers
    lines = ["scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4"]
    for generation in generations:
        lean = 2 + writers.index(generation.model.openrouter_id)
        for position in ("P01", "P02"):
            attitude, knowledge = _answers(rng, lean)
            ReaderResponse.objects.create(
                release=release, scenario_version=generation.scenario_version,
                stimulus=Stimulus.GENERATION, stimulus_key=str(generation.pk),
                generation=generation, position=position, status=WorkStatus.DONE,
                outcome=ReplyOutcome.SCORED, attitude=attitude, knowledge=knowledge)
        for reader in ("r1", "r2"):
            attitude, knowledge = _answers(rng, lean + int(rng.integers(-1, 2)))
            cells = [str(v) for v in attitude] + ["dk" if k is None else str(k)
                                                   for k in knowledge]
            lines.append(f"{generation.scenario_version.scenario.slug},{generation.pk},"
                         f"{reader},{','.join(cells)}")
    result = human_readers_import(release=release, csv_text="\n".join(lines) + "\n")
    assert result.ok, result.problems
    return release, generations


def publish(release: Release) -> dict:
    snapshot = release_snapshot(release)
    publication_create(release=release, snapshot=snapshot)
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.PUBLISHED)
    return snapshot
