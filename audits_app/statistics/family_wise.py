"""A family-wise rule for the pairs, chosen by a release file (`pair_correction: holm`).

Under the release's default rule every pair is tested at the release's level on its own, so
with many models some equal pair is nearly always "demonstrably" different (the published
error rates show how often). Holm's step-down method (Holm 1979) holds the chance of any false
difference among the ranked models' pairs at 1 - level instead: the pairs' p-values in
ascending order, the k-th of m rejected while it and every smaller one are at most
(1 - level) / (m - k + 1).

A pair's p-value is the one its interval inverts: the interval is diff -/+ t(n - 1) *
sqrt(n / (n - 1)) * sd (`intervals`), so the statistic is |diff| / (sqrt(n / (n - 1)) * sd),
referred to Student's t with n - 1 degrees of freedom; without a correction, "the interval
excludes zero" and "p < 1 - level" are the same decision.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from audits_app.statistics.arrays import BoolArray, FloatArray
from audits_app.statistics.intervals import expanded_t_multiplier, student_t_p_value

PAIR_CORRECTIONS: tuple[str, ...] = ("none", "holm")


def pair_p_values(point: FloatArray, low: FloatArray, high: FloatArray,
                  scenarios: npt.ArrayLike, level: float) -> FloatArray:
    """Two-sided p-values of differences with expanded t intervals [low, high] from n
    scenarios; NaN where there is no interval, 0 for a zero-width one that excludes zero."""
    n = np.asarray(scenarios, dtype=np.int64)
    half = (np.asarray(high) - np.asarray(low)) / 2
    spread = half / expanded_t_multiplier(n, level) * np.sqrt(np.where(n > 1, n / (n - 1), 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.abs(point) / spread
    statistic = np.where((spread == 0) & (np.abs(point) == 0), 0.0, statistic)
    return student_t_p_value(statistic, n - 1)


def holm_rejected(p_values: npt.ArrayLike, level: float) -> BoolArray:
    """Holm's step-down decisions along the last axis (one family per row); NaN is never
    rejected and not counted in the family's size."""
    values = np.asarray(p_values, dtype=np.float64)
    missing = np.isnan(values)
    family = (~missing).sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(missing, np.inf, values), axis=-1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=-1)
    position = np.arange(values.shape[-1])
    with np.errstate(divide="ignore"):
        thresholds = (1 - level) / (family - position)
    passes = (ordered <= thresholds) & (position < family)
    rejected_in_order = np.cumprod(passes, axis=-1).astype(bool)
    rejected = np.zeros_like(rejected_in_order)
    np.put_along_axis(rejected, order, rejected_in_order, axis=-1)
    return rejected
