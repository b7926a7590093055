"""Benchmark of the ranking statistics (audits_app/statistics/); no Django needed.

    .venv/bin/python bench/stats.py [--models 50 --scenarios 100 --cells 12 --resamples 10000]

Times `leaderboard(...)` (paired ranks over all pairs, plus the additive fit's points with
absolute and comparison intervals, all with the expanded t interval) on random data with ~5 %
missing cells, reports peak memory, and compares the pairs with a naive version that loops over
resamples in Python (each resample drawn literally with np.repeat, numpy inside the loop). The
naive version runs on fewer resamples and is extrapolated linearly, since its cost is one
iteration per resample (`--naive-resamples 0` skips it: at 200 models its pair array alone
takes 3 GB). Target: under 5 s and 1 GB on two cores at 200 models x 200 scenarios x 48 cells
with B = 10,000. The CPU seconds are printed beside the wall time, since on a shared machine the
wall time also measures the neighbours. It also times a small release's leaderboard with the
loaded BLAS libraries found anew in every `map_blocks` call (`threadpool_limits`, as before)
and with the controller found once per process (`blas_controller`).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

# Run as a plain script from anywhere: make the project root importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audits_app.statistics import (  # noqa: E402
    expanded_t_multiplier,
    leaderboard,
    resample_counts,
)
from audits_app.statistics.arrays import blas_controller  # noqa: E402

LEVEL = 0.95
MB = 2**20


def make_scores(models: int, scenarios: int, cells: int, seed: int) -> np.ndarray:
    """Scores with a spread of true model means, per-scenario difficulty and ~5 % NaN."""
    rng = np.random.default_rng(seed)
    model_effect = np.linspace(0.0, 1.0, models)[:, None, None]
    scenario_effect = rng.normal(scale=0.5, size=(1, scenarios, 1))
    scores = model_effect + scenario_effect + rng.normal(size=(models, scenarios, cells))
    scores[rng.random(scores.shape) < 0.05] = np.nan
    return scores


def time_leaderboard(scores: np.ndarray, counts: np.ndarray, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `leaderboard`; the first call also warms up BLAS."""
    timings, processor = [], []
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        leaderboard(scores, counts, LEVEL)
        timings.append(time.perf_counter() - start)
        processor.append(time.process_time() - cpu_start)
    return statistics.median(timings), statistics.median(processor)


def traced_peak(scores: np.ndarray, counts: np.ndarray) -> float:
    """Peak bytes allocated during one `leaderboard` call (tracemalloc sees numpy's buffers)."""
    tracemalloc.start()
    leaderboard(scores, counts, LEVEL)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def naive_leaderboard(scores: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """Pair intervals (and plain-mean bootstraps) with a Python loop over resamples."""
    with warnings.catch_warnings():
        # nanmean of an empty slice (a pair with no shared cell) warns; NaN is the intended result.
        warnings.simplefilter("ignore", RuntimeWarning)
        pair_means = _naive_pair_scenario_means(scores)
        model_means = np.nanmean(scores, axis=2)
        deviation_means = np.nanmean(scores - np.nanmean(scores, axis=0), axis=2)
        pair_boot, model_boot, deviation_boot = [], [], []
        for row in counts:  # the loop the vectorised version avoids
            drawn = np.repeat(np.arange(len(row)), row)
            pair_boot.append(np.nanmean(pair_means[:, :, drawn], axis=2))
            model_boot.append(np.nanmean(model_means[:, drawn], axis=1))
            deviation_boot.append(np.nanmean(deviation_means[:, drawn], axis=1))
        return {
            "pair": _naive_interval(np.nanmean(pair_means, axis=2), np.array(pair_boot),
                                    (~np.isnan(pair_means)).sum(axis=2)),
            "model": np.nanstd(np.array(model_boot), axis=0, ddof=1),
            "deviation": np.nanstd(np.array(deviation_boot), axis=0, ddof=1),
        }


def _naive_interval(point: np.ndarray, boot: np.ndarray, scenarios: np.ndarray) -> np.ndarray:
    """point -/+ t(n - 1) sqrt(n / (n - 1)) sd(boot): the module's expanded t interval."""
    half_width = expanded_t_multiplier(scenarios, LEVEL) * np.nanstd(boot, axis=0, ddof=1)
    return np.stack([point - half_width, point + half_width])


def _naive_pair_scenario_means(scores: np.ndarray) -> np.ndarray:
    """[M, M, S] mean over shared cells of (i - j); NaN propagates where either is missing."""
    return np.nanmean(scores[:, None] - scores[None, :], axis=3)


def check_agreement(scores: np.ndarray, counts: np.ndarray) -> float:
    """Largest gap between naive and vectorised pair intervals: shows both compute the same."""
    board = leaderboard(scores, counts, LEVEL)
    naive = naive_leaderboard(scores, counts)
    gaps = [naive["pair"][0] - board.pairwise.low, naive["pair"][1] - board.pairwise.high]
    return float(np.nanmax(np.abs(gaps)))


def leaderboard_ms_found_anew_and_once(scores: np.ndarray, counts: np.ndarray,
                                       repeats: int = 20) -> tuple[float, float]:
    """Milliseconds per leaderboard with the BLAS libraries found anew in every map_blocks
    call (what threadpool_limits does, as before) and with the controller found once."""
    from threadpoolctl import ThreadpoolController

    from audits_app.statistics import arrays

    timings = []
    for found in (ThreadpoolController, blas_controller):
        kept, arrays.blas_controller = arrays.blas_controller, found
        try:
            leaderboard(scores, counts, LEVEL)
            start = time.perf_counter()
            for _ in range(repeats):
                leaderboard(scores, counts, LEVEL)
            timings.append((time.perf_counter() - start) * 1000 / repeats)
        finally:
            arrays.blas_controller = kept
    return timings[0], timings[1]


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--scenarios", type=int, default=100)
    parser.add_argument("--cells", type=int, default=12)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--naive-resamples", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20250101)
    return parser.parse_args()


def main() -> None:
    arguments = parse_arguments()
    scores = make_scores(arguments.models, arguments.scenarios, arguments.cells, arguments.seed)
    counts = resample_counts(arguments.scenarios, arguments.resamples, arguments.seed)
    print(
        f"data: {arguments.models} models x {arguments.scenarios} scenarios x "
        f"{arguments.cells} cells, {np.isnan(scores).mean():.1%} missing, "
        f"{arguments.resamples} resamples, {os.cpu_count()} cores"
    )
    seconds, cpu_seconds = time_leaderboard(scores, counts, arguments.repeats)
    peak = traced_peak(scores, counts)
    print(
        f"leaderboard: {seconds:.2f} s (median of {arguments.repeats}; {cpu_seconds:.2f} CPU s), "
        f"peak {peak / MB:.0f} MB"
    )
    # ru_maxrss is in KiB on Linux; it includes the interpreter, numpy and the input data.
    print(f"process max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    small = make_scores(4, 8, 12, arguments.seed)
    anew, once = leaderboard_ms_found_anew_and_once(small, resample_counts(8, 1000, arguments.seed))
    print(f"a small release's leaderboard (4 models x 8 scenarios x 12 cells, 1000 resamples): "
          f"{anew:.1f} ms with the BLAS libraries found anew per block map, {once:.1f} ms "
          f"found once ({anew / once:.1f}x)")

    if arguments.naive_resamples == 0:
        return
    few = counts[: arguments.naive_resamples]
    start = time.perf_counter()
    naive_leaderboard(scores, few)
    naive_seconds = (time.perf_counter() - start) * arguments.resamples / len(few)
    print(f"naive loop: {naive_seconds:.2f} s (extrapolated from {len(few)} resamples)")
    print(f"naive / vectorised: {naive_seconds / seconds:.0f}x")
    print(f"max |naive - vectorised| on pair intervals: {check_agreement(scores, few):.1e}")


if __name__ == "__main__":
    main()
