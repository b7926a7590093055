"""The faster statistics publish the figures the earlier implementation published.

`statistics_reference.py` stored every array the public functions returned on fixed seeds before
the statistics were made to scale (blocks on every core, the t interval of complete rows from the
counts' covariance). Integer and boolean figures (ranks, classes, significance, scenario counts)
must match exactly; points and intervals to 1e-9, since a different order of the same sums may
move the last bit.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from audits_app.statistics.arrays import blas_controller, map_blocks
from audits_app.tests.statistics_reference import REFERENCE, figures

TOLERANCE = 1e-9


@pytest.fixture(scope="module")
def stored() -> dict[str, np.ndarray]:
    with np.load(REFERENCE) as archive:
        return {key: archive[key] for key in archive.files}


@pytest.fixture(scope="module")
def today() -> dict[str, np.ndarray]:
    return figures()


def test_it_computes_every_stored_figure(stored, today):
    assert sorted(today) == sorted(stored)


def test_it_keeps_ranks_significance_and_counts_exactly(stored, today):
    exact = [key for key, value in stored.items() if value.dtype.kind in "biu"]
    assert any(key.endswith("/ranks") for key in exact)
    changed = [key for key in exact if not np.array_equal(today[key], stored[key])]
    assert changed == []


def test_it_keeps_points_and_intervals_within_1e_9(stored, today):
    floats = [key for key, value in stored.items() if value.dtype.kind == "f"]
    assert len(floats) > 100
    gaps = {}
    for key in floats:
        assert np.array_equal(np.isnan(today[key]), np.isnan(stored[key])), key
        gap = np.nanmax(np.abs(today[key] - stored[key]), initial=0.0)
        if gap > TOLERANCE:
            gaps[key] = gap
    assert gaps == {}


def test_the_reference_takes_the_fits_rare_paths(stored):
    # A model without data and a model alone in its cells: NaN points and a group of its own.
    point = stored["awkward/leaderboard/paired/expanded_t/estimates.point"]
    assert np.isnan(point[6]) and not np.isnan(point[7])


def test_blocks_keep_their_order_whatever_finishes_first():
    def slow_first(start: int) -> int:
        time.sleep(0.05 if start == 0 else 0.0)
        return start

    assert map_blocks(slow_first, range(0, 40, 4)) == list(range(0, 40, 4))


def test_blocks_run_on_one_blas_thread_in_every_blas_the_statistics_load():
    # The controller is found once; a fresh look now (numpy's and scipy's BLAS both loaded)
    # must find no library it misses, and within map_blocks each runs on one thread.
    from threadpoolctl import ThreadpoolController

    def blas(controller: ThreadpoolController) -> set[str]:
        return {lib.filepath for lib in controller.select(user_api="blas").lib_controllers}

    assert blas(ThreadpoolController()) <= blas(blas_controller())
    threads = map_blocks(lambda _: {lib["num_threads"] for lib in ThreadpoolController().select(
        user_api="blas").info()}, [0])
    assert threads == [{1}]
