"""Agreement statistics between jurors and people (DESIGN.md section 6).

Pure numpy: category codes in, numbers out, no ORM. Labels are coded 0..L-1 (`LABELS` order);
a missing value is NaN (float arrays) or -1 (int arrays).

- Krippendorff's alpha (nominal) from the coincidence matrix: a unit with m >= 2 values adds
  (v v^T - diag v) / (m - 1), v its per-category value counts; units with fewer values are not
  pairable and add nothing. alpha = 1 - (n - 1) * sum_offdiag(o) / (n^2 - sum_c n_c^2).
- Cohen's kappa, percent agreement and the confusion matrix between two raters.

Both figures are functions of a matrix that is a *sum over units*, so the cluster bootstrap
(whole scenarios resampled) is one matrix product: counts[B, S] @ per_scenario[S, L*L] gives each
resample's matrix, and the statistic is evaluated on all B matrices at once. Intervals are
percentile intervals over the resamples where the statistic is defined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

LABELS: tuple[str, ...] = ("supported", "exaggeration", "contradiction", "fabrication")
# More severe labels come later: ties in a majority vote go to the more severe label.
SEVERITY = {label: index for index, label in enumerate(LABELS)}


@dataclass(frozen=True)
class Interval:
    point: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict:
        return {"point": self.point, "low": self.low, "high": self.high}


def code(label: str | None) -> int:
    return -1 if label is None else SEVERITY[label]


def majority(labels: list[str]) -> str | None:
    """Most frequent label; a tie goes to the most severe (a conservative jury reading)."""
    if not labels:
        return None
    tallies = {label: labels.count(label) for label in labels}
    return max(tallies, key=lambda label: (tallies[label], SEVERITY[label]))


def worst(labels: list[str]) -> str:
    """A text's verdict class: its most severe claim label; `supported` with no claims."""
    return max(labels, key=SEVERITY.__getitem__, default=LABELS[0])


# --- Krippendorff's alpha -------------------------------------------------------------------

def unit_coincidences(values: npt.ArrayLike, n_categories: int = len(LABELS)) -> FloatArray:
    """(U, L, L): each unit's coincidence matrix from units x coders values (NaN missing);
    zero for a unit with fewer than two values (not pairable)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return np.zeros((0, n_categories, n_categories))
    data = data.reshape(len(data), -1)
    present = ~np.isnan(data)
    codes = np.where(present, data, 0).astype(np.int64)
    per_unit = (np.eye(n_categories)[codes] * present[..., None]).sum(axis=1)  # (U, L)
    pairable = per_unit.sum(axis=1)
    outer = np.einsum("uc,uk->uck", per_unit, per_unit)
    outer -= per_unit[:, :, None] * np.eye(n_categories)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(pairable >= 2, 1.0 / (pairable - 1), 0.0)
    return outer * scale[:, None, None]


def coincidence_matrix(values: npt.ArrayLike, n_categories: int = len(LABELS)) -> FloatArray:
    """Coincidences of units x coders values (NaN missing), shape (L, L)."""
    return unit_coincidences(values, n_categories).sum(axis=0)


def alpha_from_coincidence(matrices: npt.ArrayLike) -> FloatArray:
    """Nominal alpha of one (L, L) or many (..., L, L) coincidence matrices; NaN if undefined."""
    coincidences = np.asarray(matrices, dtype=float)
    marginals = coincidences.sum(axis=-1)
    total = marginals.sum(axis=-1)
    disagreeing = total - np.trace(coincidences, axis1=-2, axis2=-1)
    expected = total**2 - (marginals**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (total - 1) * disagreeing / expected, np.nan)


def krippendorff_alpha(reliability_data: npt.ArrayLike, n_categories: int = len(LABELS)) -> float:
    """Nominal alpha of coders x units data (the `krippendorff` package's layout)."""
    data = np.asarray(reliability_data, dtype=float)
    return float(alpha_from_coincidence(coincidence_matrix(data.T, n_categories)))


# --- Cohen's kappa ----------------------------------------------------------------------------

def confusion(first: npt.ArrayLike, second: npt.ArrayLike,
              n_categories: int = len(LABELS)) -> IntArray:
    """Counts[i, j] of units rated i by the first rater and j by the second."""
    rows, columns = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    matrix = np.zeros((n_categories, n_categories), dtype=np.int64)
    np.add.at(matrix, (rows, columns), 1)
    return matrix


def kappa_from_confusion(matrices: npt.ArrayLike) -> FloatArray:
    """Cohen's kappa of one or many confusion matrices; NaN when chance agreement is total."""
    counts = np.asarray(matrices, dtype=float)
    total = counts.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.trace(counts, axis1=-2, axis2=-1) / total
        chance = (counts.sum(axis=-1) * counts.sum(axis=-2)).sum(axis=-1) / total**2
        return np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)


def percent_from_confusion(matrices: npt.ArrayLike) -> FloatArray:
    counts = np.asarray(matrices, dtype=float)
    total = counts.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.trace(counts, axis1=-2, axis2=-1) / total


# --- cluster bootstrap ------------------------------------------------------------------------

def per_cluster(matrices_by_unit: FloatArray, clusters: IntArray, n_clusters: int) -> FloatArray:
    """Sum unit-level (U, L, L) matrices into (S, L, L) per cluster (scenario)."""
    result = np.zeros((n_clusters, *matrices_by_unit.shape[1:]))
    np.add.at(result, clusters, matrices_by_unit)
    return result


def resampled(per_scenario: FloatArray, counts: npt.ArrayLike) -> FloatArray:
    """Each resample's matrix: counts[B, S] @ per_scenario[S, L, L] -> (B, L, L)."""
    weights = np.asarray(counts, dtype=float)
    return np.einsum("bs,sck->bck", weights, per_scenario)


def interval(point: float, draws: FloatArray, level: float) -> Interval:
    defined = draws[~np.isnan(draws)]
    if np.isnan(point):
        return Interval(None, None, None)
    if defined.size == 0:
        return Interval(float(point), None, None)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return Interval(float(point), float(low), float(high))


def pair_matrices(first: IntArray, second: IntArray, n_categories: int = len(LABELS)) -> FloatArray:
    """One (L, L) confusion matrix per unit: a 1 at (first, second)."""
    matrices = np.zeros((len(first), n_categories, n_categories))
    matrices[np.arange(len(first)), first, second] = 1.0
    return matrices


def kappa_report(first: npt.ArrayLike, second: npt.ArrayLike, clusters: npt.ArrayLike,
                 counts: npt.ArrayLike, level: float) -> dict:
    """Kappa, percent agreement and confusion matrix with cluster-bootstrap intervals."""
    rows, columns = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    counts = np.asarray(counts)
    matrix = confusion(rows, columns)
    draws = resampled(
        per_cluster(pair_matrices(rows, columns), np.asarray(clusters, dtype=np.int64),
                    counts.shape[1]),
        counts,
    )
    return {
        "n": int(len(rows)),
        "kappa": interval(float(kappa_from_confusion(matrix)), kappa_from_confusion(draws),
                          level).as_dict(),
        "percent": interval(float(percent_from_confusion(matrix)),
                            percent_from_confusion(draws), level).as_dict(),
        "confusion": matrix.tolist(),
    }


def alpha_report(values: npt.ArrayLike, clusters: npt.ArrayLike, counts: npt.ArrayLike,
                 level: float) -> dict:
    """Alpha of units x coders values (NaN missing) with a cluster-bootstrap interval."""
    data = np.asarray(values, dtype=float)
    counts = np.asarray(counts)
    units = unit_coincidences(data)
    draws = alpha_from_coincidence(
        resampled(per_cluster(units, np.asarray(clusters, dtype=np.int64), counts.shape[1]),
                  counts)
    )
    point = float(alpha_from_coincidence(units.sum(axis=0))) if len(units) else float("nan")
    pairable = int((np.sum(~np.isnan(data), axis=1) >= 2).sum()) if data.size else 0
    return {"units": pairable, "alpha": interval(point, draws, level).as_dict()}


# --- calibration of the simulated public against people -------------------------------------

def average_ranks(values: npt.ArrayLike) -> FloatArray:
    """Ranks along the last axis (1 = smallest), ties sharing their average rank."""
    data = np.asarray(values, dtype=float)
    less = (data[..., None, :] < data[..., :, None]).sum(axis=-1)
    equal = (data[..., None, :] == data[..., :, None]).sum(axis=-1)
    return less + (equal + 1) / 2


def pearson(first: npt.ArrayLike, second: npt.ArrayLike) -> FloatArray:
    """Pearson correlation along the last axis; NaN where either side is constant."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x * y).sum(axis=-1) / np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))


def spearman(first: npt.ArrayLike, second: npt.ArrayLike) -> FloatArray:
    return pearson(average_ranks(first), average_ranks(second))


def kendall_tau_b(first: npt.ArrayLike, second: npt.ArrayLike) -> FloatArray:
    """Kendall's tau-b along the last axis (as scipy.stats.kendalltau's default)."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    sign_x = np.sign(x[..., :, None] - x[..., None, :])
    sign_y = np.sign(y[..., :, None] - y[..., None, :])
    upper = np.triu(np.ones(x.shape[-1], dtype=bool), k=1)
    concordance = (sign_x * sign_y)[..., upper].sum(axis=-1)
    untied_x = (sign_x != 0)[..., upper].sum(axis=-1)
    untied_y = (sign_y != 0)[..., upper].sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return concordance / np.sqrt(untied_x * untied_y)


def clustered_means(values: npt.ArrayLike, counts: npt.ArrayLike) -> FloatArray:
    """values[M, S] (NaN missing) -> per resample and row the weighted mean, shape (B, M)."""
    data = np.asarray(values, dtype=float)
    present = ~np.isnan(data)
    weights = np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (weights @ np.where(present, data, 0).T) / (weights @ present.T)


def rank_agreement(human: npt.ArrayLike, simulated: npt.ArrayLike, counts: npt.ArrayLike,
                   level: float) -> dict:
    """Spearman and Kendall correlation of the model orderings by people and by the simulated
    public (rows = models, columns = scenarios), intervals by resampling scenarios."""
    human, simulated = np.asarray(human, dtype=float), np.asarray(simulated, dtype=float)
    every = np.ones((1, human.shape[1]))
    point_h, point_s = clustered_means(human, every)[0], clustered_means(simulated, every)[0]
    draws_h, draws_s = clustered_means(human, counts), clustered_means(simulated, counts)
    return {
        "models": int(human.shape[0]),
        "spearman": interval(float(spearman(point_h, point_s)), spearman(draws_h, draws_s),
                             level).as_dict(),
        "kendall": interval(float(kendall_tau_b(point_h, point_s)),
                            kendall_tau_b(draws_h, draws_s), level).as_dict(),
    }
