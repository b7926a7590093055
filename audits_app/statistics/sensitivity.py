"""Is a refusal really neutral? The sensitivity figure beside each model with missing cells
(DESIGN section 6).

A model's point is the additive fit's prediction over every cell (`additive`): a refused cell is
filled with the model's own effect plus the cell's effect as the other models show it. That is
neutral only when scores are additive in model and cell. When they are not, when say the other
models' scores drop under damage control (C2) by different amounts and the model refused every
C2 cell, the fill borrows a reaction the model never showed, and its point moves against models
it equals on every cell they share. So beside the fit's reading the figure gives the plain one:

    own mean     the model's mean over the cells it has (scenarios weighing the same)
    versus o     o's mean over the same cells (those both have), and the model's lead there,
                 which is the paired difference; against the fit's lead, point[m] - point[o]

and flags the model where, against some other model, the two leads differ by more than the
half-width of the model's comparison interval: then the fit's point says something the cells
the model wrote do not. Pure numpy; scores[M, S, K] as in `audits_app.statistics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from audits_app.statistics.arrays import BoolArray, FloatArray, divide_or_nan, nanmean


@dataclass(frozen=True, eq=False)
class Sensitivity:
    """Per model (length M) and per pair (M x M, row model on the row model's shared cells)."""

    missing: BoolArray  # the model lacks a cell of the grid (some model has it)
    own_mean: FloatArray  # [M] over the model's own cells
    own_on_shared: FloatArray  # [M, M] row model's mean over the cells both have
    other_on_shared: FloatArray  # [M, M] column model's mean over those cells
    cells_lead: FloatArray  # [M, M] own_on_shared - other_on_shared (the paired difference)
    fit_lead: FloatArray  # [M, M] point[row] - point[column]
    half_width: FloatArray  # [M] of the comparison interval
    largest_gap: FloatArray  # [M] max over others of |fit_lead - cells_lead|
    flagged: BoolArray  # [M] missing and largest_gap > half_width


def sensitivity(
    scores: npt.ArrayLike, point: npt.ArrayLike, cmp_low: npt.ArrayLike, cmp_high: npt.ArrayLike
) -> Sensitivity:
    """The figure for every model; only those with `missing` are shown on the pages."""
    values = np.asarray(scores, dtype=np.float64)
    points = np.asarray(point, dtype=np.float64)
    observed = ~np.isnan(values)
    grid = observed.any(axis=0)
    missing = (grid[np.newaxis] & ~observed).any(axis=(1, 2))
    own_mean = nanmean(nanmean(values, axis=2), axis=1)
    own_on_shared, other_on_shared = _shared_means(values, observed)
    cells_lead = own_on_shared - other_on_shared
    fit_lead = points[:, np.newaxis] - points[np.newaxis, :]
    gap = np.abs(fit_lead - cells_lead)
    np.fill_diagonal(gap, np.nan)
    has_gap = ~np.isnan(gap).all(axis=1)
    largest = np.where(has_gap, np.nanmax(np.where(np.isnan(gap), -np.inf, gap), axis=1),
                       np.nan)
    half_width = (np.asarray(cmp_high, dtype=np.float64)
                  - np.asarray(cmp_low, dtype=np.float64)) / 2
    flagged = missing & (largest > half_width)  # NaN compares False: no interval, no flag
    return Sensitivity(missing, own_mean, own_on_shared, other_on_shared, cells_lead, fit_lead,
                       half_width, largest, flagged)


def _shared_means(values: FloatArray, observed: BoolArray) -> tuple[FloatArray, FloatArray]:
    """[i, j]: i's and j's means over the cells both have, each scenario weighing the same
    (per scenario the mean over shared cells, then the mean over scenarios with any)."""
    mask = observed.astype(np.float64)
    filled = np.where(observed, values, 0.0)
    shared = np.einsum("isk,jsk->ijs", mask, mask)
    row_total = np.einsum("isk,jsk->ijs", filled, mask)
    per_scenario_row = divide_or_nan(row_total, shared)
    per_scenario_column = divide_or_nan(row_total.transpose(1, 0, 2), shared)
    return nanmean(per_scenario_row, axis=2), nanmean(per_scenario_column, axis=2)
