"""Ranking statistics for a release (DESIGN.md section 6).

Pure numpy: plain arrays in, frozen dataclasses of arrays out, no ORM, so the module can be tested
and benchmarked alone. Shapes used throughout:

    scores[M, S, K]   float; M models, S scenarios, K cells per scenario (task x condition
                      x variant); NaN where a model has no score for a cell (missing, refused,
                      unscored)
    counts[B, S]      int; how often each scenario is drawn in resample b (see `resample_counts`)

Estimates weight every scenario equally: a model's estimate is the mean, over the scenarios in which
it has any data, of its mean over that scenario's cells. A resample gives scenario s the weight
counts[b, s], which is the same as drawing whole scenarios with replacement (cluster bootstrap).

Intervals are percentile intervals of the bootstrap distribution: for level 0.95 the 2.5th and
97.5th percentiles, numpy's default "linear" interpolation. A resample in which a model (or a
pair, or a difference) has no scenario with data has no value; such resamples are dropped before
taking percentiles, as `np.nanpercentile` would, so an interval is conditional on the quantity
being observed. If no resample has a value the interval is NaN. Nothing here raises on missing
data: it shows up as NaN, as `False` for significance and as `UNRANKED` for ranks.

Memory: bootstrap values are materialised for a block of rows (models or model pairs) at a time,
never as a B x M x M array, each block about `_BLOCK_BYTES`. At 50 models, 100 scenarios and 10,000
resamples the peak is about 110 MB of numpy allocations (bench/stats.py measures it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
RankRule = Literal["paired", "classes"]

RANK_RULES: tuple[str, ...] = ("paired", "classes")
# Rank of a model with no data: it has no place, and 0 cannot be mistaken for one.
UNRANKED = 0
# Bootstrap values held at once per array (rows x B float64). 32 MB keeps the all-pairs bootstrap of
# 50 models x 10,000 resamples far below 1 GB, while blocks stay large enough for BLAS to be fast.
_BLOCK_BYTES = 32 * 2**20


@dataclass(frozen=True, eq=False)
class Estimates:
    """Per-model point estimates with absolute and comparison intervals (arrays of length M)."""

    point: FloatArray
    abs_low: FloatArray
    abs_high: FloatArray
    cmp_low: FloatArray
    cmp_high: FloatArray
    level: float


@dataclass(frozen=True, eq=False)
class Pairwise:
    """Differences row model minus column model (M x M), with percentile intervals."""

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
    """Per-model rate (e.g. refusals) with a percentile interval (arrays of length M)."""

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
    means = _nanmean(values, axis=2)
    return means, ~np.isnan(means)


def morey_factor(m: int) -> float:
    """sqrt(m / (m - 1)): corrects the spread of deviations from the mean of m models (Morey 2008).

    Subtracting the mean of m models removes part of each model's own variance; scaling the
    deviations by this factor restores it.
    """
    if m < 2:
        raise ValueError("the Morey factor needs at least 2 models")
    return float(np.sqrt(m / (m - 1)))


def model_estimates(scores: npt.ArrayLike, counts: npt.ArrayLike, level: float) -> Estimates:
    """Point estimate, absolute interval and comparison interval per model.

    point       scenario-weighted mean (see the module docstring).
    abs_*       percentile interval of the bootstrap distribution of that mean.
    cmp_*       comparison interval (Morey 2008), for reading differences between models:

        dev[m, s, k] = scores[m, s, k] - mean over models present in cell (s, k)
        dev_point[m] = scenario-weighted mean of dev[m];  boot_dev[b, m] its bootstrap values
        cmp_low[m]   = point[m] + morey_factor(M') * (percentile(boot_dev[:, m], lo) - dev_point[m])
        cmp_high[m]  = point[m] + morey_factor(M') * (percentile(boot_dev[:, m], hi) - dev_point[m])

    where lo, hi = 50 * (1 -+ level) and M' is the number of models with any data (equal to M when
    every model has data): a model without data takes no part in the cell means. With fewer than
    two such models the comparison interval is NaN.
    """
    values = _as_scores(scores)
    draws = _as_counts(counts, values.shape[1])
    _check_level(level)
    means, present = scenario_means(values)
    point = _cluster_point(means, present)
    abs_low, abs_high = _bootstrap_interval(means, present, draws, level)
    cmp_low, cmp_high = _comparison_interval(values, point, draws, level)
    return Estimates(point, abs_low, abs_high, cmp_low, cmp_high, level)


def pairwise(scores: npt.ArrayLike, counts: npt.ArrayLike, level: float) -> Pairwise:
    """Differences between every pair of models on the cells both have (DESIGN.md section 6).

    diff[i, j]: per scenario the mean over shared cells of (i - j), then the mean over the
    scenarios with at least one shared cell. low/high: its percentile interval from the cluster
    bootstrap. significant: the interval excludes zero. diff is antisymmetric, so only pairs
    i < j are resampled and [j, i] is mirrored (percentiles of -x are minus the mirrored
    percentiles of x under linear interpolation). A pair with no shared cells is NaN and never
    significant; the diagonal is 0 (NaN for a model without data) and never significant.
    """
    values = _as_scores(scores)
    draws = _as_counts(counts, values.shape[1])
    _check_level(level)
    differences, shared = _pair_scenario_differences(values)
    upper = np.triu_indices(values.shape[0], k=1)
    point = _cluster_point(differences[upper], shared[upper])
    low, high = _bootstrap_interval(differences[upper], shared[upper], draws, level)
    diagonal = np.where(shared.any(axis=2).diagonal(), 0.0, np.nan)
    diff = _antisymmetric(point, -point, diagonal)
    low_matrix = _antisymmetric(low, -high, diagonal)
    high_matrix = _antisymmetric(high, -low, diagonal)
    return Pairwise(diff, low_matrix, high_matrix, _excludes_zero(low_matrix, high_matrix), level)


def paired_ranks(pairs: Pairwise, higher_is_better: bool = True) -> IntArray:
    """Rank = 1 + the number of models demonstrably better (DESIGN.md section 6).

    "Demonstrably better" means the pair is significant and the difference points the right way.
    Ties share a place: two models no one beats and who do not beat each other both rank 1, and a
    model both beat ranks 3. A model without data gets UNRANKED.
    """
    others_ahead = pairs.diff < 0 if higher_is_better else pairs.diff > 0
    beaten_by = (pairs.significant & others_ahead).sum(axis=1)
    has_data = ~np.isnan(pairs.diff.diagonal())
    return np.where(has_data, 1 + beaten_by, UNRANKED).astype(np.int64)


def rank_classes(estimates: Estimates, higher_is_better: bool = True) -> IntArray:
    """Rank classes from overlapping comparison intervals: the pilot.0 rule.

    Models are sorted by point estimate, best first (ties keep input order). The first model opens
    class 1 and leads it. Each next model joins the current class if its comparison interval
    overlaps the interval of the class's leader (endpoints touching counts as overlap); otherwise
    it opens the next class (2, 3, ...) and leads it. Only the leader is compared, so overlap does
    not chain down the table. A model without a point estimate gets UNRANKED.
    """
    point = estimates.point
    order = np.argsort(-point if higher_is_better else point, kind="stable")  # NaN sorts last
    classes = np.full(point.shape, UNRANKED, dtype=np.int64)
    leader, current = -1, 0
    for model in order:  # a loop over models (tens), not over resamples
        if np.isnan(point[model]):
            break
        if leader < 0 or not _intervals_overlap(estimates, leader, model):
            leader, current = model, current + 1
        classes[model] = current
    return classes


def leaderboard(
    scores: npt.ArrayLike,
    counts: npt.ArrayLike,
    level: float,
    higher_is_better: bool = True,
    rule: RankRule = "paired",
) -> Leaderboard:
    """Estimates, all pairs and ranks for one measure; the rule is part of the release.

    rule "paired" ranks with `paired_ranks`, "classes" with `rank_classes` (pilot.0).
    """
    if rule not in RANK_RULES:
        raise ValueError(f"unknown ranking rule {rule!r}; expected one of {RANK_RULES}")
    estimates = model_estimates(scores, counts, level)
    pairs = pairwise(scores, counts, level)
    if rule == "paired":
        ranks = paired_ranks(pairs, higher_is_better)
    else:
        ranks = rank_classes(estimates, higher_is_better)
    return Leaderboard(estimates, pairs, ranks, rule, higher_is_better)


def condition_difference(
    scores_a: npt.ArrayLike, scores_b: npt.ArrayLike, counts: npt.ArrayLike, level: float
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
    _check_level(level)
    # NaN unless both are scored, which is what pairs the cells.
    means, present = scenario_means(first - second)
    low, high = _bootstrap_interval(means, present, draws, level)
    return Difference(_cluster_point(means, present), low, high, _excludes_zero(low, high), level)


def versus_reference(
    scores: npt.ArrayLike, reference: npt.ArrayLike, counts: npt.ArrayLike, level: float
) -> ReferenceComparison:
    """Compare each model's per-scenario mean with that scenario's own reference value.

    reference[S] is e.g. the control text's persuasion, or the no-text baseline. Returns
    per_scenario_diff[M, S] (NaN where the model or the reference is missing), the
    scenario-weighted mean difference with its bootstrap interval and significance, and the share
    of scenarios where the model is strictly above the reference, with its bootstrap interval.
    """
    values = _as_scores(scores)
    draws, target = _as_counts(counts, values.shape[1]), _as_reference(reference, values.shape[1])
    _check_level(level)
    means, _ = scenario_means(values)
    per_scenario = means - target[np.newaxis, :]
    compared = ~np.isnan(per_scenario)
    low, high = _bootstrap_interval(per_scenario, compared, draws, level)
    above = (per_scenario > 0).astype(np.float64)
    share_low, share_high = _bootstrap_interval(above, compared, draws, level)
    return ReferenceComparison(
        per_scenario_diff=per_scenario,
        point=_cluster_point(per_scenario, compared),
        low=low,
        high=high,
        significant=_excludes_zero(low, high),
        share_above=_cluster_point(above, compared),
        share_low=share_low,
        share_high=share_high,
        level=level,
    )


def refusal_rates(refused: npt.ArrayLike, counts: npt.ArrayLike, level: float) -> Rates:
    """Per-model refusal rate with a cluster-bootstrap interval.

    refused[M, S, K] holds 1 (refused), 0 (not refused) or NaN (no generation); a bool array is
    accepted when nothing is missing. Scenarios are weighted equally, like every other estimate.
    """
    values = _as_scores(refused)
    if np.any((values != 0) & (values != 1) & ~np.isnan(values)):
        raise ValueError("refused must hold only 0, 1 or NaN")
    draws = _as_counts(counts, values.shape[1])
    _check_level(level)
    means, present = scenario_means(values)
    low, high = _bootstrap_interval(means, present, draws, level)
    return Rates(_cluster_point(means, present), low, high, level)


# ---------------------------------------------------------------------------------------------
# Bootstrap machinery
# ---------------------------------------------------------------------------------------------


def _cluster_point(means: FloatArray, present: BoolArray) -> FloatArray:
    """Mean over present scenarios of each row of means[N, S]; NaN for a row with none."""
    totals = np.where(present, means, 0.0).sum(axis=1)
    return _divide_or_nan(totals, present.sum(axis=1).astype(np.float64))


def _bootstrap_interval(
    means: FloatArray, present: BoolArray, counts: npt.NDArray[np.integer], level: float
) -> tuple[FloatArray, FloatArray]:
    """Percentile interval of the resampled scenario-weighted mean of each row of means[N, S].

    For every resample at once: numerator counts @ (means * present).T, denominator
    counts @ present.T. Rows are processed in blocks so that only a block x B array exists.
    """
    draws = counts.T.astype(np.float64)  # float so that the products run in BLAS
    values = np.where(present, means, 0.0)
    weights = present.astype(np.float64)
    low, high = np.full(len(means), np.nan), np.full(len(means), np.nan)
    step = max(1, _BLOCK_BYTES // (8 * counts.shape[0]))
    for start in range(0, len(means), step):  # blocks of rows, never single resamples
        rows = slice(start, start + step)
        resampled = _resampled_means(values[rows], weights[rows], draws)
        low[rows], high[rows] = _percentile_rows(resampled, level)
    return low, high


def _resampled_means(values: FloatArray, weights: FloatArray, draws: FloatArray) -> FloatArray:
    """[rows, B] resampled means; NaN where a row has no drawn scenario with data."""
    totals = values @ draws
    sizes = weights @ draws
    empty = sizes == 0
    sizes[empty] = 1.0  # avoids 0/0 warnings; these entries are set to NaN just below
    totals /= sizes
    totals[empty] = np.nan
    return totals


def _percentile_rows(resampled: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    """Lower and upper percentile of each row, ignoring NaN resamples; NaN for an all-NaN row.

    `resampled` is a scratch array and may be reordered in place.
    """
    fractions = [(1 - level) / 2, (1 + level) / 2]
    low, high = np.full(len(resampled), np.nan), np.full(len(resampled), np.nan)
    observed = ~np.isnan(resampled)
    complete = observed.all(axis=1)
    # np.quantile partitions, which is far faster than np.nanpercentile's per-row Python loop;
    # the few rows with missing resamples take the masked path instead.
    if complete.all():
        low[:], high[:] = np.quantile(resampled, fractions, axis=1, overwrite_input=True)
    elif complete.any():
        low[complete], high[complete] = np.quantile(
            resampled[complete], fractions, axis=1, overwrite_input=True
        )
    partial = ~complete & observed.any(axis=1)
    if partial.any():
        low[partial], high[partial] = _masked_quantiles(
            resampled[partial], observed[partial], fractions
        )
    return low, high


def _masked_quantiles(
    resampled: FloatArray, observed: BoolArray, fractions: list[float]
) -> list[FloatArray]:
    """Linear-interpolation quantiles over the observed entries of each row (numpy's default)."""
    ordered = np.sort(np.where(observed, resampled, np.inf), axis=1)  # NaN slots sort last
    last = observed.sum(axis=1) - 1
    quantiles = []
    for fraction in fractions:
        position = fraction * last
        below = np.floor(position).astype(np.intp)
        above = np.minimum(below + 1, last)
        lower_value = np.take_along_axis(ordered, below[:, np.newaxis], axis=1)[:, 0]
        upper_value = np.take_along_axis(ordered, above[:, np.newaxis], axis=1)[:, 0]
        quantiles.append(lower_value + (upper_value - lower_value) * (position - below))
    return quantiles


def _comparison_interval(
    scores: FloatArray, point: FloatArray, counts: npt.NDArray[np.integer], level: float
) -> tuple[FloatArray, FloatArray]:
    """Morey comparison interval; the formula is in `model_estimates`."""
    deviations = scores - _nanmean(scores, axis=0)[np.newaxis]
    means, present = scenario_means(deviations)
    models_with_data = int(present.any(axis=1).sum())
    if models_with_data < 2:
        return np.full(point.shape, np.nan), np.full(point.shape, np.nan)
    deviation_point = _cluster_point(means, present)
    low, high = _bootstrap_interval(means, present, counts, level)
    factor = morey_factor(models_with_data)
    return point + factor * (low - deviation_point), point + factor * (high - deviation_point)


def _pair_scenario_differences(scores: FloatArray) -> tuple[FloatArray, BoolArray]:
    """D[i, j, s]: mean over cells of s scored for both i and j of (i - j); W[i, j, s]: any shared.

    mean(i - j) over shared cells equals (sum of i - sum of j) over those cells / their number,
    so one product over cells gives every pair at once.
    """
    observed = ~np.isnan(scores)
    filled = np.where(observed, scores, 0.0)
    mask = observed.astype(np.float64)
    shared_cells = np.einsum("isk,jsk->ijs", mask, mask)
    own_total = np.einsum("isk,jsk->ijs", filled, mask)  # i's sum over the cells it shares with j
    difference_total = own_total - own_total.transpose(1, 0, 2)
    return _divide_or_nan(difference_total, shared_cells), shared_cells > 0


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def _nanmean(values: FloatArray, axis: int) -> FloatArray:
    """np.nanmean without the warning for all-NaN slices (common here: missing data is normal)."""
    observed = ~np.isnan(values)
    totals = np.where(observed, values, 0.0).sum(axis=axis)
    return _divide_or_nan(totals, observed.sum(axis=axis).astype(np.float64))


def _divide_or_nan(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    result = np.full(np.shape(numerator), np.nan)
    return np.divide(numerator, denominator, out=result, where=denominator > 0)


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
    return draws


def _as_reference(reference: npt.ArrayLike, n_scenarios: int) -> FloatArray:
    target = np.asarray(reference, dtype=np.float64)
    if target.shape != (n_scenarios,):
        raise ValueError(f"reference must have shape ({n_scenarios},), got {target.shape}")
    return target


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
