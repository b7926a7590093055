"""Ranking statistics for a release (DESIGN.md section 6).

Pure numpy: plain arrays in, frozen dataclasses of arrays out, no ORM, so the module can be tested
and benchmarked alone. Shapes used throughout:

    scores[M, S, K]   float; M models, S scenarios, K cells per scenario (task x condition
                      x variant); NaN where a model has no score for a cell (missing, refused,
                      unscored)
    counts[B, S]      int; how often each scenario is drawn in resample b (see `resample_counts`)

Every scenario weighs the same. A resample gives scenario s the weight counts[b, s], which is the
same as drawing whole scenarios with replacement (cluster bootstrap).

Points: the additive fit of `additive` (scores ~ model effect + cell effect, weighted least
squares over the observed cells): a model's point is its predicted mean over every cell, so a
refused or unscored cell neither helps nor hurts it. Pairs stay on the cells both models have.

Intervals: the t interval with the bootstrap standard error, expanded for few scenarios
(`intervals`), for every interval returned here; the classes inherit it.

A resample in which a row (a model, a pair, a difference) has no scenario with data has no value;
such resamples are dropped, so an interval is conditional on the quantity being observed. Nothing
here raises on missing data: it shows up as NaN, as `False` for significance and as `UNRANKED`.

Memory and time: bootstrap values are materialised for a block of rows (model pairs) or of
resamples (the fit's M x M systems) at a time, each block about `arrays.BLOCK_BYTES`, one block
per core at once (`arrays.map_blocks`). The t interval of a row with data in every scenario (a
pair sharing a cell in each) needs no bootstrap values: its resampled mean is linear in the
counts, so its spread is a quadratic form of their covariance (`intervals._linear_spread`).
bench/stats.py measures time and peak; at 200 models the fit's B systems of 200 x 200, formed by
one product and solved by LU, are most of the time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from audits_app.statistics.additive import AdditiveDesign
from audits_app.statistics.arrays import BoolArray, FloatArray, IntArray, divide_or_nan, nanmean
from audits_app.statistics.eligibility import rank_eligibility
from audits_app.statistics.family_wise import PAIR_CORRECTIONS, holm_rejected, pair_p_values
from audits_app.statistics.intervals import (
    INTERVAL_METHODS,
    check_level,
    check_method,
    cluster_interval,
    expanded_t_multiplier,
    interval,
    student_t_quantile,
)

__all__ = [
    "INTERVAL_METHODS", "RANK_RULES", "UNRANKED", "Difference", "Estimates", "Leaderboard",
    "Pairwise", "Rates", "ReferenceComparison", "condition_difference", "expanded_t_multiplier",
    "leaderboard", "model_estimates", "morey_factor", "paired_ranks", "pairwise", "rank_classes",
    "rank_eligibility", "refusal_rates", "resample_counts", "scenario_means",
    "student_t_quantile", "versus_reference",
]

RankRule = Literal["paired", "classes"]
IntervalMethod = Literal["expanded_t", "expanded_percentile", "percentile"]

RANK_RULES: tuple[str, ...] = ("paired", "classes")
# Rank of a model with no data: it has no place, and 0 cannot be mistaken for one.
UNRANKED = 0


@dataclass(frozen=True, eq=False)
class Estimates:
    """Per-model points with absolute and comparison intervals (arrays of length M).

    coverage: share of the release's S x K cells the model has a score for (refused and unscored
    cells are not covered). scenarios: in how many scenarios it has any score (the intervals' n).
    """

    point: FloatArray
    abs_low: FloatArray
    abs_high: FloatArray
    cmp_low: FloatArray
    cmp_high: FloatArray
    coverage: FloatArray
    scenarios: IntArray
    level: float


@dataclass(frozen=True, eq=False)
class Pairwise:
    """Differences row model minus column model (M x M), with their intervals."""

    diff: FloatArray
    low: FloatArray
    high: FloatArray
    significant: BoolArray
    level: float


@dataclass(frozen=True, eq=False)
class Leaderboard:
    """Everything a release's leaderboard shows for one measure; `ranks` follow `rule`."""

    estimates: Estimates
    pairwise: Pairwise
    ranks: IntArray
    rule: str
    higher_is_better: bool


@dataclass(frozen=True, eq=False)
class Difference:
    """Per-model paired difference between two conditions (arrays of length M)."""

    point: FloatArray
    low: FloatArray
    high: FloatArray
    significant: BoolArray
    level: float


@dataclass(frozen=True, eq=False)
class ReferenceComparison:
    """Per-model comparison with a per-scenario reference value, e.g. the control text."""

    per_scenario_diff: FloatArray
    point: FloatArray
    low: FloatArray
    high: FloatArray
    significant: BoolArray
    share_above: FloatArray
    share_low: FloatArray
    share_high: FloatArray
    level: float


@dataclass(frozen=True, eq=False)
class Rates:
    """Per-model rate (e.g. refusals) with its interval (arrays of length M)."""

    point: FloatArray
    low: FloatArray
    high: FloatArray
    level: float


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def resample_counts(n_scenarios: int, resamples: int, seed: int) -> npt.NDArray[np.int32]:
    """Draw counts for the cluster bootstrap, shape (resamples, n_scenarios), dtype int32.

    Row b is one multinomial draw of n_scenarios scenarios with replacement and equal
    probabilities, so each row sums to n_scenarios. The release stores seed and B, and the same
    seed gives the same matrix, so published intervals can be recomputed exactly.
    """
    if n_scenarios < 1 or resamples < 1:
        raise ValueError("n_scenarios and resamples must both be at least 1")
    rng = np.random.default_rng(seed)
    probabilities = np.full(n_scenarios, 1.0 / n_scenarios)
    return rng.multinomial(n_scenarios, probabilities, size=resamples).astype(np.int32)


def scenario_means(scores: npt.ArrayLike) -> tuple[FloatArray, BoolArray]:
    """Per model and scenario, the mean over the cells that have a score.

    Returns (means[M, S], present[M, S]); means is NaN where present is False (no cell scored).
    """
    values = _as_scores(scores)
    means = nanmean(values, axis=2)
    return means, ~np.isnan(means)


def morey_factor(m: int) -> float:
    """sqrt(m / (m - 1)): corrects the spread of deviations from the mean of m models (Morey 2008).

    Subtracting the mean of m models removes part of each model's own variance; scaling the
    deviations by this factor restores it.
    """
    if m < 2:
        raise ValueError("the Morey factor needs at least 2 models")
    return float(np.sqrt(m / (m - 1)))


def model_estimates(
    scores: npt.ArrayLike, counts: npt.ArrayLike, level: float,
    *, method: IntervalMethod = "expanded_t",
) -> Estimates:
    """Point, absolute interval and comparison interval per model, all from the additive fit.

    point       a[m] of the additive fit (module docstring): refusing cells neither helps nor hurts.
    abs_*       interval of a[m] over the resampled fits.
    cmp_*       comparison interval (Morey 2008), for reading differences between models:

        dev[b, m] = a_b[m] - mean of a_b over the models with a value in resample b
        cmp       = point[m] -/+ morey_factor(M') * half-width of the interval of dev[:, m]

    M' is the number of models with any data: a model without data takes no part. With fewer than
    two such models the comparison interval is NaN.
    """
    values = _as_scores(scores)
    draws = _as_counts(counts, values.shape[1])
    check_level(level)
    check_method(method)
    observed = ~np.isnan(values)
    scenarios = observed.any(axis=2).sum(axis=1)
    coverage = observed.sum(axis=(1, 2)) / max(1, values.shape[1] * values.shape[2])
    design = AdditiveDesign.of(values)
    point = design.fit(np.ones((1, values.shape[1])))[0]
    resampled = design.fit_all(draws)  # [B, M]
    abs_low, abs_high = interval(point, resampled.T, scenarios, level, method)
    cmp_low, cmp_high = _comparison_interval(point, resampled, scenarios, level, method)
    return Estimates(
        point, abs_low, abs_high, cmp_low, cmp_high, coverage, scenarios.astype(np.int64), level
    )


def pairwise(
    scores: npt.ArrayLike, counts: npt.ArrayLike, level: float,
    *, method: IntervalMethod = "expanded_t", tolerance: float = 0.0,
    correction: str = "none", eligible: BoolArray | None = None,
) -> Pairwise:
    """Differences between every pair of models on the cells both have (DESIGN.md section 6).

    diff[i, j]: per scenario the mean over shared cells of (i - j), then the mean over the
    scenarios with at least one shared cell. low/high: its interval from the cluster bootstrap,
    n = those scenarios. significant: the interval excludes zero. diff is antisymmetric, so only
    pairs i < j are resampled and [j, i] is mirrored. A pair with no shared cells is NaN and never
    significant; the diagonal is 0 (NaN for a model without data) and never significant. A
    difference of at most `tolerance` is never significant, whatever its interval: a constant
    offset of float noise has a zero-width interval that excludes zero (DESIGN section 6).
    correction "holm" makes the pairs of `eligible` models (all with data when None) one family
    (`family_wise`); the other pairs are then never significant.
    """
    if correction not in PAIR_CORRECTIONS:
        raise ValueError(f"unknown pair correction {correction!r}; expected one of "
                         f"{PAIR_CORRECTIONS}")
    values = _as_scores(scores)
    draws = _as_counts(counts, values.shape[1])
    check_level(level)
    check_method(method)
    differences, shared = _pair_scenario_differences(values)
    upper = np.triu_indices(values.shape[0], k=1)
    point, low, high = cluster_interval(differences[upper], shared[upper], draws, level, method)
    diagonal = np.where(shared.any(axis=2).diagonal(), 0.0, np.nan)
    diff = _antisymmetric(point, -point, diagonal)
    low_matrix = _antisymmetric(low, -high, diagonal)
    high_matrix = _antisymmetric(high, -low, diagonal)
    significant = _excludes_zero(low_matrix, high_matrix) & (np.abs(diff) > tolerance)
    if correction == "holm":
        members = np.ones(len(diagonal), dtype=bool) if eligible is None else eligible
        in_family = members[upper[0]] & members[upper[1]]
        p_values = pair_p_values(point, low, high, shared[upper].sum(axis=1), level)
        rejected = holm_rejected(np.where(in_family, p_values, np.nan), level)
        significant &= _antisymmetric(rejected, rejected, np.zeros(len(diagonal))) > 0
    return Pairwise(diff, low_matrix, high_matrix, significant, level)


def paired_ranks(
    pairs: Pairwise, higher_is_better: bool = True, eligible: BoolArray | None = None
) -> IntArray:
    """Rank = 1 + the number of models demonstrably better (DESIGN.md section 6).

    "Demonstrably better" means the pair is significant and the difference points the right way.
    Ties share a place: two models no one beats and who do not beat each other both rank 1, and a
    model both beat ranks 3. A model without data, or outside `eligible` (below the release's
    minimum of data, `rank_eligibility`), gets UNRANKED and takes no place from the others: only
    eligible models count as ahead.
    """
    has_data = ~np.isnan(pairs.diff.diagonal())
    ranked = has_data if eligible is None else has_data & np.asarray(eligible, dtype=bool)
    others_ahead = pairs.diff < 0 if higher_is_better else pairs.diff > 0
    beaten_by = (pairs.significant & others_ahead & ranked[np.newaxis, :]).sum(axis=1)
    return np.where(ranked, 1 + beaten_by, UNRANKED).astype(np.int64)


def rank_classes(
    estimates: Estimates, higher_is_better: bool = True, eligible: BoolArray | None = None
) -> IntArray:
    """Rank classes from overlapping comparison intervals: the pilot.0 rule.

    Models are sorted by point, best first (ties keep input order). The first model opens class 1
    and leads it. Each next model joins the current class if its comparison interval overlaps the
    interval of the class's leader (endpoints touching counts as overlap); otherwise it opens the
    next class (2, 3, ...) and leads it. Only the leader is compared, so overlap does not chain
    down the table. A model whose comparison interval is undefined (data in fewer than two
    scenarios) cannot be told apart from anyone: it joins the current class (class 1 if it comes
    first) and never leads one, as under the paired rule it is never demonstrably different.
    A model without a point, or outside `eligible`, gets UNRANKED and neither joins nor leads a
    class.
    """
    point = estimates.point
    if eligible is not None:
        point = np.where(np.asarray(eligible, dtype=bool), point, np.nan)
    order = np.argsort(-point if higher_is_better else point, kind="stable")  # NaN sorts last
    has_interval = ~np.isnan(estimates.cmp_low) & ~np.isnan(estimates.cmp_high)
    classes = np.full(point.shape, UNRANKED, dtype=np.int64)
    leader, current = -1, 1
    for model in order:  # a loop over models (tens), not over resamples
        if np.isnan(point[model]):
            break
        if has_interval[model]:
            if leader >= 0 and not _intervals_overlap(estimates, leader, model):
                current += 1
                leader = model
            elif leader < 0:
                leader = model
        classes[model] = current
    return classes


def leaderboard(
    scores: npt.ArrayLike,
    counts: npt.ArrayLike,
    level: float,
    higher_is_better: bool = True,
    rule: RankRule = "paired",
    *,
    method: IntervalMethod = "expanded_t",
    tolerance: float = 0.0,
    eligible: BoolArray | None = None,
    correction: str = "none",
) -> Leaderboard:
    """Estimates, all pairs and ranks for one measure; the rule is part of the release.

    rule "paired" ranks with `paired_ranks` (shared cells), "classes" with `rank_classes`
    (pilot.0; the additive fit's comparison intervals). Only `eligible` models are ranked (all
    with data when None); `tolerance` and `correction` as in `pairwise`.
    """
    if rule not in RANK_RULES:
        raise ValueError(f"unknown ranking rule {rule!r}; expected one of {RANK_RULES}")
    estimates = model_estimates(scores, counts, level, method=method)
    pairs = pairwise(scores, counts, level, method=method, tolerance=tolerance,
                     correction=correction, eligible=eligible)
    if rule == "paired":
        ranks = paired_ranks(pairs, higher_is_better, eligible)
    else:
        ranks = rank_classes(estimates, higher_is_better, eligible)
    return Leaderboard(estimates, pairs, ranks, rule, higher_is_better)


def condition_difference(
    scores_a: npt.ArrayLike, scores_b: npt.ArrayLike, counts: npt.ArrayLike, level: float,
    *, method: IntervalMethod = "expanded_t",
) -> Difference:
    """Per model, the paired difference a - b between two conditions on the same assignment.

    a and b are [M, S, K] with the same cell positions (e.g. C1 and C3 for the same scenario, task
    and variant). Only cells scored in both count; each scenario is weighted equally; the interval
    comes from the cluster bootstrap and significant means it excludes zero.
    """
    first, second = _as_scores(scores_a), _as_scores(scores_b)
    if first.shape != second.shape:
        raise ValueError(f"scores_a {first.shape} and scores_b {second.shape} differ in shape")
    draws = _as_counts(counts, first.shape[1])
    check_level(level)
    check_method(method)
    # NaN unless both are scored, which is what pairs the cells.
    means, present = scenario_means(first - second)
    point, low, high = cluster_interval(means, present, draws, level, method)
    return Difference(point, low, high, _excludes_zero(low, high), level)


def versus_reference(
    scores: npt.ArrayLike, reference: npt.ArrayLike, counts: npt.ArrayLike, level: float,
    *, method: IntervalMethod = "expanded_t",
) -> ReferenceComparison:
    """Compare each model's per-scenario mean with that scenario's own reference value.

    reference[S] is e.g. the control text's persuasion, or the no-text baseline. Returns
    per_scenario_diff[M, S] (NaN where the model or the reference is missing), the
    scenario-weighted mean difference with its interval and significance, and the share of
    scenarios where the model is strictly above the reference, with its interval (within [0, 1]).
    """
    values = _as_scores(scores)
    draws, target = _as_counts(counts, values.shape[1]), _as_reference(reference, values.shape[1])
    check_level(level)
    check_method(method)
    means, _ = scenario_means(values)
    per_scenario = means - target[np.newaxis, :]
    compared = ~np.isnan(per_scenario)
    point, low, high = cluster_interval(per_scenario, compared, draws, level, method)
    above = (per_scenario > 0).astype(np.float64)
    share, share_low, share_high = cluster_interval(above, compared, draws, level, method)
    return ReferenceComparison(
        per_scenario_diff=per_scenario,
        point=point,
        low=low,
        high=high,
        significant=_excludes_zero(low, high),
        share_above=share,
        share_low=np.clip(share_low, 0.0, 1.0),
        share_high=np.clip(share_high, 0.0, 1.0),
        level=level,
    )


def refusal_rates(
    refused: npt.ArrayLike, counts: npt.ArrayLike, level: float,
    *, method: IntervalMethod = "expanded_t",
) -> Rates:
    """Per-model refusal rate with a cluster-bootstrap interval (within [0, 1]).

    refused[M, S, K] holds 1 (refused), 0 (not refused) or NaN (no generation); a bool array is
    accepted when nothing is missing. Scenarios are weighted equally, like every other estimate.
    """
    values = _as_scores(refused)
    if np.any((values != 0) & (values != 1) & ~np.isnan(values)):
        raise ValueError("refused must hold only 0, 1 or NaN")
    draws = _as_counts(counts, values.shape[1])
    check_level(level)
    check_method(method)
    means, present = scenario_means(values)
    point, low, high = cluster_interval(means, present, draws, level, method)
    return Rates(point, np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0), level)


# ---------------------------------------------------------------------------------------------
# Comparison intervals and pairs
# ---------------------------------------------------------------------------------------------


def _comparison_interval(
    point: FloatArray, resampled: FloatArray, scenarios: IntArray, level: float, method: str
) -> tuple[FloatArray, FloatArray]:
    """Morey comparison interval; the formula is in `model_estimates`."""
    with_data = ~np.isnan(point)
    if with_data.sum() < 2:
        return np.full(point.shape, np.nan), np.full(point.shape, np.nan)
    deviation_point = point - point[with_data].mean()
    deviations = resampled - nanmean(resampled, axis=1)[:, np.newaxis]
    low, high = interval(deviation_point, deviations.T, scenarios, level, method)
    factor = morey_factor(int(with_data.sum()))
    return (point + factor * (low - deviation_point), point + factor * (high - deviation_point))


def _pair_scenario_differences(scores: FloatArray) -> tuple[FloatArray, BoolArray]:
    """D[i, j, s]: mean over cells of s scored for both i and j of (i - j); W[i, j, s]: any shared.

    mean(i - j) over shared cells equals (sum of i - sum of j) over those cells / their number,
    so one product over cells gives every pair at once (per scenario, one batched BLAS product).
    """
    observed = ~np.isnan(scores)
    by_scenario = np.ascontiguousarray(observed.transpose(1, 0, 2), dtype=np.float64)  # [S, M, K]
    filled = np.ascontiguousarray(np.where(observed, scores, 0.0).transpose(1, 0, 2))
    shared_cells = (by_scenario @ by_scenario.transpose(0, 2, 1)).transpose(1, 2, 0)
    # i's sum over the cells it shares with j, [S, i, j] before the transpose to [i, j, S].
    own_total = (filled @ by_scenario.transpose(0, 2, 1)).transpose(1, 2, 0)
    difference_total = own_total - own_total.transpose(1, 0, 2)
    return divide_or_nan(difference_total, shared_cells), shared_cells > 0


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def _antisymmetric(upper: FloatArray, lower: FloatArray, diagonal: FloatArray) -> FloatArray:
    """M x M matrix with upper-triangle values, the mirrored lower triangle, and a diagonal."""
    size = len(diagonal)
    matrix = np.diag(diagonal)
    rows, columns = np.triu_indices(size, k=1)
    matrix[rows, columns] = upper
    matrix[columns, rows] = lower
    return matrix


def _excludes_zero(low: FloatArray, high: FloatArray) -> BoolArray:
    # Comparisons with NaN are False, so an interval that could not be computed is not significant.
    return (low > 0) | (high < 0)


def _intervals_overlap(estimates: Estimates, first: int, second: int) -> bool:
    return bool(
        estimates.cmp_low[first] <= estimates.cmp_high[second]
        and estimates.cmp_low[second] <= estimates.cmp_high[first]
    )


def _as_scores(scores: npt.ArrayLike) -> FloatArray:
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 3:
        raise ValueError(f"scores must be [models, scenarios, cells], got shape {values.shape}")
    return values


def _as_counts(counts: npt.ArrayLike, n_scenarios: int) -> npt.NDArray[np.integer]:
    draws = np.asarray(counts)
    if draws.ndim != 2 or draws.shape[1] != n_scenarios:
        raise ValueError(f"counts must be [resamples, {n_scenarios}], got shape {draws.shape}")
    if not np.issubdtype(draws.dtype, np.integer) or np.any(draws < 0):
        raise ValueError("counts must be non-negative integers")
    if np.any(draws.sum(axis=1) == 0):
        raise ValueError("every row of counts must draw at least one scenario")
    return draws


def _as_reference(reference: npt.ArrayLike, n_scenarios: int) -> FloatArray:
    target = np.asarray(reference, dtype=np.float64)
    if target.shape != (n_scenarios,):
        raise ValueError(f"reference must have shape ({n_scenarios},), got {target.shape}")
    return target
