"""Tests for audits_app.statistics against references written from DESIGN.md section 6.

The references below loop over resamples, models, pairs, scenarios and cells, and resample the
literal way (they list the drawn scenarios, repeats included, as separate scenarios). The
additive fit is a weighted least-squares problem solved with np.linalg.lstsq on a design matrix
built cell by cell; intervals take the t quantile from scipy. None of it shares arithmetic with
the module under test, and no expected value is computed with the module itself.
"""

from __future__ import annotations

import math
import statistics as stdlib_statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from audits_app.statistics import (
    UNRANKED,
    Estimates,
    additive,
    cholesky,
    condition_difference,
    expanded_t_multiplier,
    leaderboard,
    model_estimates,
    paired_ranks,
    pairwise,
    rank_classes,
    refusal_rates,
    resample_counts,
    scenario_means,
    student_t_quantile,
    versus_reference,
)
from audits_app.statistics.arrays import blas_controller

LEVEL = 0.9

# ---------------------------------------------------------------------------------------------
# Loop-based references
# ---------------------------------------------------------------------------------------------


def loop_mean(values: list[float]) -> float:
    kept = [value for value in values if not math.isnan(value)]
    return sum(kept) / len(kept) if kept else math.nan


def loop_scenario_means(scores: np.ndarray) -> np.ndarray:
    models, scenarios, cells = scores.shape
    means = np.full((models, scenarios), math.nan)
    for model in range(models):
        for scenario in range(scenarios):
            means[model, scenario] = loop_mean([scores[model, scenario, k] for k in range(cells)])
    return means


def loop_drawn(counts_row: np.ndarray) -> list[int]:
    """The scenarios one resample draws, repeats included."""
    return [s for s in range(len(counts_row)) for _ in range(int(counts_row[s]))]


def loop_interval(point: float, boot: list[float], n: int, level: float) -> tuple[float, float]:
    """point -/+ t(n - 1) * sqrt(n / (n - 1)) * sd of the defined bootstrap values."""
    kept = [value for value in boot if not math.isnan(value)]
    if n < 2 or len(kept) < 2 or math.isnan(point):
        return math.nan, math.nan
    quantile = scipy_stats.t.ppf((1 + level) / 2, n - 1)
    half = quantile * math.sqrt(n / (n - 1)) * stdlib_statistics.stdev(kept)
    return point - half, point + half


def loop_cluster(per_scenario: list[float], counts: np.ndarray, level: float) -> dict:
    """Point, resampled values and interval of the mean over scenarios with a value."""
    point = loop_mean(per_scenario)
    boot = [loop_mean([per_scenario[s] for s in loop_drawn(row)]) for row in counts]
    n = sum(1 for value in per_scenario if not math.isnan(value))
    low, high = loop_interval(point, boot, n, level)
    return {"point": point, "boot": boot, "low": low, "high": high}


def loop_additive_fit(scores: np.ndarray, drawn: list[int]) -> np.ndarray:
    """a[m] of the fit score ~ a[m] + c[copy, k] on the data set made of the drawn scenarios.

    Each drawn copy is its own scenario with its own cells; an observation's weight is 1 / (the
    number of cells of its copy that some model has). Least squares by np.linalg.lstsq on a
    dummy-coded design matrix; then, per group of models linked through shared cells, the cell
    effects are shifted to average zero over the group's cells (DESIGN section 6: the model's
    mean over every cell, scenarios equally weighted).
    """
    models, _, cells = scores.shape
    columns = models + len(drawn) * cells
    rows, targets, cell_weight = [], [], {}
    for copy, s in enumerate(drawn):
        grid = [k for k in range(cells) if any(not math.isnan(scores[m, s, k])
                                                 for m in range(models))]
        for k in grid:
            cell_weight[(copy, k)] = 1 / len(grid)
            for m in range(models):
                if not math.isnan(scores[m, s, k]):
                    row = [0.0] * columns
                    row[m], row[models + copy * cells + k] = 1.0, 1.0
                    root = math.sqrt(cell_weight[(copy, k)])
                    rows.append([value * root for value in row])
                    targets.append(scores[m, s, k] * root)
    fitted = np.full(models, math.nan)
    if not rows:
        return fitted
    with blas_controller().limit(limits=1):  # threads only slow a small least-squares problem down
        solution = np.linalg.lstsq(np.array(rows), np.array(targets), rcond=None)[0]
    effects, cell_effects = list(solution[:models]), {}
    for (copy, k) in cell_weight:
        cell_effects[(copy, k)] = solution[models + copy * cells + k]
    for group, group_cells in loop_groups(scores, drawn):
        total = sum(cell_weight[cell] for cell in group_cells)
        shift = sum(cell_weight[cell] * cell_effects[cell] for cell in group_cells) / total
        for m in group:
            fitted[m] = effects[m] + shift
    return fitted


def loop_groups(scores: np.ndarray, drawn: list[int]) -> list[tuple[set[int], set]]:
    """Models linked through shared (copy, cell)s, by breadth-first search, with their cells."""
    models, _, cells = scores.shape
    cells_of = {m: {(copy, k) for copy, s in enumerate(drawn) for k in range(cells)
                    if not math.isnan(scores[m, s, k])} for m in range(models)}
    unseen, groups = {m for m in range(models) if cells_of[m]}, []
    while unseen:
        frontier, group = [min(unseen)], set()
        while frontier:
            m = frontier.pop()
            if m in group:
                continue
            group.add(m)
            frontier += [o for o in unseen if cells_of[o] & cells_of[m] and o not in group]
        unseen -= group
        groups.append((group, set().union(*(cells_of[m] for m in group))))
    return groups


def loop_model_estimates(scores: np.ndarray, counts: np.ndarray, level: float) -> dict:
    """Point, absolute and comparison intervals per model from the loop fit (DESIGN section 6)."""
    models, scenarios, _ = scores.shape
    point = loop_additive_fit(scores, list(range(scenarios)))
    boot = [loop_additive_fit(scores, loop_drawn(row)) for row in counts]
    n = [sum(1 for s in range(scenarios) if not np.isnan(scores[m, s]).all())
         for m in range(models)]
    with_data = [m for m in range(models) if not math.isnan(point[m])]
    result = {name: np.full(models, math.nan)
              for name in ("point", "low", "high", "cmp_low", "cmp_high")}
    for m in range(models):
        result["point"][m] = point[m]
        values = [fit[m] for fit in boot]
        result["low"][m], result["high"][m] = loop_interval(point[m], values, n[m], level)
        if len(with_data) < 2 or m not in with_data:
            continue
        # Morey: deviation from the mean of the models with a value in the same resample.
        deviation = point[m] - sum(point[o] for o in with_data) / len(with_data)
        deviations = []
        for fit in boot:
            present = [fit[o] for o in range(models) if not math.isnan(fit[o])]
            deviations.append(fit[m] - sum(present) / len(present) if present else math.nan)
        low, high = loop_interval(deviation, deviations, n[m], level)
        factor = math.sqrt(len(with_data) / (len(with_data) - 1))
        result["cmp_low"][m] = point[m] - factor * (deviation - low)
        result["cmp_high"][m] = point[m] + factor * (high - deviation)
    return result


def loop_pairwise(scores: np.ndarray, counts: np.ndarray, level: float) -> dict:
    models, scenarios, cells = scores.shape
    result = {name: np.full((models, models), math.nan) for name in ("diff", "low", "high")}
    for i in range(models):
        for j in range(models):
            per_scenario = []
            for s in range(scenarios):
                shared = [
                    scores[i, s, k] - scores[j, s, k]
                    for k in range(cells)
                    if not math.isnan(scores[i, s, k]) and not math.isnan(scores[j, s, k])
                ]
                per_scenario.append(sum(shared) / len(shared) if shared else math.nan)
            found = loop_cluster(per_scenario, counts, level)
            result["diff"][i, j] = found["point"]
            result["low"][i, j], result["high"][i, j] = found["low"], found["high"]
            if i == j:  # a model against itself: 0, with no spread, wherever it has data
                result["low"][i, j] = result["high"][i, j] = found["point"]
    result["significant"] = (result["low"] > 0) | (result["high"] < 0)
    return result


def loop_paired_ranks(reference: dict) -> list[int]:
    models = len(reference["diff"])
    ranks = []
    for i in range(models):
        if math.isnan(reference["diff"][i, i]):
            ranks.append(UNRANKED)
            continue
        better = sum(1 for j in range(models)
                     if reference["significant"][i, j] and reference["diff"][i, j] < 0)
        ranks.append(1 + better)
    return ranks


def loop_classes(point, low, high, higher_is_better: bool = True) -> list[int]:
    """The pilot.0 class rule written out: walk the table from the best point down."""
    models = range(len(point))
    ranked = sorted((m for m in models if not math.isnan(point[m])),
                    key=lambda m: -point[m] if higher_is_better else point[m])
    classes, leader, current = [UNRANKED] * len(point), None, 1
    for m in ranked:
        if not (math.isnan(low[m]) or math.isnan(high[m])):
            if leader is None:
                leader = m
            elif max(low[leader], low[m]) > min(high[leader], high[m]):  # apart: a new class
                current, leader = current + 1, m
        classes[m] = current
    return classes


# ---------------------------------------------------------------------------------------------
# Shared data
# ---------------------------------------------------------------------------------------------


def sparse_scores(seed: int = 7) -> np.ndarray:
    """4 models x 6 scenarios x 3 cells with holes, a nearly absent model and sparse pairs."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(4, 6, 3)) + np.array([0.0, 0.5, 1.0, 1.5])[:, None, None]
    scores[rng.random(scores.shape) < 0.15] = np.nan
    scores[1, 2, :] = np.nan  # model 1 skips a whole scenario
    scores[3, 2:, :] = np.nan  # model 3 has data in two scenarios only ...
    scores[3, 0, :] = [0.2, np.nan, 1.1]
    scores[3, 1, :] = [np.nan, 2.0, np.nan]
    scores[2, 1, 1] = np.nan  # ... and shares a single cell in one scenario with model 2
    return scores


@pytest.fixture
def scores() -> np.ndarray:
    return sparse_scores()


@pytest.fixture
def counts() -> np.ndarray:
    return resample_counts(6, 200, seed=11)


def release_like(seed: int, models: int = 6, scenarios: int = 8) -> np.ndarray:
    """Honesty-like scores: 3 tasks x 4 conditions, C2 (cells 2, 6, 10) the hardest."""
    rng = np.random.default_rng(seed)
    effects = np.linspace(-0.2, 0.2, models)[:, None, None]
    conditions = np.tile([0.0, 0.02, -0.15, 0.03], 3)[None, None, :]
    return (0.6 + effects + conditions + rng.normal(0, 0.08, (1, scenarios, 1))
            + rng.normal(0, 0.02, (models, scenarios, 1)) + rng.normal(0, 0.04, (models, scenarios,
                                                                                  12)))


C2_CELLS = [2, 6, 10]


# ---------------------------------------------------------------------------------------------
# Resampling
# ---------------------------------------------------------------------------------------------


def test_same_seed_gives_identical_counts() -> None:
    np.testing.assert_array_equal(resample_counts(30, 500, 3), resample_counts(30, 500, 3))


def test_different_seed_gives_different_counts() -> None:
    assert not np.array_equal(resample_counts(30, 500, 3), resample_counts(30, 500, 4))


def test_counts_draw_every_scenario_count_with_replacement() -> None:
    counts = resample_counts(30, 500, 3)
    assert counts.dtype == np.int32
    assert counts.shape == (500, 30)
    np.testing.assert_array_equal(counts.sum(axis=1), 30)
    assert counts.max() > 1  # with replacement: some scenario is drawn twice


def test_same_seed_gives_identical_leaderboard(scores: np.ndarray) -> None:
    first = leaderboard(scores, resample_counts(6, 200, 5), LEVEL)
    second = leaderboard(scores, resample_counts(6, 200, 5), LEVEL)
    np.testing.assert_array_equal(first.pairwise.low, second.pairwise.low)
    np.testing.assert_array_equal(first.estimates.cmp_high, second.estimates.cmp_high)
    np.testing.assert_array_equal(first.ranks, second.ranks)


# ---------------------------------------------------------------------------------------------
# The module against the references
# ---------------------------------------------------------------------------------------------


def test_scenario_means_match_loops(scores: np.ndarray) -> None:
    means, present = scenario_means(scores)
    np.testing.assert_allclose(means, loop_scenario_means(scores))
    np.testing.assert_array_equal(present, ~np.isnan(loop_scenario_means(scores)))


def test_sparse_model_has_resamples_without_data(scores: np.ndarray, counts: np.ndarray) -> None:
    # Guards the data set: resamples without a model's scenarios must be exercised below.
    boot = loop_cluster(list(loop_scenario_means(scores)[3]), counts, LEVEL)["boot"]
    assert 0 < sum(math.isnan(value) for value in boot) < len(boot)


def test_model_estimates_match_the_least_squares_reference(
    scores: np.ndarray, counts: np.ndarray
) -> None:
    estimates = model_estimates(scores, counts[:60], LEVEL)
    reference = loop_model_estimates(scores, counts[:60], LEVEL)
    np.testing.assert_allclose(estimates.point, reference["point"], atol=1e-10)
    np.testing.assert_allclose(estimates.abs_low, reference["low"], atol=1e-10)
    np.testing.assert_allclose(estimates.abs_high, reference["high"], atol=1e-10)
    np.testing.assert_allclose(estimates.cmp_low, reference["cmp_low"], atol=1e-10)
    np.testing.assert_allclose(estimates.cmp_high, reference["cmp_high"], atol=1e-10)


def test_a_system_cholesky_refuses_is_solved_whole_by_lu(
    scores: np.ndarray, counts: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every linked system goes to Cholesky; should one not be positive definite (rounding on a
    # nearly singular fit) its answer comes from the whole system by LU, not from NaN.
    expected = model_estimates(scores, counts[:60], LEVEL)
    solve = additive.solve_upper
    refused = []

    def refuse_every_third(system, right):
        solutions, failed = solve(system, right)
        every_third = np.arange(len(right)) % 3 == 0
        refused.append(int(every_third.sum()))
        solutions[every_third] = np.nan
        return solutions, failed | every_third

    monkeypatch.setattr(additive, "solve_upper", refuse_every_third)
    estimates = model_estimates(scores, counts[:60], LEVEL)
    assert sum(refused) > 10
    np.testing.assert_allclose(estimates.abs_low, expected.abs_low, atol=1e-10)
    np.testing.assert_allclose(estimates.cmp_high, expected.cmp_high, atol=1e-10)


def test_cholesky_solves_match_lu_and_name_a_system_that_is_not_positive_definite() -> None:
    rng = np.random.default_rng(7)
    factors = rng.normal(size=(5, 30, 30))
    systems = factors @ factors.transpose(0, 2, 1) + 30 * np.eye(30)
    systems[3] = -np.eye(30)  # not positive definite
    right = rng.normal(size=(5, 30))
    upper = np.triu(systems) + np.tril(np.full((30, 30), np.nan), -1)  # lower never read
    solutions, failed = cholesky.solve_upper(upper, right)
    assert failed.tolist() == [False, False, False, True, False]
    assert np.isnan(solutions[3]).all()
    keep = ~failed
    np.testing.assert_allclose(
        solutions[keep], np.linalg.solve(systems[keep], right[keep][:, :, None])[:, :, 0],
        rtol=0, atol=1e-12)


def test_pairwise_matches_loops(scores: np.ndarray, counts: np.ndarray) -> None:
    pairs = pairwise(scores, counts, LEVEL)
    reference = loop_pairwise(scores, counts, LEVEL)
    np.testing.assert_allclose(pairs.diff, reference["diff"], atol=1e-12)
    np.testing.assert_allclose(pairs.low, reference["low"], atol=1e-12)
    np.testing.assert_allclose(pairs.high, reference["high"], atol=1e-12)
    np.testing.assert_array_equal(pairs.significant, reference["significant"])


def test_percentile_method_is_the_plain_percentile_interval(
    scores: np.ndarray, counts: np.ndarray
) -> None:
    pairs = pairwise(scores, counts, LEVEL, method="percentile")
    for i, j in [(0, 1), (0, 3), (2, 1)]:
        per_scenario = [loop_mean(list(scores[i, s] - scores[j, s])) for s in range(6)]
        boot = [v for v in loop_cluster(per_scenario, counts, LEVEL)["boot"] if not math.isnan(v)]
        expected = np.percentile(boot, [50 * (1 - LEVEL), 50 * (1 + LEVEL)])
        np.testing.assert_allclose([pairs.low[i, j], pairs.high[i, j]], expected, atol=1e-12)


def test_expanded_percentile_method_widens_the_percentiles_as_hesterberg_does(
    scores: np.ndarray, counts: np.ndarray
) -> None:
    pairs = pairwise(scores, counts, LEVEL, method="expanded_percentile")
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        per_scenario = [loop_mean(list(scores[i, s] - scores[j, s])) for s in range(6)]
        n = sum(1 for value in per_scenario if not math.isnan(value))
        # ExpandProbs: the probability whose normal quantile is t(n - 1) * sqrt(n / (n - 1)).
        widened = scipy_stats.t.ppf((1 - LEVEL) / 2, n - 1) * math.sqrt(n / (n - 1))
        tail = scipy_stats.norm.cdf(widened)
        boot = [v for v in loop_cluster(per_scenario, counts, LEVEL)["boot"] if not math.isnan(v)]
        expected = np.percentile(boot, [100 * tail, 100 * (1 - tail)])
        np.testing.assert_allclose([pairs.low[i, j], pairs.high[i, j]], expected, atol=1e-12)


def test_paired_ranks_match_loops(scores: np.ndarray, counts: np.ndarray) -> None:
    ranks = paired_ranks(pairwise(scores, counts, LEVEL))
    np.testing.assert_array_equal(ranks, loop_paired_ranks(loop_pairwise(scores, counts, LEVEL)))


@settings(max_examples=20, deadline=None)
@given(
    models=st.integers(2, 4),
    scenarios=st.integers(1, 5),
    cells=st.integers(1, 3),
    missing=st.floats(0.0, 0.6),
    seed=st.integers(0, 2**16),
)
def test_random_inputs_match_the_references(
    models: int, scenarios: int, cells: int, missing: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(models, scenarios, cells))
    scores[rng.random(scores.shape) < missing] = np.nan
    counts = resample_counts(scenarios, 25, seed)
    pairs = pairwise(scores, counts, LEVEL)
    reference = loop_pairwise(scores, counts, LEVEL)
    for name in ("diff", "low", "high"):
        np.testing.assert_allclose(getattr(pairs, name), reference[name], atol=1e-10)
    estimates = model_estimates(scores, counts, LEVEL)
    expected = loop_model_estimates(scores, counts, LEVEL)
    for name, key in (("point", "point"), ("abs_low", "low"), ("abs_high", "high"),
                      ("cmp_low", "cmp_low"), ("cmp_high", "cmp_high")):
        np.testing.assert_allclose(getattr(estimates, name), expected[key], atol=1e-9)


def test_models_that_never_share_a_cell_are_not_fitted_as_one_group() -> None:
    """Each model alone in its cell: the hub's diagonal of L comes out of the BLAS product as
    -1e-16, not 0, and once counted as a link, which fitted both models to one value
    (found by the random test above on CI: seed 3, 2 models, 1 scenario, 2 cells)."""
    scores = np.array([[[np.nan, -2.55566503]], [[0.41809885, np.nan]]])
    counts = resample_counts(1, 25, 3)
    estimates = model_estimates(scores, counts, LEVEL)
    expected = loop_model_estimates(scores, counts, LEVEL)
    np.testing.assert_allclose(estimates.point, expected["point"], atol=1e-9)
    np.testing.assert_allclose(estimates.point, [-2.55566503, 0.41809885], atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Points that missing cells neither help nor hurt (DESIGN section 6)
# ---------------------------------------------------------------------------------------------


def test_with_complete_data_the_point_is_the_plain_scenario_weighted_mean() -> None:
    scores = np.random.default_rng(3).normal(size=(4, 5, 6))
    estimates = model_estimates(scores, resample_counts(5, 50, 1), LEVEL)
    expected = [sum(sum(scores[m, s]) / 6 for s in range(5)) / 5 for m in range(4)]
    np.testing.assert_allclose(estimates.point, expected, atol=1e-12)
    # A cell slot that no model has is not part of the release's cells at all.
    scores[:, 1, 2] = np.nan
    expected = [loop_mean([loop_mean(list(scores[m, s])) for s in range(5)]) for m in range(4)]
    np.testing.assert_allclose(model_estimates(scores, resample_counts(5, 50, 1), LEVEL).point,
                               expected, atol=1e-12)


def test_additive_data_gives_every_model_its_effect_whatever_is_missing() -> None:
    rng = np.random.default_rng(5)
    effects, cell_effects = rng.normal(size=5), rng.normal(size=(6, 4))
    scores = effects[:, None, None] + cell_effects[None]
    scores[0, :, 3] = np.nan  # refuses the hardest cell everywhere
    scores[1, :2] = np.nan  # absent from two scenarios
    scores[2][rng.random((6, 4)) < 0.4] = np.nan
    estimates = model_estimates(scores, resample_counts(6, 50, 2), LEVEL)
    np.testing.assert_allclose(estimates.point, effects + cell_effects.mean(), atol=1e-12)
    # On the same data the one-pass formula (mean deviation from the cell means over the cells
    # the model has, plus the grand mean) is off: the cell means it skips average other models.
    cell_means = np.nanmean(scores, axis=0)
    one_pass = np.nanmean(scores - cell_means, axis=(1, 2)) + np.nanmean(cell_means)
    assert np.abs(one_pass - (effects + cell_effects.mean())).max() > 0.01


def test_a_twin_refusing_every_c2_cell_gets_the_same_point_interval_and_rank() -> None:
    scores = release_like(seed=1)
    twin = scores[2].copy()
    twin[:, C2_CELLS] = np.nan
    scores = np.concatenate([scores, twin[None]])
    counts = resample_counts(8, 2000, 3)
    # Guard: the old point (plain mean over the cells a model has) lifts the twin well clear.
    plain = np.nanmean(np.nanmean(scores, axis=2), axis=1)
    assert plain[6] - plain[2] > 0.03
    for rule in ("paired", "classes"):
        board = leaderboard(scores, counts, 0.95, rule=rule)
        estimates = board.estimates
        assert estimates.point[6] == pytest.approx(estimates.point[2], abs=0.01)
        assert estimates.cmp_low[6] <= estimates.cmp_high[2]
        assert estimates.cmp_low[2] <= estimates.cmp_high[6]
        assert estimates.abs_low[6] <= estimates.abs_high[2]
        assert estimates.abs_low[2] <= estimates.abs_high[6]
        assert board.ranks[6] == board.ranks[2], rule
    assert estimates.coverage[6] == pytest.approx(0.75) and estimates.coverage[2] == 1.0


def test_a_model_sharing_no_cell_is_fitted_on_its_own_cells() -> None:
    scores = np.full((3, 4, 2), np.nan)
    scores[0, :, 0] = [1.0, 2.0, 3.0, 4.0]
    scores[1, :, 0] = [2.0, 3.0, 4.0, 5.0]
    scores[2, :, 1] = [7.0, 7.0, 8.0, 9.0]  # no other model scores cell 1
    estimates = model_estimates(scores, resample_counts(4, 100, 1), LEVEL)
    np.testing.assert_allclose(estimates.point, [2.5, 3.5, 7.75], atol=1e-12)


def test_a_model_without_data_changes_nothing_for_the_others(
    scores: np.ndarray, counts: np.ndarray
) -> None:
    empty = np.full((1, 6, 3), np.nan)
    with_empty = model_estimates(np.concatenate([scores, empty]), counts, LEVEL)
    without = model_estimates(scores, counts, LEVEL)
    np.testing.assert_allclose(with_empty.point[:4], without.point, atol=1e-12)
    np.testing.assert_allclose(with_empty.abs_low[:4], without.abs_low, atol=1e-12)
    np.testing.assert_allclose(with_empty.cmp_high[:4], without.cmp_high, atol=1e-12)


def test_coverage_is_the_share_of_cells_scored(scores: np.ndarray, counts: np.ndarray) -> None:
    estimates = model_estimates(scores, counts, LEVEL)
    expected = [sum(1 for s in range(6) for k in range(3) if not math.isnan(scores[m, s, k])) / 18
                for m in range(4)]
    np.testing.assert_allclose(estimates.coverage, expected)
    np.testing.assert_array_equal(estimates.scenarios, [6, 5, 6, 2])


# ---------------------------------------------------------------------------------------------
# Intervals that hold their level with few scenarios
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.99])
def test_student_t_quantile_matches_scipy(level: float) -> None:
    for df in [*range(1, 41), 57, 100, 250]:
        expected = scipy_stats.t.ppf((1 + level) / 2, df)
        assert student_t_quantile(level, df) == pytest.approx(expected, rel=1e-10), df


def test_expanded_t_multiplier_widens_most_with_fewest_scenarios() -> None:
    multipliers = expanded_t_multiplier([0, 1, 2, 6, 8, 20], 0.95)
    assert np.isnan(multipliers[:2]).all()  # one scenario: no interval
    assert multipliers[2] == pytest.approx(12.7062047 * math.sqrt(2))
    assert multipliers[3] == pytest.approx(2.5705818 * math.sqrt(6 / 5))
    assert multipliers[5] == pytest.approx(2.0930241 * math.sqrt(20 / 19))


def test_a_pair_interval_is_the_paired_t_test_as_resamples_grow() -> None:
    rng = np.random.default_rng(8)
    scores = rng.normal(size=(2, 8, 3))
    pairs = pairwise(scores, resample_counts(8, 40_000, 4), 0.95)
    per_scenario = (scores[0] - scores[1]).mean(axis=1)
    half = scipy_stats.t.ppf(0.975, 7) * per_scenario.std(ddof=1) / math.sqrt(8)
    assert pairs.high[0, 1] - pairs.diff[0, 1] == pytest.approx(half, rel=0.02)


def null_pair_decisions(method: str, datasets: int = 150, scenarios: int = 6) -> float:
    """Share of truly equal pairs declared different (4 equal models, K = 6, B = 400).

    Scores: scenario effect + model x scenario interaction + noise, like bench/coverage.py.
    """
    rng = np.random.default_rng(2026)
    declared = []
    for index in range(datasets):
        scores = (rng.normal(0, 0.1, (1, scenarios, 1)) + rng.normal(0, 0.05, (4, scenarios, 1))
                  + rng.normal(0, 0.1, (4, scenarios, 6)))
        pairs = pairwise(scores, resample_counts(scenarios, 400, index), 0.95,
                         method=method)  # type: ignore[arg-type]
        declared += list(pairs.significant[np.triu_indices(4, k=1)])
    return float(np.mean(declared))


def test_short_coverage_simulation_holds_the_level_where_the_percentile_interval_fails() -> None:
    # 150 data sets x 6 equal pairs at S = 6; bench/coverage.py runs the full simulation.
    assert null_pair_decisions("percentile") > 0.09
    assert null_pair_decisions("expanded_t") <= 0.07


# ---------------------------------------------------------------------------------------------
# Ranking rules
# ---------------------------------------------------------------------------------------------


def tied_pair_and_a_laggard() -> np.ndarray:
    """Models 0 and 1 differ by +1/-1 in alternate scenarios (mean 0); model 2 trails by 5."""
    base = np.random.default_rng(1).normal(size=(20, 2))
    alternating = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)[:, None]
    return np.stack([base + alternating, base, base - 5])


@pytest.mark.parametrize("rule", ["paired", "classes"])
def test_ties_share_a_place(rule: str) -> None:
    board = leaderboard(tied_pair_and_a_laggard(), resample_counts(20, 500, 2), 0.95, rule=rule)
    np.testing.assert_array_equal(board.ranks, [1, 1, 3] if rule == "paired" else [1, 1, 2])


def test_lower_is_better_reverses_the_ranks() -> None:
    scores = tied_pair_and_a_laggard()
    board = leaderboard(scores, resample_counts(20, 500, 2), 0.95, higher_is_better=False)
    np.testing.assert_array_equal(board.ranks, [2, 2, 1])


def hand_estimates() -> Estimates:
    """Five models in shuffled order plus one without data; intervals chosen to test the rule."""
    point = np.array([3.0, 5.0, 1.0, np.nan, 4.5, 2.0])
    cmp_low = np.array([2.5, 4.0, 0.5, np.nan, 3.5, 1.5])
    cmp_high = np.array([3.6, 6.0, 1.6, np.nan, 5.5, 2.6])
    return Estimates(point, cmp_low, cmp_high, cmp_low, cmp_high, coverage=np.ones(6),
                     scenarios=np.full(6, 8), level=LEVEL)


def test_rank_classes_compare_with_the_class_leader_only() -> None:
    # 5.0 leads class 1; 4.5 overlaps it; 3.0 overlaps 4.5 but not the leader, so opens class 2;
    # 2.0 joins it; 1.0 overlaps 2.0 but not 3.0, so opens class 3: overlap does not chain.
    np.testing.assert_array_equal(rank_classes(hand_estimates()), [2, 1, 3, UNRANKED, 1, 2])


def test_rank_classes_lower_is_better() -> None:
    classes = rank_classes(hand_estimates(), higher_is_better=False)
    np.testing.assert_array_equal(classes, [2, 3, 1, UNRANKED, 2, 1])


def test_a_model_without_an_interval_joins_the_current_class_and_never_leads() -> None:
    estimates = hand_estimates()
    estimates.cmp_low[[1, 0]] = np.nan  # the best point, and 3.0, have data in one scenario
    # 5.0 joins class 1 without leading it; 4.5 leads; 3.0 joins whatever class is current.
    np.testing.assert_array_equal(rank_classes(estimates), [1, 1, 2, UNRANKED, 1, 2])


@settings(max_examples=60, deadline=None)
@given(
    points=st.lists(st.sampled_from([np.nan, 0.0, 0.5, 1.0, 1.5, 2.0]), min_size=1, max_size=7),
    widths=st.lists(st.sampled_from([np.nan, 0.0, 0.3, 0.6, 1.0]), min_size=7, max_size=7),
    higher_is_better=st.booleans(),
)
def test_rank_classes_match_the_loop_reference(
    points: list[float], widths: list[float], higher_is_better: bool
) -> None:
    point = np.array(points)  # ties and NaN points come from the small sets of values
    width = np.array(widths[: len(points)])
    low, high = point - width, point + width * 0.8
    estimates = Estimates(point, low, high, low, high, coverage=np.ones(len(point)),
                          scenarios=np.full(len(point), 4), level=LEVEL)
    np.testing.assert_array_equal(rank_classes(estimates, higher_is_better),
                                  loop_classes(point, low, high, higher_is_better))


@pytest.mark.parametrize("scenarios", [2, 3, 8])
def test_class_tables_match_the_loop_reference_end_to_end(scenarios: int) -> None:
    scores = release_like(seed=scenarios, models=5, scenarios=scenarios)
    scores[1][:, C2_CELLS] = np.nan  # a refuser
    scores[3, 0] = np.nan
    scores[4] = scores[0]  # an exact tie
    counts = resample_counts(scenarios, 40, 9)
    board = leaderboard(scores, counts, LEVEL, rule="classes")
    reference = loop_model_estimates(scores, counts, LEVEL)
    np.testing.assert_array_equal(
        board.ranks, loop_classes(reference["point"], reference["cmp_low"], reference["cmp_high"])
    )
    assert board.ranks[4] == board.ranks[0]


def test_leaderboard_uses_the_release_rule(scores: np.ndarray, counts: np.ndarray) -> None:
    board = leaderboard(scores, counts, LEVEL, rule="classes")
    np.testing.assert_array_equal(board.ranks, rank_classes(board.estimates))
    with pytest.raises(ValueError, match="unknown ranking rule"):
        leaderboard(scores, counts, LEVEL, rule="elo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown interval method"):
        leaderboard(scores, counts, LEVEL, method="bca")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Thresholds and rates
# ---------------------------------------------------------------------------------------------


def test_condition_difference_by_hand() -> None:
    first = np.array([[[1.0, 3.0], [5.0, np.nan]]])
    second = np.array([[[0.0, 1.0], [2.0, 2.0]]])
    # Scenario 0: (1 + 2) / 2 = 1.5; scenario 1: only cell 0 is paired, 3.0; point 2.25.
    counts = np.array([[2, 0], [0, 2], [1, 1]])  # resampled values 1.5, 3.0, 2.25: sd 0.75
    # Level 0.5 with n = 2: t(1) is the Cauchy distribution, whose quartile is 1, so the
    # half-width is 1 * sqrt(2 / 1) * 0.75.
    difference = condition_difference(first, second, counts, 0.5)
    np.testing.assert_allclose(difference.point, [2.25])
    np.testing.assert_allclose(difference.low, [2.25 - 0.75 * math.sqrt(2)])
    np.testing.assert_allclose(difference.high, [2.25 + 0.75 * math.sqrt(2)])
    np.testing.assert_array_equal(difference.significant, [True])


def test_condition_difference_matches_loops(scores: np.ndarray, counts: np.ndarray) -> None:
    other = scores[::-1] + 0.3  # same positions, different values and holes
    difference = condition_difference(scores, other, counts, LEVEL)
    means = loop_scenario_means(scores - other)
    for model in range(4):
        found = loop_cluster(list(means[model]), counts, LEVEL)
        assert difference.point[model] == pytest.approx(found["point"], nan_ok=True)
        np.testing.assert_allclose([difference.low[model], difference.high[model]],
                                   [found["low"], found["high"]])


def test_condition_difference_rejects_different_shapes(counts: np.ndarray) -> None:
    with pytest.raises(ValueError, match="differ in shape"):
        condition_difference(np.zeros((2, 6, 3)), np.zeros((2, 6, 2)), counts, LEVEL)


def test_versus_reference_by_hand() -> None:
    scores = np.array([[[5.0, 3.0], [2.0, 2.0], [4.0, np.nan]], [[1.0, 1.0], [np.nan] * 2, [6, 6]]])
    reference = np.array([3.0, 3.0, np.nan])  # scenario 2 has no control text
    comparison = versus_reference(scores, reference, resample_counts(3, 100, 1), LEVEL)
    expected = [[1.0, -1.0, np.nan], [-2.0, np.nan, np.nan]]
    np.testing.assert_allclose(comparison.per_scenario_diff, expected)
    np.testing.assert_allclose(comparison.point, [0.0, -2.0])
    np.testing.assert_allclose(comparison.share_above, [0.5, 0.0])


def test_versus_reference_matches_loops(scores: np.ndarray, counts: np.ndarray) -> None:
    reference = np.array([0.1, np.nan, 0.9, 0.4, 0.0, 1.2])
    comparison = versus_reference(scores, reference, counts, LEVEL)
    means = loop_scenario_means(scores)
    for model in range(len(scores)):
        diffs = [means[model, s] - reference[s] for s in range(6)]
        found = loop_cluster(diffs, counts, LEVEL)
        above = [math.nan if math.isnan(d) else float(d > 0) for d in diffs]
        share = loop_cluster(above, counts, LEVEL)
        assert comparison.point[model] == pytest.approx(found["point"])
        np.testing.assert_allclose([comparison.low[model], comparison.high[model]],
                                   [found["low"], found["high"]])
        assert comparison.share_above[model] == pytest.approx(share["point"])
        np.testing.assert_allclose(  # a share stays within [0, 1]
            [comparison.share_low[model], comparison.share_high[model]],
            np.clip([share["low"], share["high"]], 0.0, 1.0),
        )


def test_refusal_rates_weight_scenarios_equally_and_stay_within_0_and_1() -> None:
    refused = np.array([[[1.0, 1.0, 1.0, 0.0], [0.0, np.nan, np.nan, np.nan], [0, 0, 0, 0]]])
    rates = refusal_rates(refused, resample_counts(3, 200, 0), LEVEL)
    np.testing.assert_allclose(rates.point, [(0.75 + 0.0 + 0.0) / 3])  # not 3/9 over cells
    assert rates.low[0] == 0.0 and rates.point[0] < rates.high[0] <= 1.0


def test_refusal_rates_accept_bool_and_reject_other_values() -> None:
    refused = np.array([[[True, False], [True, True]]])
    rates = refusal_rates(refused, resample_counts(2, 50, 0), LEVEL)
    np.testing.assert_allclose(rates.point, [0.75])
    with pytest.raises(ValueError, match="only 0, 1 or NaN"):
        refusal_rates(np.full((1, 2, 2), 2.0), resample_counts(2, 50, 0), LEVEL)


# ---------------------------------------------------------------------------------------------
# Awkward data
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["paired", "classes"])
def test_model_without_data_gives_nan_and_no_rank(
    scores: np.ndarray, counts: np.ndarray, rule: str
) -> None:
    scores = scores.copy()
    scores[2] = np.nan
    board = leaderboard(scores, counts, LEVEL, rule=rule)
    estimates = board.estimates
    for values in (estimates.point, estimates.abs_low, estimates.cmp_low, estimates.cmp_high):
        assert np.isnan(values[2])
    assert not np.isnan(estimates.cmp_low[[0, 1, 3]]).any()
    assert estimates.coverage[2] == 0 and estimates.scenarios[2] == 0
    assert np.isnan(board.pairwise.diff[2]).all() and np.isnan(board.pairwise.low[:, 2]).all()
    assert not board.pairwise.significant[2].any() and not board.pairwise.significant[:, 2].any()
    assert board.ranks[2] == UNRANKED
    # The empty model takes no part in the comparison: the reference sees three models.
    reference = loop_model_estimates(scores, counts[:40], LEVEL)
    np.testing.assert_allclose(model_estimates(scores, counts[:40], LEVEL).cmp_low,
                               reference["cmp_low"], atol=1e-10)


def test_model_with_one_scenario_has_a_point_but_cannot_be_told_apart() -> None:
    scores = release_like(seed=4, models=4)
    scores[3, 1:] = np.nan
    scores[3, 0] += 1.0  # far above everyone, but seen in one scenario only
    counts = resample_counts(8, 500, 5)
    board = leaderboard(scores, counts, 0.95)
    assert not np.isnan(board.estimates.point[3])
    assert np.isnan(board.estimates.abs_low[3]) and np.isnan(board.estimates.cmp_high[3])
    assert not board.pairwise.significant[3].any() and not board.pairwise.significant[:, 3].any()
    assert board.ranks[3] == 1
    classes = leaderboard(scores, counts, 0.95, rule="classes").ranks
    np.testing.assert_array_equal(classes, rank_classes(board.estimates))
    assert classes[3] == 1  # best point, no interval: joins class 1 without leading it


@pytest.mark.parametrize("rule", ["paired", "classes"])
def test_two_models_two_scenarios(rule: str) -> None:
    scores = np.array([[[0.2, 0.4], [0.3, 0.5]], [[0.6, 0.8], [0.7, 0.9]]])
    counts = resample_counts(2, 300, 1)
    board = leaderboard(scores, counts, 0.95, rule=rule)
    np.testing.assert_allclose(board.estimates.point, [0.35, 0.75])
    # Both scenarios put model 1 exactly 0.4 ahead: zero spread, a significant difference.
    np.testing.assert_allclose([board.pairwise.low[1, 0], board.pairwise.high[1, 0]], [0.4, 0.4])
    np.testing.assert_array_equal(board.ranks, [2, 1])
    reference = loop_model_estimates(scores, counts[:50], LEVEL)
    np.testing.assert_allclose(model_estimates(scores, counts[:50], LEVEL).abs_high,
                               reference["high"], atol=1e-12)


@pytest.mark.parametrize("rule", ["paired", "classes"])
def test_no_model_and_a_single_model(scores: np.ndarray, counts: np.ndarray, rule: str) -> None:
    assert leaderboard(np.zeros((0, 6, 3)), counts, LEVEL, rule=rule).ranks.shape == (0,)
    alone = leaderboard(scores[:1], counts, LEVEL, rule=rule)
    reference = loop_cluster(list(loop_scenario_means(scores)[0]), counts, LEVEL)
    np.testing.assert_allclose(alone.estimates.point, [reference["point"]])
    np.testing.assert_allclose(alone.estimates.abs_low, [reference["low"]])
    assert np.isnan(alone.estimates.cmp_low[0])  # nothing to compare with
    np.testing.assert_array_equal(alone.ranks, [1])


def test_pair_without_shared_cells_is_not_significant(counts: np.ndarray) -> None:
    scores = np.full((3, 6, 3), np.nan)
    scores[0, :, 0] = 10.0  # models 0 and 1 never score the same cell
    scores[1, :, 1] = 0.0
    scores[2, :, :2] = np.linspace(4, 6, 6)[:, None]
    pairs = pairwise(scores, counts, LEVEL)
    assert np.isnan(pairs.diff[0, 1]) and np.isnan(pairs.low[1, 0]) and np.isnan(pairs.high[0, 1])
    assert not pairs.significant[0, 1] and not pairs.significant[1, 0]
    assert pairs.significant[0, 2] and pairs.significant[2, 1]
    np.testing.assert_array_equal(paired_ranks(pairs), [1, 2, 2])


def test_diagonal_is_never_significant(scores: np.ndarray, counts: np.ndarray) -> None:
    pairs = pairwise(scores, counts, LEVEL)
    np.testing.assert_array_equal(pairs.diff.diagonal(), 0.0)
    assert not pairs.significant.diagonal().any()


def test_bad_inputs_are_rejected(scores: np.ndarray, counts: np.ndarray) -> None:
    with pytest.raises(ValueError, match="counts must be"):
        model_estimates(scores, counts[:, :5], LEVEL)
    with pytest.raises(ValueError, match="at least one scenario"):
        model_estimates(scores, np.zeros((3, 6), dtype=int), LEVEL)
    with pytest.raises(ValueError, match="level"):
        pairwise(scores, counts, 1.0)
    with pytest.raises(ValueError, match="scores must be"):
        model_estimates(scores[0], counts, LEVEL)
    with pytest.raises(ValueError, match="degrees of freedom"):
        student_t_quantile(0.95, 0)
