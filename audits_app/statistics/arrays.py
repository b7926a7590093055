"""NaN-aware array helpers and shared types of the statistics package.

Missing data is normal here (refusals, unscored texts), so these never warn on an empty slice:
an undefined value is NaN.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# Bootstrap values held at once per array (rows x B float64, or resamples x M x M for the fit).
# 32 MB keeps 50 models x 10,000 resamples far below 1 GB, while blocks stay large enough for
# BLAS to be fast.
BLOCK_BYTES = 32 * 2**20

Result = TypeVar("Result")


def block_threads() -> int:
    """Threads that work on blocks at once: the cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)))


@functools.cache
def blas_controller() -> ThreadpoolController:
    """The thread pools of the libraries this process has loaded, found once: finding them walks
    every loaded shared library (about 2 ms), which took longer than the blocks' own work when
    it was done anew for each call. Both BLAS libraries the blocks use, numpy's and scipy's, are
    loaded before the first call (this package imports scipy.linalg), so none is missed."""
    return ThreadpoolController()


def map_blocks(work: Callable[[int], Result], starts: Iterable[int]) -> list[Result]:
    """work(start) for every block, in order, on one thread per core with one BLAS thread each.

    numpy releases the GIL in its element-wise loops, reductions and LAPACK calls, so blocks on
    separate threads use every core for the work BLAS would run on one (the sums and spreads of
    bootstrap values, the batched solves). One BLAS thread per block because OpenBLAS's own
    threads lose on small matrices (a 200 x 200 solve takes longer on two of them than on one)
    and spin when the cores are busy. Each block is computed exactly as it would be alone, so the
    results do not depend on the number of threads; blocks in flight are at most one per thread.
    """
    starts = list(starts)
    threads = min(block_threads(), len(starts))
    with blas_controller().limit(limits=1, user_api="blas"):
        if threads <= 1:
            return [work(start) for start in starts]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(work, starts))


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
