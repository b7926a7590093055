"""Bradley–Terry ratings from the arena's pair votes (DESIGN sections 6 and 9).

Pure numpy: plain arrays in, a frozen dataclass of arrays out, no ORM. Shapes used throughout:

    wins[S, M, M]   float; wins[s, i, j] = comparisons in scenario s in which model i was
                    preferred to model j (a vote, or one reading position's answer)
    counts[B, S]    int; the release's seeded scenario resample counts (the same matrix every
                    interval of the release uses: `leaderboard.figures.release_resampling`)

The model: P(i preferred to j) = sigmoid(theta_i - theta_j). `theta` is a log-strength on the
logit scale: 0 is the average model, and a difference of 1 means the first is preferred about
73 % of the time. It is fitted by Newton's method on the log-likelihood plus a small ridge,

    sum_ij wins_ij * log sigmoid(theta_i - theta_j)  -  RIDGE / 2 * sum_i theta_i ** 2,

which is the maximum a posteriori fit under a normal prior with standard deviation
1 / sqrt(RIDGE) = 10 logits. Without it a model that won every comparison has no finite maximum
likelihood (the likelihood keeps rising as its strength grows); with it that model gets a large
but finite rating, while with real data (tens of comparisons a model) the prior moves ratings
by far less than their intervals. The ridge also fixes the scale's origin: at the optimum the
ratings sum to zero, so no model has to be pinned.

Intervals resample whole scenarios (cluster bootstrap) and follow the release's rule for every
interval (`audits_app.statistics.intervals`): the expanded t interval

    estimate -/+ t(n - 1, (1 + level) / 2) * sqrt(n / (n - 1)) * sd(bootstrap values),

with n the scenarios in which the model took part (for a difference between two models, the
smaller of their two counts). A plain percentile interval over so few clusters is too narrow: 4
equal models with 40 votes per scenario were declared different in 22.5 % of pairs at 4 scenarios
and 11.5 % at 8, at a nominal 5 % (bench/coverage.py measures both). Resample b weighs scenario s
by counts[b, s]. A resample in which a model has no comparison gives it no rating (NaN) and is
left out of its standard deviation, as in `audits_app.statistics`. Ranks follow the release's
rule: "paired" (1 + the number of ranked models whose difference interval excludes zero in their
favour) or "classes" (overlapping intervals, each class led by its best model; a model joins the
class whose leader's interval it overlaps). A difference smaller than TOLERANCE logits is never
demonstrable, whatever its interval.

A model is ranked only once it took part in MIN_COMPARISONS comparisons, in at least two
scenarios (with one there is no interval, and a model that can never be shown worse must not
rank first on that account), and only while at least one other model is ranked too (a lone
"#1" says nothing). With a handful of votes in a scenario or two every resample repeats the
same few outcomes; below the floor a model keeps its rating and interval but gets no place and
takes none from the others.

Ties: Chatbot Arena counts a "tie" and a "both bad" answer alike, as half a win for each text
(FastChat's `compute_mle_elo` gives each side weight 1 where a win has weight 2); `win_tensor`
takes such half-weights through `weights`, and `comparison_rows` turns answers into them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import expit

from audits_app.statistics.intervals import expanded_t_multiplier

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

RIDGE = 0.01
MIN_COMPARISONS = 20
MIN_SCENARIOS = 2  # an interval needs two scenarios
TOLERANCE = 1e-9  # logits: a smaller difference is float noise, never "demonstrable"
INTERVAL_METHOD = "expanded t (scenarios resampled whole)"
RANK_RULES = ("paired", "classes")
UNRANKED = 0  # as audits_app.statistics: a model without comparisons has no place
# Resamples fitted at once: B x M x M float64 arrays stay near 16 MB even at 50 models.
_BLOCK_BYTES = 16 * 2**20
_MAX_NEWTON_STEPS = 100
_TOLERANCE = 1e-10


@dataclass(frozen=True, eq=False)
class Ratings:
    """Bradley–Terry ratings of M models with scenario-resampled intervals and ranks."""

    point: FloatArray  # [M] log-strengths, NaN for a model without comparisons
    low: FloatArray  # [M] expanded t interval of the rating
    high: FloatArray
    diff_low: FloatArray  # [M, M] interval of rating i minus rating j
    diff_high: FloatArray
    significant: BoolArray  # [M, M] that interval excludes zero
    ranks: IntArray  # [M] by `rule`; UNRANKED without comparisons
    comparisons: FloatArray  # [M] comparisons the model took part in
    wins: FloatArray  # [M] comparisons it won (a tie counts half)
    scenarios: IntArray  # [M] scenarios in which it took part
    unranked_reason: list[str]  # [M] why a model has no place; "" for a ranked one
    rule: str
    level: float


def win_tensor(
    winners: npt.ArrayLike, losers: npt.ArrayLike, scenarios: npt.ArrayLike,
    n_models: int, n_scenarios: int, weights: npt.ArrayLike | None = None,
) -> FloatArray:
    """wins[S, M, M] from one row per comparison (indices into models and scenarios)."""
    winner, loser = np.asarray(winners, dtype=np.intp), np.asarray(losers, dtype=np.intp)
    scenario = np.asarray(scenarios, dtype=np.intp)
    if not winner.shape == loser.shape == scenario.shape:
        raise ValueError("winners, losers and scenarios must have the same length")
    if np.any(winner == loser):
        raise ValueError("a comparison needs two different models")
    weight = np.ones(winner.shape) if weights is None else np.asarray(weights, dtype=np.float64)
    wins = np.zeros((n_scenarios, n_models, n_models))
    np.add.at(wins, (scenario, winner, loser), weight)
    return wins


def fit(wins: npt.ArrayLike, ridge: float = RIDGE) -> FloatArray:
    """Ratings maximising the penalised log-likelihood; wins[..., M, M] may carry batch axes.

    Newton's method with step halving: the objective is strictly concave (the ridge makes it
    so), so each accepted step raises it and the method converges in a handful of steps.
    """
    if ridge <= 0:
        raise ValueError("the ridge must be positive: without it an all-win model diverges")
    table = np.asarray(wins, dtype=np.float64)
    games = table + np.swapaxes(table, -1, -2)
    theta = np.zeros(table.shape[:-1])
    value = _objective(theta, table, ridge)
    for _ in range(_MAX_NEWTON_STEPS):
        step = _newton_step(theta, table, games, ridge)
        theta, value, moved = _halving_update(theta, step, value, table, ridge)
        if moved < _TOLERANCE:
            break
    return theta


def ratings(
    wins: npt.ArrayLike, counts: npt.ArrayLike, level: float, rule: str = "paired",
    ridge: float = RIDGE, min_comparisons: int = MIN_COMPARISONS,
) -> Ratings:
    """Point ratings, scenario-resampled intervals and ranks from wins[S, M, M]; models with
    fewer than `min_comparisons` comparisons are not ranked."""
    table = np.asarray(wins, dtype=np.float64)
    draws = np.asarray(counts)
    if table.ndim != 3 or table.shape[1] != table.shape[2]:
        raise ValueError(f"wins must be [scenarios, models, models], got {table.shape}")
    if draws.ndim != 2 or draws.shape[1] != table.shape[0]:
        raise ValueError(f"counts must be [resamples, {table.shape[0]}], got {draws.shape}")
    if rule not in RANK_RULES:
        raise ValueError(f"unknown ranking rule {rule!r}; expected one of {RANK_RULES}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    total = table.sum(axis=0)
    played = (total + total.T).sum(axis=1)
    scenarios = ((table + np.swapaxes(table, 1, 2)).sum(axis=2) > 0).sum(axis=0)
    point = np.where(played > 0, fit(total, ridge), np.nan)
    resampled = bootstrap(table, draws, ridge)
    low, high = _rating_intervals(point, resampled, scenarios, level)
    diff_low, diff_high = _difference_intervals(point, resampled, scenarios, level)
    gap = np.abs(point[:, np.newaxis] - point[np.newaxis, :])
    significant = ((diff_low > 0) | (diff_high < 0)) & (gap > TOLERANCE)
    reasons = unranked_reasons(played, scenarios, min_comparisons)
    enough = np.array([not reason for reason in reasons], dtype=bool)
    ranked = np.where(enough, point, np.nan)
    if rule == "paired":
        ranks = paired_ranks(ranked, significant & enough[:, np.newaxis] & enough[np.newaxis, :])
    else:
        ranks = class_ranks(ranked, low, high)
    return Ratings(point, low, high, diff_low, diff_high, significant, ranks, played,
                   total.sum(axis=1), scenarios.astype(np.int64), reasons, rule, level)


def unranked_reasons(played: FloatArray, scenarios: npt.NDArray[np.integer],
                     min_comparisons: int) -> list[str]:
    """Per model, why it gets no place ("" when it gets one): the module docstring's floor."""
    reasons = []
    for comparisons, spread in zip(played, scenarios, strict=True):
        if comparisons == 0:
            reasons.append("no comparisons")
        elif comparisons < max(1, min_comparisons):
            reasons.append(f"{comparisons:g} comparisons, fewer than {min_comparisons}")
        elif spread < MIN_SCENARIOS:
            reasons.append(f"comparisons in {spread} scenario, fewer than {MIN_SCENARIOS}")
        else:
            reasons.append("")
    if sum(1 for reason in reasons if not reason) == 1:
        reasons = [reason or "the only model with enough comparisons: nobody to rank it against"
                   for reason in reasons]
    return reasons


def bootstrap(wins: FloatArray, counts: npt.ArrayLike, ridge: float = RIDGE) -> FloatArray:
    """theta[B, M] fitted on each resample; NaN for a model with no comparison in it."""
    draws = np.asarray(counts, dtype=np.float64)
    n_models = wins.shape[1]
    result = np.empty((len(draws), n_models))
    block = max(1, _BLOCK_BYTES // (8 * n_models * n_models))
    for start in range(0, len(draws), block):  # blocks of resamples, each fitted at once
        weighted = np.einsum("bs,sij->bij", draws[start:start + block], wins)
        played = (weighted + np.swapaxes(weighted, -1, -2)).sum(axis=2)
        result[start:start + block] = np.where(played > 0, fit(weighted, ridge), np.nan)
    return result


def paired_ranks(point: FloatArray, significant: BoolArray) -> IntArray:
    """1 + the number of models whose difference with this one is significant in their favour."""
    ahead = point[np.newaxis, :] > point[:, np.newaxis]  # [i, j]: j rated above i
    beaten_by = (significant & ahead).sum(axis=1)
    return np.where(np.isnan(point), UNRANKED, 1 + beaten_by).astype(np.int64)


def class_ranks(point: FloatArray, low: FloatArray, high: FloatArray) -> IntArray:
    """Classes from overlapping intervals, best first; each class is led by its first model,
    and a model joins it when its interval overlaps the leader's (touching counts)."""
    order = np.argsort(-point, kind="stable")  # NaN sorts last
    classes = np.full(point.shape, UNRANKED, dtype=np.int64)
    leader, current = -1, 0
    for model in order:  # a loop over models (tens), never over resamples
        if np.isnan(point[model]):
            break
        overlaps = leader >= 0 and low[model] <= high[leader] and low[leader] <= high[model]
        if not overlaps:
            leader, current = model, current + 1
        classes[model] = current
    return classes


def spearman(first: npt.ArrayLike, second: npt.ArrayLike) -> float | None:
    """Rank correlation over the models rated in both; None with fewer than three."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    both = ~np.isnan(a) & ~np.isnan(b)
    if both.sum() < 3 or np.ptp(a[both]) == 0 or np.ptp(b[both]) == 0:
        return None
    from scipy import stats  # imported here: scipy.stats is slow to import (recognisability)

    return float(stats.spearmanr(a[both], b[both]).statistic)


# ---------------------------------------------------------------------------------------------
# Newton's method, batched over any leading axes
# ---------------------------------------------------------------------------------------------


def _objective(theta: FloatArray, wins: FloatArray, ridge: float) -> FloatArray:
    gaps = theta[..., :, np.newaxis] - theta[..., np.newaxis, :]
    # log sigmoid(x) = -log(1 + exp(-x)), computed without overflow
    return -(wins * np.logaddexp(0.0, -gaps)).sum(axis=(-1, -2)) - ridge / 2 * (
        theta ** 2).sum(axis=-1)


def _newton_step(theta: FloatArray, wins: FloatArray, games: FloatArray,
                 ridge: float) -> FloatArray:
    """The Newton direction: minus the inverse Hessian times the gradient."""
    preferred = expit(theta[..., :, np.newaxis] - theta[..., np.newaxis, :])
    gradient = (wins - games * preferred).sum(axis=-1) - ridge * theta
    curvature = games * preferred * (1.0 - preferred)
    hessian = curvature - np.eye(theta.shape[-1]) * (curvature.sum(axis=-1) + ridge)[
        ..., np.newaxis]
    return -np.linalg.solve(hessian, gradient[..., np.newaxis])[..., 0]


def _halving_update(
    theta: FloatArray, step: FloatArray, value: FloatArray, wins: FloatArray, ridge: float,
) -> tuple[FloatArray, FloatArray, float]:
    """Take the full step where it raises the objective, else halve it (per batch entry)."""
    scale = np.ones(value.shape)
    for _ in range(30):
        candidate = theta + scale[..., np.newaxis] * step
        new_value = _objective(candidate, wins, ridge)
        worse = new_value < value - 1e-12 * np.abs(value)
        if not worse.any():
            break
        scale = np.where(worse, scale / 2, scale)
    moved = float(np.max(np.abs(candidate - theta), initial=0.0))
    return candidate, new_value, moved


# ---------------------------------------------------------------------------------------------
# Intervals: the release's expanded t rule
# ---------------------------------------------------------------------------------------------


def _rating_intervals(point: FloatArray, resampled: FloatArray,
                      scenarios: npt.NDArray[np.integer], level: float,
                      ) -> tuple[FloatArray, FloatArray]:
    """[M] point -/+ expanded t multiplier(n) * sd over the resamples in which it has a value."""
    half_width = expanded_t_multiplier(scenarios, level) * _nan_sd(resampled, axis=0)
    return point - half_width, point + half_width


def _difference_intervals(point: FloatArray, resampled: FloatArray,
                          scenarios: npt.NDArray[np.integer], level: float,
                          ) -> tuple[FloatArray, FloatArray]:
    """[M, M] intervals of theta_i - theta_j; n is the smaller of the two models' scenarios."""
    differences = resampled[:, :, np.newaxis] - resampled[:, np.newaxis, :]
    informed = np.minimum(scenarios[:, np.newaxis], scenarios[np.newaxis, :])
    half_width = expanded_t_multiplier(informed, level) * _nan_sd(differences, axis=0)
    centre = point[:, np.newaxis] - point[np.newaxis, :]
    diagonal = np.eye(resampled.shape[1], dtype=bool)
    low, high = centre - half_width, centre + half_width
    return np.where(diagonal, np.nan, low), np.where(diagonal, np.nan, high)


def _nan_sd(values: FloatArray, axis: int) -> FloatArray:
    """Standard deviation (divisor count - 1) over the non-NaN entries; NaN with fewer than 2."""
    observed = ~np.isnan(values)
    sizes = observed.sum(axis=axis)
    filled = np.where(observed, values, 0.0)
    mean = filled.sum(axis=axis) / np.maximum(sizes, 1)
    centred = np.where(observed, values - np.expand_dims(mean, axis), 0.0)
    variance = (centred * centred).sum(axis=axis) / np.maximum(sizes - 1, 1)
    return np.where(sizes >= 2, np.sqrt(variance), np.nan)
