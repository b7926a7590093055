"""The method's simulated error rates (DESIGN section 6) against a brute-force simulation of
the same shape: the same seeded data sets, decided pair by pair and resample by resample with
scipy's t quantile, sharing no arithmetic with the module under test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.test import Client
from scipy import stats as scipy_stats

from audits_app import statistics
from audits_app.statistics.error_rates import error_rates
from audits_app.tests.factories import publication_create, published_release_create
from runs_app.models import Release, ReleaseStatus

LEVEL = 0.95


def brute_force(observed: np.ndarray, counts: np.ndarray, eligible: np.ndarray, seed: int,
                data_sets: int) -> dict[str, float]:
    """The four figures by loops: the recipe in the module's docstring, written out."""
    models, scenarios, cells = observed.shape
    rng = np.random.default_rng(seed)
    per_scenario = rng.standard_normal((data_sets, models, scenarios))
    per_text = rng.standard_normal((data_sets, models, scenarios, cells))
    sd = math.sqrt(1 + 1 / cells)
    shifted = int(np.flatnonzero(eligible)[0])
    ranked = [m for m in range(models) if eligible[m]]
    pairs = [(i, j) for i in ranked for j in ranked if i < j]
    false = any_false = below_first = found = 0
    for r in range(data_sets):
        null = np.full(observed.shape, np.nan)
        for m in range(models):
            for s in range(scenarios):
                for k in range(cells):
                    if observed[m, s, k]:
                        null[m, s, k] = per_scenario[r, m, s] + per_text[r, m, s, k]
        alternative = null.copy()
        alternative[shifted] += sd
        verdicts = {pair: loop_decision(null, *pair, counts) for pair in pairs}
        false += sum(different for different, _ in verdicts.values())
        any_false += any(different for different, _ in verdicts.values())
        beaten = set()
        for (i, j), (different, diff) in verdicts.items():
            if different:
                beaten.add(j if diff > 0 else i)
        below_first += len(beaten)
        for j in ranked:
            if j != shifted:
                pair = (min(shifted, j), max(shifted, j))
                different, diff = loop_decision(alternative, *pair, counts)
                favour = diff > 0 if pair[0] == shifted else diff < 0
                found += different and favour
    return {"false_difference_per_pair": false / (data_sets * len(pairs)),
            "any_false_difference": any_false / data_sets,
            "expected_below_first": below_first / data_sets,
            "power": found / (data_sets * (len(ranked) - 1))}


def loop_decision(scores: np.ndarray, i: int, j: int, counts: np.ndarray) -> tuple[bool, float]:
    """Is i - j on their shared cells declared different, by the expanded t interval?"""
    means, present = [], []
    for s in range(scores.shape[1]):
        shared = [scores[i, s, k] - scores[j, s, k] for k in range(scores.shape[2])
                  if not np.isnan(scores[i, s, k]) and not np.isnan(scores[j, s, k])]
        means.append(sum(shared) / len(shared) if shared else 0.0)
        present.append(bool(shared))
    n = sum(present)
    point = sum(m for m, p in zip(means, present, strict=True) if p) / n
    resampled = []
    for row in counts:
        weight = sum(c for c, p in zip(row, present, strict=True) if p)
        if weight:
            resampled.append(sum(c * m for c, m, p in zip(row, means, present, strict=True)
                                 if p) / weight)
    spread = float(np.std(resampled, ddof=1))
    half = scipy_stats.t.ppf((1 + LEVEL) / 2, n - 1) * math.sqrt(n / (n - 1)) * spread
    return abs(point) > half, point


@pytest.mark.parametrize("seed", [5, 17])
def test_the_published_table_is_the_brute_force_simulation_of_the_same_shape(seed: int) -> None:
    observed = np.ones((4, 4, 3), dtype=bool)
    observed[2, 1, :] = False  # a model missing a scenario's cells keeps them missing
    observed[3, :, :] = False
    observed[3, 0, :] = True  # one scenario only: below the minimum, never ranked
    eligible = np.array([True, True, True, False])
    counts = statistics.resample_counts(4, 150, seed)
    rates = error_rates(observed, counts, LEVEL, "paired", eligible, seed=seed, data_sets=25)
    expected = brute_force(observed, counts, eligible, seed, 25)
    for name, value in expected.items():
        assert getattr(rates, name) == pytest.approx(value, abs=1e-12), name
    assert (rates.models, rates.scenarios, rates.cells, rates.data_sets) == (3, 4, 3, 25)


def test_equal_models_share_the_nominal_level_per_pair_but_not_per_leaderboard() -> None:
    """Ten equal models at eight scenarios: about 5 % per pair, most data sets show one."""
    observed = np.ones((10, 8, 4), dtype=bool)
    counts = statistics.resample_counts(8, 1000, 2)
    rates = error_rates(observed, counts, LEVEL, "paired", np.ones(10, dtype=bool), seed=3)
    assert 0.035 < rates.false_difference_per_pair < 0.065
    assert rates.any_false_difference > 0.5
    assert rates.expected_below_first > 1
    assert 0.2 < rates.power < 0.7


def test_the_classes_rule_is_simulated_by_its_own_rule() -> None:
    observed = np.ones((3, 5, 2), dtype=bool)
    counts = statistics.resample_counts(5, 200, 4)
    eligible = np.ones(3, dtype=bool)
    classes = error_rates(observed, counts, LEVEL, "classes", eligible, seed=1, data_sets=40)
    paired = error_rates(observed, counts, LEVEL, "paired", eligible, seed=1, data_sets=40)
    assert classes.rule == "classes" and paired.rule == "paired"
    assert classes.as_dict() != paired.as_dict()
    assert 0 <= classes.false_difference_per_pair <= 1 and 0 <= classes.power <= 1


def test_the_same_seed_gives_the_same_table_and_another_seed_another() -> None:
    observed = np.ones((4, 6, 2), dtype=bool)
    counts = statistics.resample_counts(6, 200, 1)
    eligible = np.ones(4, dtype=bool)
    first = error_rates(observed, counts, LEVEL, "paired", eligible, seed=9, data_sets=50)
    assert error_rates(observed, counts, LEVEL, "paired", eligible, seed=9,
                       data_sets=50) == first
    assert error_rates(observed, counts, LEVEL, "paired", eligible, seed=10,
                       data_sets=50) != first


def test_bad_shapes_are_refused() -> None:
    counts = statistics.resample_counts(3, 100, 1)
    with pytest.raises(ValueError, match="observed must be"):
        error_rates(np.ones((3, 3), dtype=bool), counts, LEVEL, "paired", np.ones(3), seed=1)
    with pytest.raises(ValueError, match="one entry per model"):
        error_rates(np.ones((3, 3, 2), dtype=bool), counts, LEVEL, "paired", np.ones(2), seed=1)
    with pytest.raises(ValueError, match="unknown ranking rule"):
        error_rates(np.ones((3, 3, 2), dtype=bool), counts, LEVEL, "best", np.ones(3), seed=1)


@pytest.mark.django_db
def test_the_methods_section_shows_the_release_s_table_or_an_old_snapshot_s_fixed_one() -> None:
    world = published_release_create(code="err.0")
    page = Client().get("/releases/err.0/").content.decode()
    assert "error rates at this release" in page and 'id="error-rates"' in page
    assert "23.1 %" in page or "23.1%" in page  # any_false_difference of the snapshot
    assert 'id="small-sample"' not in page
    old = published_release_create(code="old.0", publish=False)
    method = old.snapshot["method"]
    del method["error_rates"]
    method["small_sample"] = {"source": "bench/coverage.py", "reference": "Hesterberg (2015)",
                              "nominal": 0.05, "scenarios": [6, 8],
                              "false_positive_expanded_t": [0.049, 0.052],
                              "false_positive_percentile": [0.138, 0.116],
                              "power_ratio_to_t_test": [1.0, 1.0]}
    publication_create(release=old.release, snapshot=old.snapshot)
    Release.objects.filter(pk=old.release.pk).update(status=ReleaseStatus.PUBLISHED)
    page = Client().get("/releases/old.0/").content.decode()
    assert 'id="small-sample"' in page and 'id="error-rates"' not in page
    assert world.release.code == "err.0"
