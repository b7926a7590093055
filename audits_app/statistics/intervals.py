"""Intervals from the cluster bootstrap that hold their level with few scenarios.

Every interval the package returns (absolute, comparison, pairs, condition differences, versus a
reference, rates, and so the classes) is

    estimate -/+ t(n - 1, (1 + level) / 2) * sqrt(n / (n - 1)) * sd(bootstrap values)

with n the number of scenarios that inform it (where the model has data, or the pair shares a
cell, ...). The plain percentile interval of a cluster mean is about estimate -/+ z * s' / sqrt(n)
with s' the scenario spread computed with divisor n: too narrow twice over with few scenarios
(14 % of equal pairs declared different at 6 scenarios, 12 % at 8, at a nominal 5 %). Hesterberg
(2015, "What Teachers Should Know About the Bootstrap", The American Statistician 69:371-386,
arXiv:1411.5279) corrects both factors; his `resample` R package offers the correction on the
percentiles (`ExpandProbs`, the expanded percentile interval) and on the standard error
(`CI.t(expand = TRUE)`, used here). The expanded percentile interval cannot reach beyond the most
extreme scenario values, so at 6 scenarios it still declares about 7 % of equal pairs different;
the t form holds 5 % at every S, and for a mean of scenario values it is, as B grows, exactly the
paired t-test on scenario means, so it loses no power to it (bench/coverage.py measures both).
A studentised (bootstrap-t) interval would need a standard error inside every resample, which
the additive fit has no cheap formula for, and is erratic with few clusters; a double bootstrap
costs B^2 fits. The price: intervals are symmetric; rates and shares are clipped to [0, 1]. With
fewer than two scenarios there is no interval (NaN). The plain and the expanded percentile
intervals stay available as methods "percentile" and "expanded_percentile", so that the benchmark
and the tests can show what they get wrong; releases use the default, "expanded_t".
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from audits_app.statistics.arrays import (
    BLOCK_BYTES,
    BoolArray,
    FloatArray,
    divide_or_nan,
    map_blocks,
)

INTERVAL_METHODS: tuple[str, ...] = ("expanded_t", "expanded_percentile", "percentile")


def cluster_point(means: FloatArray, present: BoolArray) -> FloatArray:
    """Mean over present scenarios of each row of means[N, S]; NaN for a row with none."""
    totals = np.where(present, means, 0.0).sum(axis=1)
    return divide_or_nan(totals, present.sum(axis=1).astype(np.float64))


def cluster_interval(
    means: FloatArray, present: BoolArray, counts: npt.NDArray[np.integer], level: float,
    method: str,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(point, low, high) of the scenario-weighted mean of each row of means[N, S].

    For every resample at once: numerator counts @ (means * present).T, denominator
    counts @ present.T. Rows are processed in blocks so that only a block x B array exists per
    thread (`arrays.map_blocks`). Under the t interval, rows with data in every scenario need no
    bootstrap values at all (`_linear_spread`).
    """
    point = cluster_point(means, present)
    scenarios = present.sum(axis=1)
    values = np.where(present, means, 0.0)
    low, high = np.full(len(means), np.nan), np.full(len(means), np.nan)
    linear = np.zeros(len(means), dtype=bool)
    if method == "expanded_t":
        linear = _linear_rows(present, counts)
    if linear.any():
        spread = _linear_spread(values[linear], counts)
        low[linear], high[linear] = _t_interval(point[linear], spread, scenarios[linear], level)
    rest = np.flatnonzero(~linear)
    draws = counts.T.astype(np.float64)  # float so that the products run in BLAS
    weights = present.astype(np.float64)
    step = max(1, BLOCK_BYTES // (8 * counts.shape[0]))

    def block(start: int) -> tuple[FloatArray, FloatArray]:
        rows = rest[start:start + step]
        resampled = resampled_means(values[rows], weights[rows], draws)
        return interval(point[rows], resampled, scenarios[rows], level, method)

    starts = range(0, len(rest), step)  # blocks of rows, never single resamples
    for start, (block_low, block_high) in zip(starts, map_blocks(block, starts), strict=True):
        rows = rest[start:start + step]
        low[rows], high[rows] = block_low, block_high
    return point, low, high


def _linear_rows(present: BoolArray, counts: npt.NDArray[np.integer]) -> BoolArray:
    """Rows whose resampled mean is linear in the counts: data in every scenario, and every
    resample drawing the same number of scenarios (as `resample_counts` does), so that the
    denominator is that number whatever is drawn."""
    sums = counts.sum(axis=1)
    if len(counts) < 2 or np.any(sums != sums[0]):
        return np.zeros(len(present), dtype=bool)
    return present.all(axis=1)


def _linear_spread(values: FloatArray, counts: npt.NDArray[np.integer]) -> FloatArray:
    """Standard deviation over the resamples of values @ counts[b] / n, without the B values.

    The variance of a linear function of the counts over the B resamples is the quadratic form of
    their sample covariance C[S, S]: var_b(x . c_b / n) = x^T C x / n^2 (the same divisor B - 1
    as `_row_sd`). So one S x S matrix, shared by every row, replaces a rows x B product: the
    figures are the ones the bootstrap values give, up to rounding (within 1e-12 on the
    benchmarks' data; test_statistics_reference.py holds them to 1e-9). Every row of counts sums
    to n, so C 1 = 0, and centring each row of values first removes its constant part exactly,
    which keeps the rounding of a large mean out of a small spread.
    """
    draws = counts.astype(np.float64)
    centred_draws = draws - draws.mean(axis=0)
    covariance = (centred_draws.T @ centred_draws) / (len(draws) - 1)
    centred = values - values.mean(axis=1, keepdims=True)
    variance = np.einsum("rs,rs->r", centred @ covariance, centred)
    return np.sqrt(np.maximum(variance, 0.0)) / float(draws[0].sum())


def resampled_means(values: FloatArray, weights: FloatArray, draws: FloatArray) -> FloatArray:
    """[rows, B] resampled means; NaN where a row has no drawn scenario with data.

    A row that weighs every scenario 1 (most rows: pairs share a cell in nearly every scenario)
    has the resample's total count as its denominator, the same integer the product would give,
    so only the other rows pay for the second product.
    """
    totals = values @ draws
    complete = (weights == 1.0).all(axis=1)
    sizes = np.empty_like(totals)
    sizes[complete] = draws.sum(axis=0)
    if not complete.all():
        sizes[~complete] = weights[~complete] @ draws
    empty = sizes == 0
    sizes[empty] = 1.0  # avoids 0/0 warnings; these entries are set to NaN just below
    totals /= sizes
    totals[empty] = np.nan
    return totals


def interval(
    point: FloatArray, resampled: FloatArray, scenarios: npt.NDArray[np.integer], level: float,
    method: str,
) -> tuple[FloatArray, FloatArray]:
    """Interval of each row from its bootstrap values resampled[rows, B] (module docstring)."""
    if method == "percentile":
        return _percentile_rows(resampled, level)
    if method == "expanded_percentile":
        return _expanded_percentile_rows(resampled, scenarios, level)
    return _t_interval(point, _row_sd(resampled), scenarios, level)


def _t_interval(
    point: FloatArray, spread: FloatArray, scenarios: npt.NDArray[np.integer], level: float
) -> tuple[FloatArray, FloatArray]:
    """point -/+ the expanded t multiplier times the bootstrap standard error (module docstring)."""
    half_width = expanded_t_multiplier(scenarios, level) * spread
    return point - half_width, point + half_width


def expanded_t_multiplier(scenarios: npt.ArrayLike, level: float) -> FloatArray:
    """t(n - 1, (1 + level) / 2) * sqrt(n / (n - 1)) per n; NaN for n < 2 (no interval).

    Times the bootstrap standard error this is the half-width of every interval (module
    docstring): the t quantile for n - 1 degrees of freedom replaces the normal one, and
    sqrt(n / (n - 1)) undoes the bootstrap's divisor n in the scenarios' variance.
    """
    n = np.asarray(scenarios, dtype=np.int64)
    multiplier = np.full(n.shape, np.nan)
    for size in np.unique(n[n >= 2]):  # a handful of distinct scenario counts
        df = int(size) - 1
        multiplier[n == size] = student_t_quantile(level, df) * math.sqrt(size / df)
    return multiplier


@functools.lru_cache(maxsize=4096)
def student_t_quantile(level: float, df: int) -> float:
    """t with P(|T| <= t) = level for Student's t with integer df >= 1.

    numpy has no t distribution and the package stays free of scipy; for integer df the central
    probability has a closed form (Abramowitz and Stegun 26.7.3 and 26.7.4) in theta = atan(t /
    sqrt(df)), increasing in theta, so bisection on theta in [0, pi / 2) gives t to machine
    precision (the tests compare with scipy.stats.t.ppf). Cached: every block of every interval
    asks for the same few quantiles.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    check_level(level)
    low, high = 0.0, math.pi / 2
    for _ in range(100):  # halves the bracket each time: far past double precision
        middle = (low + high) / 2
        if _t_central_probability(middle, df) < level:
            low = middle
        else:
            high = middle
    return math.sqrt(df) * math.tan((low + high) / 2)


def _t_central_probability(theta: float, df: int) -> float:
    """P(|T| <= sqrt(df) tan(theta)) for integer df (Abramowitz and Stegun 26.7.3-4)."""
    cosine, sine = math.cos(theta), math.sin(theta)
    squared = cosine * cosine
    if df % 2 == 0:  # sin(theta) (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ... up to cos^(df-2))
        term, total = 1.0, 1.0
        for j in range(1, df // 2):
            term *= squared * (2 * j - 1) / (2 * j)
            total += term
        return sine * total
    # odd: 2/pi (theta + sin(theta) (cos + 2/3 cos^3 + 2*4/(3*5) cos^5 + ... up to cos^(df-2)))
    series, term = 0.0, cosine
    for j in range(1, (df - 1) // 2 + 1):
        if j > 1:
            term *= squared * (2 * j - 2) / (2 * j - 1)
        series += term
    return 2 / math.pi * (theta + sine * series)


def student_t_p_value(statistic: npt.ArrayLike, df: npt.ArrayLike) -> FloatArray:
    """Two-sided P(|T| >= |statistic|) for Student's t with integer df >= 1; NaN for df < 1.

    The closed form of `_t_central_probability`, with arrays in place of scalars: one pass per
    term of the series, for each distinct df (a handful).
    """
    values = np.abs(np.asarray(statistic, dtype=np.float64))
    freedom = np.broadcast_to(np.asarray(df, dtype=np.int64), values.shape)
    result = np.full(values.shape, np.nan)
    for size in np.unique(freedom[freedom >= 1]):
        rows = (freedom == size) & ~np.isnan(values)
        theta = np.arctan(values[rows] / math.sqrt(size))
        result[rows] = 1.0 - _t_central_probabilities(theta, int(size))
    return np.clip(result, 0.0, 1.0)


def _t_central_probabilities(theta: FloatArray, df: int) -> FloatArray:
    """`_t_central_probability` for an array of theta."""
    cosine, sine = np.cos(theta), np.sin(theta)
    squared = cosine * cosine
    if df % 2 == 0:
        term, total = np.ones_like(theta), np.ones_like(theta)
        for j in range(1, df // 2):
            term = term * squared * (2 * j - 1) / (2 * j)
            total += term
        return sine * total
    series, term = np.zeros_like(theta), cosine
    for j in range(1, (df - 1) // 2 + 1):
        if j > 1:
            term = term * squared * (2 * j - 2) / (2 * j - 1)
        series += term
    return 2 / math.pi * (theta + sine * series)


def _expanded_percentile_rows(
    resampled: FloatArray, scenarios: npt.NDArray[np.integer], level: float
) -> tuple[FloatArray, FloatArray]:
    """Hesterberg's expanded percentile interval: percentiles at a level widened per n.

    The level whose normal quantile, times sqrt((n - 1) / n), is t(n - 1, (1 + level) / 2)
    (`ExpandProbs` in Hesterberg's resample package). Kept for comparison (module docstring).
    """
    low, high = np.full(len(resampled), np.nan), np.full(len(resampled), np.nan)
    for size in np.unique(scenarios[scenarios >= 2]):  # a handful of distinct scenario counts
        rows = scenarios == size
        widened = expanded_t_multiplier(np.array([size]), level)[0]
        expanded_level = math.erf(widened / math.sqrt(2))  # P(|Z| <= widened)
        low[rows], high[rows] = _percentile_rows(resampled[rows], expanded_level)
    return low, high


def _row_sd(resampled: FloatArray) -> FloatArray:
    """Standard deviation (divisor count - 1) of each row over its non-NaN entries; NaN if < 2."""
    observed = ~np.isnan(resampled)
    if observed.all():  # the usual block: the same sums without masking, in place
        sizes = np.full(len(resampled), float(resampled.shape[1]))
        mean = divide_or_nan(resampled.sum(axis=1), sizes)
        centred = resampled - mean[:, np.newaxis]
        np.multiply(centred, centred, out=centred)
    else:
        sizes = observed.sum(axis=1).astype(np.float64)
        mean = divide_or_nan(np.where(observed, resampled, 0.0).sum(axis=1), sizes)
        centred = np.where(observed, resampled - mean[:, np.newaxis], 0.0)
        centred *= centred
    variance = divide_or_nan(centred.sum(axis=1), sizes - 1)
    return np.sqrt(variance)


def _percentile_rows(resampled: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    """Plain percentile interval of each row, ignoring NaN resamples; NaN for an all-NaN row."""
    fractions = [(1 - level) / 2, (1 + level) / 2]
    low, high = np.full(len(resampled), np.nan), np.full(len(resampled), np.nan)
    observed = ~np.isnan(resampled)
    complete = observed.all(axis=1)
    # np.quantile partitions, which is far faster than np.nanpercentile's per-row Python loop;
    # the few rows with missing resamples take the masked path instead.
    if complete.any():
        low[complete], high[complete] = np.quantile(resampled[complete], fractions, axis=1)
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


def check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")


def check_method(method: str) -> None:
    if method not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {method!r}; expected one of {INTERVAL_METHODS}")
