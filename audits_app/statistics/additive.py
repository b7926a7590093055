"""The additive fit behind every per-model point and interval (DESIGN.md section 6).

A model's plain mean over the cells it has rewards refusing the hardest cells: a twin of a model
that refuses every damage-control (C2) cell would score higher than the model itself. So a
model's point is its predicted mean over every cell of the release, from the additive fit

    scores[m, s, k] ~ a[m] + c[s, k]

by weighted least squares over the observed cells, each with weight v[s, k] = w[s] / K_s, where
K_s is the number of cells of scenario s that any model has (the grid) and w[s] the scenario's
weight (1 for the point, counts[b, s] in resample b). The fit is identified by making the cell
effects average zero over the grid, sum v[s, k] c[s, k] = 0, so that

    point[m] = a[m] = the model's predicted score averaged over the grid (scenarios equal).

The normal equations say c[s, k] = mean over the models in cell (s, k) of (score - a[m]) and
a[m] = v-weighted mean over the model's cells of (score - c[s, k]): DESIGN's "mean deviation from
the cell means over the cells it has, plus the grand mean", taken to its fixed point. One pass of
that formula is biased: the cell means of the cells a model skips are taken over other models
than the cell means of the cells it has, so the model's deviations are measured against two
different crowds. With complete data the fit is exactly the plain scenario-weighted mean, and on
additive data it recovers every model's effect whatever is missing (both are tested).

Solving it: eliminating c leaves, per resample, an M x M linear system that is linear in counts,

    L a = r,   L = sum_s w[s] L_s,   r = sum_s w[s] r_s,
    L_s[m, m'] = sum_k v o[m] (delta[m, m'] - o[m'] / n),   r_s[m] = sum_k v o[m] (y[m] - ybar),

with o the observed mask, n the number of models in the cell and ybar their mean (all at s, k).
L a = r fixes a up to one constant per group of models linked through shared cells. The
constraint (the grid average of c is zero) reads q . a = the group's sum of p, with
q[m] = sum v o[m] / n and p[m] = sum v o[m] y[m] / n. In the usual resample every model has data
and all are linked: then (L + J / M) a0 = r (J all ones) is regular, its solution is the one with
sum(a0) = 0, and a = a0 + (sum(p) - q . a0) / sum(q). Otherwise (L + q q^T within each group)
a = r + q * (the group's sum of p), with groups found by label propagation. Either way all B fits
are one matrix product (counts @ L_s) and one batched np.linalg.solve: exact, with no iteration
to converge and no loop over resamples, where alternating least squares would need many sweeps
of B x M x S x K work each. In the linked case the system is symmetric positive definite, so only
its upper triangle is built (in row slabs, about half the product) and it is solved by Cholesky
(LAPACK's dposv, without the GIL: half the work of a general solve); at 200 models, 200
scenarios and 10,000 resamples these two are nearly all of the time. Models that share no
cell with the rest, directly or through others, form their own group and are fitted on their
own cells; in a resample a model without any drawn scenario has no value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from audits_app.statistics.arrays import (
    BLOCK_BYTES,
    BoolArray,
    FloatArray,
    divide_or_zero,
    map_blocks,
)
from audits_app.statistics.cholesky import solve_upper


@dataclass(frozen=True, eq=False)
class AdditiveDesign:
    """Per-scenario pieces of the fit's normal equations; a resample only reweighs scenarios.

    laplacian[S, M * M]: L_s; anchored: the upper triangle of L_s + J / M (J all ones), as row
    slabs (first row, last row + 1, [S, rows * columns from the first row on]); residual[S, M]: r_s;
    share[S, M]: q; share_sum[S, M]: p; present[S, M]: the model has a cell of the grid in the
    scenario; hub_links[S, M]: the row of L_s of the model with the most scores, its own entry
    0, which decides cheaply that a resample is linked.
    """

    laplacian: FloatArray
    anchored: tuple[tuple[int, int, FloatArray], ...]
    residual: FloatArray
    share: FloatArray
    share_sum: FloatArray
    present: FloatArray
    hub_links: FloatArray

    @classmethod
    def of(cls, scores: FloatArray) -> AdditiveDesign:
        models, scenarios, _ = scores.shape
        observed = ~np.isnan(scores)
        mask = observed.astype(np.float64)
        filled = np.where(observed, scores, 0.0)
        in_cell = mask.sum(axis=0)  # n[s, k]
        inverse_n = divide_or_zero(np.ones_like(in_cell), in_cell)
        grid = (in_cell > 0).astype(np.float64)
        cell_weight = divide_or_zero(grid, grid.sum(axis=1, keepdims=True))  # v[s, k]
        weighted = mask * cell_weight  # v o[m]
        cell_mean = filled.sum(axis=0) * inverse_n
        # shared[s, i, j] = sum_k v o[i] o[j] / n: per scenario X X^T with X = o sqrt(v / n), one
        # batched BLAS product (symmetric by construction).
        rooted = np.ascontiguousarray(
            (mask * np.sqrt(cell_weight * inverse_n)).transpose(1, 0, 2))  # [S, M, K]
        laplacian = rooted @ rooted.transpose(0, 2, 1)
        np.negative(laplacian, out=laplacian)
        own = weighted.sum(axis=2).T  # [S, M]
        flat = laplacian.reshape(scenarios, models * models)
        flat[:, ::models + 1] += own  # L_s = diag(own) - shared
        hub = int(observed.sum(axis=(1, 2)).argmax()) if models else 0
        # The hub's row without its own entry: a diagonal that should be 0 (a model alone in
        # its cells) comes out of the product as -1e-16 and would count as a link.
        hub_links = laplacian[:, hub, :].copy() if models else own
        if models:
            hub_links[:, hub] = 0.0
        return cls(
            laplacian=flat,
            anchored=_upper_slabs(laplacian, 1.0 / max(1, models)),  # weights sum to 1: + J / M
            residual=(weighted * (filled - cell_mean)).sum(axis=2).T,
            share=(weighted * inverse_n).sum(axis=2).T,
            share_sum=(weighted * inverse_n * filled).sum(axis=2).T,
            present=(own > 0).astype(np.float64),
            hub_links=hub_links,
        )

    def fit_all(self, counts: npt.NDArray[np.integer]) -> FloatArray:
        """a[B, M] for every resample, in blocks of resamples; NaN where a model has no data.

        Blocks run on every core (`arrays.map_blocks`), each fitted as it would be alone.
        """
        models = self.residual.shape[1]
        step = max(1, BLOCK_BYTES // (8 * 2 * max(1, models) ** 2))
        blocks = map_blocks(
            lambda start: self.fit(counts[start:start + step].astype(np.float64)),
            range(0, len(counts), step),  # blocks of resamples, never single ones
        )
        return np.concatenate(blocks) if blocks else np.empty((0, models))

    def fit(self, weights: FloatArray) -> FloatArray:
        """a[b, M] for scenario weights[b, S].

        Resamples in which every model has data and one model shares a cell with all others
        (nearly always) take `_fit_linked`; the rest `_fit_grouped`.
        """
        models = self.residual.shape[1]
        if models == 0:
            return np.empty((len(weights), 0))
        weights = weights / weights.sum(axis=1, keepdims=True)  # scale-free; keeps L near 1
        present = weights @ self.present > 0
        # Off-diagonal L < 0 exactly where two models share a drawn cell (a sum of positive terms).
        linked = ((weights @ self.hub_links) < 0).sum(axis=1) == models - 1
        simple = present.all(axis=1) & linked
        if simple.all():
            return self._fit_linked(weights)
        fitted = np.full((len(weights), models), np.nan)
        if simple.any():
            fitted[simple] = self._fit_linked(weights[simple])
        fitted[~simple] = self._fit_grouped(weights[~simple], present[~simple])
        return fitted

    def _fit_linked(self, weights: FloatArray) -> FloatArray:
        """Every model has data, all in one group: L a = r has solutions a0 + t 1.

        1^T L = 0 and 1^T r = 0, so (L + J / M) a0 = r (J all ones) is regular and its solution
        has sum(a0) = 0 and L a0 = r; then t follows from the constraint q . a = sum(p).
        L + J / M is symmetric positive definite: its upper triangle is built and solved by
        Cholesky (`cholesky.solve_upper`).
        """
        models = self.residual.shape[1]
        system = np.empty((len(weights), models, models))
        for first, last, slab in self.anchored:
            system[:, first:last, first:] = (weights @ slab).reshape(len(weights), last - first, -1)
        right = weights @ self.residual
        fitted, failed = solve_upper(system, right)
        if failed.any():  # rounding on a nearly singular fit: the whole system, by LU
            whole = (weights[failed] @ self.laplacian).reshape(-1, models, models) + 1.0 / models
            fitted[failed] = np.linalg.solve(whole, right[failed][:, :, np.newaxis])[:, :, 0]
        share, share_sum = weights @ self.share, weights @ self.share_sum
        shift = (share_sum.sum(axis=1) - (share * fitted).sum(axis=1)) / share.sum(axis=1)
        return fitted + shift[:, np.newaxis]

    def _fit_grouped(self, weights: FloatArray, present: BoolArray) -> FloatArray:
        """Some model without data, or models in several groups: one constraint per group.

        (L + q q^T within each group) a = r + q * (the group's sum of p); a model without data
        has an all-zero row and column, so it is pinned to a = 0 and reported as NaN.
        """
        models = self.residual.shape[1]
        system = (weights @ self.laplacian).reshape(len(weights), models, models)
        share, share_sum = weights @ self.share, weights @ self.share_sum
        group = _same_group(system < 0, present)
        system += share[:, :, np.newaxis] * share[:, np.newaxis, :] * group
        right = weights @ self.residual + share * (group * share_sum[:, np.newaxis, :]).sum(axis=2)
        resample, model = np.nonzero(~present)
        system[resample, model, model] = 1.0
        right[resample, model] = 0.0
        fitted = np.linalg.solve(system, right[:, :, np.newaxis])[:, :, 0]
        fitted[~present] = np.nan
        return fitted


# Rows per slab of the upper triangle: 8 slabs at 200 models, whose products add 12 % to the
# triangle's half of the square; smaller slabs make more, smaller products.
SLAB_ROWS = 25


def _upper_slabs(square: FloatArray, add: float = 0.0) -> tuple[tuple[int, int, FloatArray], ...]:
    """square[S, M, M] + add as row slabs of its upper triangle, each a new [S, rows * columns]."""
    models = square.shape[1]
    return tuple(
        (first, min(models, first + SLAB_ROWS),
         square[:, first:first + SLAB_ROWS, first:].reshape(len(square), -1) + add)
        for first in range(0, models, SLAB_ROWS)
    )


def _same_group(linked: BoolArray, has_data: BoolArray) -> BoolArray:
    """[b, M, M]: both models have data and are linked through shared cells (label propagation).

    Each model takes the smallest label among itself and its neighbours until nothing changes;
    the number of sweeps is the longest chain of links.
    """
    models = linked.shape[1]
    linked = linked | np.eye(models, dtype=bool)
    labels = np.broadcast_to(np.arange(models), has_data.shape).copy()
    while True:  # sweeps over the graph, each vectorised over resamples
        spread = np.where(linked, labels[:, np.newaxis, :], models).min(axis=2)
        if np.array_equal(spread, labels):
            break
        labels = spread
    both = has_data[:, :, np.newaxis] & has_data[:, np.newaxis, :]
    return both & (labels[:, :, np.newaxis] == labels[:, np.newaxis, :])
