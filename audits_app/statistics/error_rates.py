"""The method's own error rates for one release's shape (DESIGN section 6).

A nominal 5 % per pair is not what a reader of a leaderboard meets: with ten equal models there
are 45 pairs, and most data sets show some "demonstrable" difference. So a release publishes
what its own rule does at its own size, simulated at publication:

    scores[m, s, k] = shift[m] + g[m, s] + e[m, s, k],   g, e independent standard normal,

on the release's models, scenarios and cells, with each model's cells missing where the
release's are (refused, unscored), ranked by the release's rule (`leaderboard`: its interval,
its level, its resample counts, its minimum of data and tolerance). Scenario and cell effects
are left out: every figure here is a difference between models on the same cells, which they
do not move. g is how a model's quality varies from scenario to scenario and e the text's own
noise; they get equal variance, since no release has enough scenarios to estimate the ratio.

- Under no difference (shift = 0): the false-difference share per pair (pairs of eligible models
  declared different, among all such pairs and data sets), the share of data sets with at least
  one false difference, and the expected number of models ranked below first.
- Under a one-SD difference: the first eligible model is better by one standard deviation of a
  model's scenario mean, sqrt(1 + 1 / K) with K the cells of a scenario; power is the share of
  its pairs with the other eligible models that are declared different in its favour.

A release that chose Holm's correction (`family_wise`) is simulated with it. Under the
"classes" rule a pair is declared different when the two models are in different
classes. Every data set is drawn from one seeded generator: the noise of all data sets first,
g then e (`simulated_noise`), and the same noise serves both hypotheses, so the published
table is frozen and can be recomputed exactly.

Speed: under the paired rule every pair of every data set is one row of a single
`cluster_interval` call, the same interval the leaderboard uses; the classes rule needs the
additive fit per data set and loops over data sets.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt

from audits_app import statistics
from audits_app.statistics.arrays import BoolArray, FloatArray, divide_or_nan
from audits_app.statistics.family_wise import holm_rejected, pair_p_values
from audits_app.statistics.intervals import cluster_interval

DATA_SETS = 400
# Pair-scenario values held at once while deciding a block of data sets (about 16 MB each).
_BLOCK_VALUES = 2_000_000


@dataclass(frozen=True)
class ErrorRates:
    """The method's simulated error rates for one shape, as published (plain floats)."""

    data_sets: int
    models: int  # eligible models, among which ranks are given
    scenarios: int
    cells: int  # per scenario
    rule: str
    level: float
    false_difference_per_pair: float
    any_false_difference: float
    expected_below_first: float
    power: float
    difference_sd: float  # the one-SD shift, in units of the text noise

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def simulated_noise(
    data_sets: int, shape: tuple[int, int, int], seed: int
) -> tuple[FloatArray, FloatArray]:
    """g[R, M, S] and e[R, M, S, K], drawn in that order from one seeded generator."""
    models, scenarios, cells = shape
    rng = np.random.default_rng(seed)
    per_scenario = rng.standard_normal((data_sets, models, scenarios))
    per_text = rng.standard_normal((data_sets, models, scenarios, cells))
    return per_scenario, per_text


def error_rates(
    observed: npt.ArrayLike, counts: npt.ArrayLike, level: float, rule: str,
    eligible: npt.ArrayLike, *, seed: int, data_sets: int = DATA_SETS, correction: str = "none",
) -> ErrorRates:
    """The table for a release whose scores are present where observed[M, S, K] is True."""
    mask = np.asarray(observed, dtype=bool)
    ranked = np.asarray(eligible, dtype=bool)
    draws = np.asarray(counts)
    if mask.ndim != 3:
        raise ValueError(f"observed must be [models, scenarios, cells], got {mask.shape}")
    if ranked.shape != mask.shape[:1]:
        raise ValueError(f"eligible must have one entry per model ({mask.shape[0]})")
    if rule not in statistics.RANK_RULES:
        raise ValueError(f"unknown ranking rule {rule!r}; expected one of {statistics.RANK_RULES}")
    per_scenario, per_text = simulated_noise(data_sets, mask.shape, seed)
    null = np.where(mask, per_scenario[..., np.newaxis] + per_text, np.nan)
    sd = float(np.sqrt(1.0 + 1.0 / max(1, mask.shape[2])))
    shifted_model = int(np.flatnonzero(ranked)[0]) if ranked.any() else 0
    alternative = null.copy()
    alternative[:, shifted_model] += sd
    if rule == "paired":
        null_different, null_ahead = _paired_decisions(null, draws, level, ranked, correction)
        alt_different, alt_ahead = _paired_decisions(alternative, draws, level, ranked,
                                                     correction)
    else:
        null_different, null_ahead = _class_decisions(null, draws, level, ranked)
        alt_different, alt_ahead = _class_decisions(alternative, draws, level, ranked)
    return _table(null_different, null_ahead, alt_different, alt_ahead, ranked, shifted_model,
                  mask.shape, rule if correction == "none" else f"{rule}, {correction}", level,
                  sd)


def _table(null_different: BoolArray, null_ahead: BoolArray, alt_different: BoolArray,
           alt_ahead: BoolArray, ranked: BoolArray, shifted: int, shape: tuple[int, ...],
           rule: str, level: float, sd: float) -> ErrorRates:
    """The four figures from decisions different[R, M, M] and ahead[R, M, M] (row ahead of
    column), over eligible models only."""
    pair = np.triu(np.outer(ranked, ranked), 1)
    data_sets = len(null_different)
    n_pairs = int(pair.sum())
    false = null_different & pair
    # Model i is below first when an eligible j is ahead of it and declared different.
    below_first = ((null_ahead & null_different).any(axis=2) & ranked).sum(axis=1)
    others = ranked.copy()
    others[shifted] = False
    # ahead[r, j, shifted]: the shifted model ahead of model j.
    found = (alt_different[:, :, shifted] & alt_ahead[:, :, shifted] & others).sum(axis=1)
    return ErrorRates(
        data_sets=data_sets, models=int(ranked.sum()), scenarios=shape[1], cells=shape[2],
        rule=rule, level=level,
        false_difference_per_pair=_share(false.sum(), data_sets * n_pairs),
        any_false_difference=_share(false.any(axis=(1, 2)).sum(), data_sets if n_pairs else 0),
        expected_below_first=float(below_first.mean()) if n_pairs else float("nan"),
        power=_share(found.sum(), data_sets * int(others.sum())), difference_sd=sd)


def _share(count: int, total: int) -> float:
    return float(count) / total if total else float("nan")


def _paired_decisions(scores: FloatArray, counts: npt.NDArray[np.integer], level: float,
                      ranked: BoolArray, correction: str) -> tuple[BoolArray, BoolArray]:
    """different[R, M, M] (the pair's interval excludes zero) and ahead[R, M, M]
    (diff[r, i, j] < 0: column j ahead of row i), in blocks of data sets.

    Row i is "below first" when some eligible j is ahead of it and different: that is the
    paired rule's rank > 1. The pairs of a block of data sets are the rows of one
    `cluster_interval` call, the leaderboard's own interval.
    """
    data_sets, models, scenarios, _ = scores.shape
    step = max(1, _BLOCK_VALUES // max(1, models * models * scenarios))
    different = np.zeros((data_sets, models, models), dtype=bool)
    ahead = np.zeros((data_sets, models, models), dtype=bool)
    for start in range(0, data_sets, step):  # blocks of data sets, never single resamples
        block = scores[start:start + step]
        diff, significant = _block_pairs(block, counts, level, ranked, correction)
        different[start:start + step], ahead[start:start + step] = significant, diff < 0
    return different & (ranked[:, np.newaxis] & ranked[np.newaxis, :]), ahead


def _block_pairs(scores: FloatArray, counts: npt.NDArray[np.integer], level: float,
                 ranked: BoolArray, correction: str) -> tuple[FloatArray, BoolArray]:
    """diff[r, i, j] and its significance for data sets scores[r, M, S, K] (as `pairwise`;
    under "holm" the eligible pairs of each data set are one family)."""
    data_sets, models, scenarios, _ = scores.shape
    observed = ~np.isnan(scores)
    filled = np.where(observed, scores, 0.0)
    mask = observed.astype(np.float64)
    shared = np.einsum("risk,rjsk->rijs", mask, mask)
    own = np.einsum("risk,rjsk->rijs", filled, mask)
    means = divide_or_nan(own - own.transpose(0, 2, 1, 3), shared)
    point, low, high = cluster_interval(means.reshape(-1, scenarios),
                                        shared.reshape(-1, scenarios) > 0, counts, level,
                                        "expanded_t")
    shape = (data_sets, models, models)
    significant = ((low > 0) | (high < 0)).reshape(shape)
    if correction == "holm":
        upper = np.triu_indices(models, k=1)
        n = (shared > 0).sum(axis=3)[:, upper[0], upper[1]]
        p_values = pair_p_values(point.reshape(shape)[:, upper[0], upper[1]],
                                 low.reshape(shape)[:, upper[0], upper[1]],
                                 high.reshape(shape)[:, upper[0], upper[1]], n, level)
        in_family = ranked[upper[0]] & ranked[upper[1]]
        rejected = np.zeros(shape, dtype=bool)
        rejected[:, upper[0], upper[1]] = holm_rejected(
            np.where(in_family, p_values, np.nan), level)
        significant &= rejected | rejected.transpose(0, 2, 1)
    return point.reshape(shape), significant


def _class_decisions(scores: FloatArray, counts: npt.NDArray[np.integer], level: float,
                     ranked: BoolArray) -> tuple[BoolArray, BoolArray]:
    """Under the classes rule: different = in different classes; ahead = column's class is
    better (a lower number). One additive fit per data set."""
    classes = np.stack([
        statistics.rank_classes(statistics.model_estimates(data, counts, level), True, ranked)
        for data in scores  # a loop over data sets; each fit is vectorised over resamples
    ])
    different = classes[:, :, np.newaxis] != classes[:, np.newaxis, :]
    ahead = classes[:, np.newaxis, :] < classes[:, :, np.newaxis]
    eligible_pair = ranked[:, np.newaxis] & ranked[np.newaxis, :]
    return different & eligible_pair, ahead
