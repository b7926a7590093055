"""Fixed-seed figures of the ranking statistics, stored so that a faster implementation can be
held to the published numbers (`test_statistics_reference.py`).

The data are the benchmarks' own (bench/stats.py's generator) at a few shapes, plus shapes that
take the fit's rarer paths: a model without any score, a model that shares no cell with the
others (its own group), and few scenarios. `python -m audits_app.tests.statistics_reference
--write` stores today's figures; do that only for a deliberate change of the method, never to
make a speed-up pass.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from audits_app.statistics import (
    condition_difference,
    leaderboard,
    refusal_rates,
    resample_counts,
    versus_reference,
)
from bench.stats import make_scores  # the benchmark's data, so its figures are the ones kept

REFERENCE = Path(__file__).parent / "data" / "statistics_reference.npz"
LEVEL = 0.95


def awkward_scores(seed: int) -> np.ndarray:
    """Eight models on twelve scenarios: one without data, one alone in cells no one else has."""
    scores = make_scores(8, 12, 6, seed)
    scores[6] = np.nan
    scores[7] = np.nan
    scores[:7, :, 5] = np.nan  # cell 5 belongs to model 7 alone: a group of its own
    scores[7, :4, 5] = 0.25 + np.arange(4) * 0.1
    scores[3, :9] = np.nan  # a model in three scenarios only
    return scores


def shapes() -> dict[str, tuple[np.ndarray, int]]:
    """name -> (scores, seed of the resample counts)."""
    return {
        "bench": (make_scores(12, 30, 6, 20250101), 20250101),
        "wide": (make_scores(40, 20, 8, 7), 8),
        "few": (make_scores(5, 4, 3, 11), 12),
        "awkward": (awkward_scores(5), 6),
    }


def figures() -> dict[str, np.ndarray]:
    """Every array the public functions return, keyed shape/function/method/field."""
    result: dict[str, np.ndarray] = {}
    for name, (scores, seed) in shapes().items():
        counts = resample_counts(scores.shape[1], 1500, seed)
        for method in ("expanded_t", "expanded_percentile", "percentile"):
            for rule in ("paired", "classes"):
                board = leaderboard(scores, counts, LEVEL, rule=rule, method=method)
                prefix = f"{name}/leaderboard/{rule}/{method}"
                result[f"{prefix}/ranks"] = board.ranks
                for field in ("point", "abs_low", "abs_high", "cmp_low", "cmp_high", "coverage",
                              "scenarios"):
                    result[f"{prefix}/estimates.{field}"] = getattr(board.estimates, field)
                for field in ("diff", "low", "high", "significant"):
                    result[f"{prefix}/pairwise.{field}"] = getattr(board.pairwise, field)
            shifted = scores + np.linspace(-0.2, 0.2, scores.shape[2])
            change = condition_difference(scores, shifted, counts, LEVEL, method=method)
            for field in ("point", "low", "high", "significant"):
                result[f"{name}/condition_difference/{method}/{field}"] = getattr(change, field)
            reference = np.nanmean(scores, axis=(0, 2)) + 0.1
            versus = versus_reference(scores, reference, counts, LEVEL, method=method)
            for field in ("per_scenario_diff", "point", "low", "high", "significant",
                          "share_above", "share_low", "share_high"):
                result[f"{name}/versus_reference/{method}/{field}"] = getattr(versus, field)
            refused = np.where(np.isnan(scores), np.nan, (scores > 1.0).astype(float))
            rates = refusal_rates(refused, counts, LEVEL, method=method)
            for field in ("point", "low", "high"):
                result[f"{name}/refusal_rates/{method}/{field}"] = getattr(rates, field)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store today's figures")
    if not parser.parse_args().write:
        parser.error("nothing to do without --write")
    np.savez_compressed(REFERENCE, **figures())
    print(f"wrote {REFERENCE}", file=sys.stderr)


if __name__ == "__main__":
    main()
