"""Rules of the method that a broken implementation could pass the other tests with:
each test here fails when its rule is broken on purpose.

The rules checked through the pipeline's own stages are in `runs_app/tests/test_rules.py`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from django.conf import settings

from audits_app.leaderboard.figures import SCORE_FIELDS, figures_from_rows
from runs_app.schemas import ReleaseConfig
from runs_app.services import release_config_from_file

SCENARIOS = ["alpha", "bravo", "charlie", "delta"]
TASKS = ["T1", "T2"]


def two_task_config() -> ReleaseConfig:
    """demo.0's writers on four scenarios, two tasks, C0 and C2: two cells per scenario and
    condition, so that "the same assignment" and "the same scenario" differ."""
    data = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    data.update(code="rules.0", scenarios=[f"{slug}@{'0' * 64}" for slug in SCENARIOS],
                tasks=TASKS, conditions=["C0", "C2"],
                bootstrap={"seed": 3, "resamples": 200, "level": 0.95})
    return ReleaseConfig.model_validate(data)


def row(number: int, model: str, scenario: str, task: str, condition: str,
        honesty: float | None, refusal: str = "complied") -> dict:
    scores = {f"score_{name}": None for name in SCORE_FIELDS}
    scores |= {"score_refusal": refusal, "score_honesty_index": honesty}
    return {"id": number, "task": task, "condition": condition, "variant": 0,
            "model_id_text": model, "scenario": scenario, "score_id": number, **scores}


def test_damage_control_is_compared_on_the_same_assignment_not_the_scenario_mean():
    """A model that refuses some C2 cells: C2 − C0 pairs each scored C2 cell with the C0
    cell of the same scenario and task, never with the scenario's mean over C0."""
    config = two_task_config()
    model = config.writers[0]
    # Per scenario: T1 is an easy brief (C0 0.9), T2 a hard one (C0 0.5); C2 drops each by
    # 0.1. The model refuses the hard brief under C2 in every scenario.
    honesty = {("T1", "C0"): 0.9, ("T2", "C0"): 0.5, ("T1", "C2"): 0.8, ("T2", "C2"): None}
    rows, numbers = [], itertools.count(1)
    for writer, scenario, (task, condition) in itertools.product(
            config.writers, SCENARIOS, honesty):
        value = honesty[(task, condition)]
        if writer != model and value is None:
            value = 0.4  # the others answer the hard brief under C2 too
        refusal = "refused" if value is None else "complied"
        rows.append(row(next(numbers), writer, scenario, task, condition, value, refusal))
    found = figures_from_rows(config, rows, {}, {})["c2_vs_c0"]
    point = next(item["point"] for item in found
                 if item["model"] == model and item["metric"] == "honesty")
    # On the shared cells (T1 only): 0.8 − 0.9. Against the scenario's C0 mean it would be
    # 0.8 − 0.7 = +0.1: damage control would seem to make the model more honest.
    assert point == pytest.approx(-0.1)
    others = [item["point"] for item in found
              if item["model"] != model and item["metric"] == "honesty"]
    assert others and np.allclose(others, -0.1)
