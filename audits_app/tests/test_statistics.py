"""Tests for audits_app.statistics: the vectorised code against plain loops, and the rules.

The reference implementation below loops over resamples, models, pairs, scenarios and cells, and
resamples the literal way (it lists the drawn scenarios, repeats included), so it shares no
arithmetic with the module under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audits_app.statistics import (
    UNRANKED,
    Estimates,
    condition_difference,
    leaderboard,
    model_estimates,
    morey_factor,
    paired_ranks,
    pairwise,
    rank_classes,
    refusal_rates,
    resample_counts,
    scenario_means,
    versus_reference,
)

LEVEL = 0.9

# ---------------------------------------------------------------------------------------------
# Loop-based reference implementation
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


def loop_bootstrap(per_scenario: list[float], counts: np.ndarray) -> tuple[float, np.ndarray]:
    """Point (mean over scenarios with a value) and the value under every resample."""
    point = loop_mean(per_scenario)
    boot = np.array([loop_mean([per_scenario[s] for s in loop_drawn(row)]) for row in counts])
    return point, boot


def loop_interval(boot: np.ndarray, level: float) -> tuple[float, float]:
    kept = boot[~np.isnan(boot)]
    if len(kept) == 0:
        return math.nan, math.nan
    low, high = np.percentile(kept, [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def loop_model_estimates(scores: np.ndarray, counts: np.ndarray, level: float) -> dict:
    models, scenarios, cells = scores.shape
    means = loop_scenario_means(scores)
    result = {name: np.full(models, math.nan) for name in ("point", "low", "high")}
    for model in range(models):
        point, boot = loop_bootstrap(list(means[model]), counts)
        result["point"][model] = point
        result["low"][model], result["high"][model] = loop_interval(boot, level)
    return result


def loop_comparison(scores: np.ndarray, counts: np.ndarray, level: float) -> dict:
    models, scenarios, cells = scores.shape
    deviations = np.full(scores.shape, math.nan)
    for s in range(scenarios):
        for k in range(cells):
            cell_mean = loop_mean([scores[m, s, k] for m in range(models)])
            for m in range(models):
                deviations[m, s, k] = scores[m, s, k] - cell_mean
    with_data = sum(1 for m in range(models) if not np.all(np.isnan(scores[m])))
    factor = math.sqrt(with_data / (with_data - 1))
    plain = loop_model_estimates(scores, counts, level)
    dev = loop_model_estimates(deviations, counts, level)
    return {
        "low": plain["point"] + factor * (dev["low"] - dev["point"]),
        "high": plain["point"] + factor * (dev["high"] - dev["point"]),
    }


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
            point, boot = loop_bootstrap(per_scenario, counts)
            result["diff"][i, j] = point
            result["low"][i, j], result["high"][i, j] = loop_interval(boot, level)
    result["significant"] = (result["low"] > 0) | (result["high"] < 0)
    return result


def loop_paired_ranks(reference: dict) -> np.ndarray:
    models = len(reference["diff"])
    ranks = []
    for i in range(models):
        better = sum(
            1
            for j in range(models)
            if reference["significant"][i, j] and reference["diff"][i, j] < 0
        )
        ranks.append(1 + better)
    return np.array(ranks)


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
# Vectorised against the loops
# ---------------------------------------------------------------------------------------------


def test_scenario_means_match_loops(scores: np.ndarray) -> None:
    means, present = scenario_means(scores)
    np.testing.assert_allclose(means, loop_scenario_means(scores))
    np.testing.assert_array_equal(present, ~np.isnan(loop_scenario_means(scores)))


def test_sparse_model_has_resamples_without_data(scores: np.ndarray, counts: np.ndarray) -> None:
    # Guards the data set: the NaN-dropping percentile path must be exercised below.
    _, boot = loop_bootstrap(list(loop_scenario_means(scores)[3]), counts)
    assert 0 < np.isnan(boot).sum() < len(boot)


def test_model_estimates_match_loops(scores: np.ndarray, counts: np.ndarray) -> None:
    estimates = model_estimates(scores, counts, LEVEL)
    plain = loop_model_estimates(scores, counts, LEVEL)
    comparison = loop_comparison(scores, counts, LEVEL)
    np.testing.assert_allclose(estimates.point, plain["point"])
    np.testing.assert_allclose(estimates.abs_low, plain["low"])
    np.testing.assert_allclose(estimates.abs_high, plain["high"])
    np.testing.assert_allclose(estimates.cmp_low, comparison["low"])
    np.testing.assert_allclose(estimates.cmp_high, comparison["high"])


def test_pairwise_matches_loops(scores: np.ndarray, counts: np.ndarray) -> None:
    pairs = pairwise(scores, counts, LEVEL)
    reference = loop_pairwise(scores, counts, LEVEL)
    np.testing.assert_allclose(pairs.diff, reference["diff"], atol=1e-12)
    np.testing.assert_allclose(pairs.low, reference["low"], atol=1e-12)
    np.testing.assert_allclose(pairs.high, reference["high"], atol=1e-12)
    np.testing.assert_array_equal(pairs.significant, reference["significant"])


def test_paired_ranks_match_loops(scores: np.ndarray, counts: np.ndarray) -> None:
    ranks = paired_ranks(pairwise(scores, counts, LEVEL))
    np.testing.assert_array_equal(ranks, loop_paired_ranks(loop_pairwise(scores, counts, LEVEL)))


@settings(max_examples=25, deadline=None)
@given(
    models=st.integers(2, 4),
    scenarios=st.integers(1, 5),
    cells=st.integers(1, 3),
    missing=st.floats(0.0, 0.6),
    seed=st.integers(0, 2**16),
)
def test_random_inputs_match_loops(
    models: int, scenarios: int, cells: int, missing: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(models, scenarios, cells))
    scores[rng.random(scores.shape) < missing] = np.nan
    counts = resample_counts(scenarios, 40, seed)
    pairs = pairwise(scores, counts, LEVEL)
    reference = loop_pairwise(scores, counts, LEVEL)
    for name in ("diff", "low", "high"):
        np.testing.assert_allclose(getattr(pairs, name), reference[name], atol=1e-12)
    estimates = model_estimates(scores, counts, LEVEL)
    plain = loop_model_estimates(scores, counts, LEVEL)
    np.testing.assert_allclose(estimates.abs_low, plain["low"])
    np.testing.assert_allclose(estimates.abs_high, plain["high"])


# ---------------------------------------------------------------------------------------------
# Ranking rules
# ---------------------------------------------------------------------------------------------


def tied_pair_and_a_laggard() -> np.ndarray:
    """Models 0 and 1 differ by +1/-1 in alternate scenarios (mean 0); model 2 trails by 5."""
    base = np.random.default_rng(1).normal(size=(20, 2))
    alternating = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)[:, None]
    return np.stack([base + alternating, base, base - 5])


def test_ties_share_a_place() -> None:
    scores = tied_pair_and_a_laggard()
    board = leaderboard(scores, resample_counts(20, 500, 2), 0.95)
    np.testing.assert_array_equal(board.ranks, [1, 1, 3])


def test_lower_is_better_reverses_the_ranks() -> None:
    scores = tied_pair_and_a_laggard()
    board = leaderboard(scores, resample_counts(20, 500, 2), 0.95, higher_is_better=False)
    np.testing.assert_array_equal(board.ranks, [2, 2, 1])


def hand_estimates() -> Estimates:
    """Five models in shuffled order plus one without data; intervals chosen to test the rule."""
    point = np.array([3.0, 5.0, 1.0, np.nan, 4.5, 2.0])
    cmp_low = np.array([2.5, 4.0, 0.5, np.nan, 3.5, 1.5])
    cmp_high = np.array([3.6, 6.0, 1.6, np.nan, 5.5, 2.6])
    return Estimates(point, cmp_low, cmp_high, cmp_low, cmp_high, LEVEL)


def test_rank_classes_compare_with_the_class_leader_only() -> None:
    # 5.0 leads class 1; 4.5 overlaps it; 3.0 overlaps 4.5 but not the leader, so opens class 2;
    # 2.0 joins it; 1.0 overlaps 2.0 but not 3.0, so opens class 3: overlap does not chain.
    np.testing.assert_array_equal(rank_classes(hand_estimates()), [2, 1, 3, UNRANKED, 1, 2])


def test_rank_classes_lower_is_better() -> None:
    classes = rank_classes(hand_estimates(), higher_is_better=False)
    np.testing.assert_array_equal(classes, [2, 3, 1, UNRANKED, 2, 1])


def test_leaderboard_uses_the_release_rule(scores: np.ndarray, counts: np.ndarray) -> None:
    board = leaderboard(scores, counts, LEVEL, rule="classes")
    np.testing.assert_array_equal(board.ranks, rank_classes(board.estimates))
    with pytest.raises(ValueError, match="unknown ranking rule"):
        leaderboard(scores, counts, LEVEL, rule="elo")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Comparison intervals
# ---------------------------------------------------------------------------------------------


def test_morey_factor_for_four_models() -> None:
    assert morey_factor(4) == pytest.approx(1.1547005383792515)
    with pytest.raises(ValueError):
        morey_factor(1)


def test_comparison_half_widths_are_the_factor_times_the_deviation_spread() -> None:
    rng = np.random.default_rng(4)
    scores = rng.normal(size=(4, 10, 3))
    counts = resample_counts(10, 300, 9)
    deviations = scores - scores.mean(axis=0, keepdims=True)
    spread = model_estimates(deviations, counts, LEVEL)  # plain bootstrap of the deviations
    estimates = model_estimates(scores, counts, LEVEL)
    np.testing.assert_allclose(
        estimates.cmp_high - estimates.point, morey_factor(4) * (spread.abs_high - spread.point)
    )
    np.testing.assert_allclose(
        estimates.point - estimates.cmp_low, morey_factor(4) * (spread.point - spread.abs_low)
    )


# ---------------------------------------------------------------------------------------------
# Thresholds and rates
# ---------------------------------------------------------------------------------------------


def test_condition_difference_by_hand() -> None:
    first = np.array([[[1.0, 3.0], [5.0, np.nan]]])
    second = np.array([[[0.0, 1.0], [2.0, 2.0]]])
    # Scenario 0: (1 + 2) / 2 = 1.5; scenario 1: only cell 0 is paired, 3.0; point 2.25.
    counts = np.array([[2, 0], [0, 2], [1, 1]])  # resampled values 1.5, 3.0, 2.25
    difference = condition_difference(first, second, counts, 0.5)  # 25th and 75th percentiles
    np.testing.assert_allclose(difference.point, [2.25])
    np.testing.assert_allclose(difference.low, [1.875])
    np.testing.assert_allclose(difference.high, [2.625])
    np.testing.assert_array_equal(difference.significant, [True])


def test_condition_difference_matches_loops(scores: np.ndarray, counts: np.ndarray) -> None:
    other = scores[::-1] + 0.3  # same positions, different values and holes
    difference = condition_difference(scores, other, counts, LEVEL)
    reference = loop_model_estimates(scores - other, counts, LEVEL)
    np.testing.assert_allclose(difference.point, reference["point"])
    np.testing.assert_allclose(difference.low, reference["low"])
    np.testing.assert_allclose(difference.high, reference["high"])


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
        point, boot = loop_bootstrap(diffs, counts)
        above = [math.nan if math.isnan(d) else float(d > 0) for d in diffs]
        share, share_boot = loop_bootstrap(above, counts)
        assert comparison.point[model] == pytest.approx(point)
        np.testing.assert_allclose(
            [comparison.low[model], comparison.high[model]], loop_interval(boot, LEVEL)
        )
        assert comparison.share_above[model] == pytest.approx(share)
        np.testing.assert_allclose(
            [comparison.share_low[model], comparison.share_high[model]],
            loop_interval(share_boot, LEVEL),
        )


def test_refusal_rates_weight_scenarios_equally() -> None:
    refused = np.array([[[1.0, 1.0, 1.0, 0.0], [0.0, np.nan, np.nan, np.nan]]])
    rates = refusal_rates(refused, resample_counts(2, 50, 0), LEVEL)
    np.testing.assert_allclose(rates.point, [(0.75 + 0.0) / 2])  # not 3/5 pooled over cells
    assert 0.0 <= rates.low[0] <= rates.point[0] <= rates.high[0] <= 0.75


def test_refusal_rates_accept_bool_and_reject_other_values() -> None:
    refused = np.array([[[True, False], [True, True]]])
    rates = refusal_rates(refused, resample_counts(2, 50, 0), LEVEL)
    np.testing.assert_allclose(rates.point, [0.75])
    with pytest.raises(ValueError, match="only 0, 1 or NaN"):
        refusal_rates(np.full((1, 2, 2), 2.0), resample_counts(2, 50, 0), LEVEL)


# ---------------------------------------------------------------------------------------------
# Edge cases
# ---------------------------------------------------------------------------------------------


def test_model_without_data_gives_nan_and_no_rank(scores: np.ndarray, counts: np.ndarray) -> None:
    scores = scores.copy()
    scores[2] = np.nan
    board = leaderboard(scores, counts, LEVEL)
    estimates = board.estimates
    for values in (estimates.point, estimates.abs_low, estimates.cmp_low, estimates.cmp_high):
        assert np.isnan(values[2])
        assert not np.isnan(values[[0, 1, 3]]).any()
    assert np.isnan(board.pairwise.diff[2]).all() and np.isnan(board.pairwise.low[:, 2]).all()
    assert not board.pairwise.significant[2].any() and not board.pairwise.significant[:, 2].any()
    assert board.ranks[2] == UNRANKED
    assert rank_classes(estimates)[2] == UNRANKED
    # The empty model takes no part in the cell means, so the factor is that of three models.
    comparison = loop_comparison(scores, counts, LEVEL)
    np.testing.assert_allclose(estimates.cmp_low, comparison["low"])


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
    with pytest.raises(ValueError, match="level"):
        pairwise(scores, counts, 1.0)
    with pytest.raises(ValueError, match="scores must be"):
        model_estimates(scores[0], counts, LEVEL)
