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
of B x M x S x K work each. Models that share no cell with the rest, directly or through others,
form their own group and are fitted on their own cells; in a resample a model without any drawn
scenario has no value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from audits_app.statistics.arrays import BLOCK_BYTES, BoolArray, FloatArray, divide_or_zero


@dataclass(frozen=True, eq=False)
class AdditiveDesign:
    """Per-scenario pieces of the fit's normal equations; a resample only reweighs scenarios.

    laplacian[S, M * M]: L_s; anchored: L_s + J / M (J all ones); residual[S, M]: r_s;
    share[S, M]: q; share_sum[S, M]: p; present[S, M]: the model has a cell of the grid in the
    scenario; hub_links[S, M]: the row of L_s of the model with the most scores, which decides
    cheaply that a resample is linked.
    """

    laplacian: FloatArray
    anchored: FloatArray
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
        shared = np.einsum("isk,jsk->sij", weighted * inverse_n, mask)
        own = weighted.sum(axis=2).T  # [S, M]
        laplacian = own[:, :, np.newaxis] * np.eye(models) - shared
        hub = int(observed.sum(axis=(1, 2)).argmax()) if models else 0
        flat = laplacian.reshape(scenarios, models * models)
        return cls(
            laplacian=flat,
            anchored=flat + 1.0 / max(1, models),  # weights sum to 1: adds J / M to L
            residual=(weighted * (filled - cell_mean)).sum(axis=2).T,
            share=(weighted * inverse_n).sum(axis=2).T,
            share_sum=(weighted * inverse_n * filled).sum(axis=2).T,
            present=(own > 0).astype(np.float64),
            hub_links=laplacian[:, hub, :] if models else own,
        )

    def fit_all(self, counts: npt.NDArray[np.integer]) -> FloatArray:
        """a[B, M] for every resample, in blocks of resamples; NaN where a model has no data."""
        models = self.residual.shape[1]
        step = max(1, BLOCK_BYTES // (8 * 2 * max(1, models) ** 2))
        blocks = [
            self.fit(counts[start:start + step].astype(np.float64))
            for start in range(0, len(counts), step)  # blocks of resamples, never single ones
        ]
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
        """
        models = self.residual.shape[1]
        system = (weights @ self.anchored).reshape(len(weights), models, models)
        right = weights @ self.residual
        fitted = np.linalg.solve(system, right[:, :, np.newaxis])[:, :, 0]
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
