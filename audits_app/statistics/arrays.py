"""NaN-aware array helpers and shared types of the statistics package.

Missing data is normal here (refusals, unscored texts), so these never warn on an empty slice:
an undefined value is NaN.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# Bootstrap values held at once per array (rows x B float64, or resamples x M x M for the fit).
# 32 MB keeps 50 models x 10,000 resamples far below 1 GB, while blocks stay large enough for
# BLAS to be fast.
BLOCK_BYTES = 32 * 2**20


def nanmean(values: FloatArray, axis: int) -> FloatArray:
    """np.nanmean without the warning for all-NaN slices."""
    observed = ~np.isnan(values)
    totals = np.where(observed, values, 0.0).sum(axis=axis)
    return divide_or_nan(totals, observed.sum(axis=axis).astype(np.float64))


def divide_or_nan(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    result = np.full(np.shape(numerator), np.nan)
    return np.divide(numerator, denominator, out=result, where=denominator > 0)


def divide_or_zero(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    result = np.zeros(np.shape(numerator))
    return np.divide(numerator, denominator, out=result, where=denominator > 0)
