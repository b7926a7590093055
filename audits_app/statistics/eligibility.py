"""Too little data is not a rank (DESIGN section 6).

A model that has scores in one scenario has no interval, so it can never be shown worse than
anyone: under the paired rule it would rank first on that account alone. So a rank needs a
minimum of data, set by the release file (`runs_app.schemas.RankMinimum`): scores in at least
a share of the release's scenarios (never fewer than two: an interval needs two), and, unless
the release says otherwise, a score under every condition the measure is compared on (a model
that refused every damage-control cell is not compared on damage control). Below it a model
keeps its point and intervals but gets no place and takes none from the others: ranks and
classes are computed among the eligible only. A lone eligible model is not ranked either: a
"#1" against nobody says nothing.

Pure numpy, shapes as in `audits_app.statistics`: scores[M, S, K], cell_groups[K].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from audits_app.statistics.arrays import BoolArray

MIN_SCENARIOS = 2  # an interval needs two scenarios
ALONE = "the only model with enough data: nobody to rank it against"


@dataclass(frozen=True, eq=False)
class Eligibility:
    """eligible[M]; reasons[M]: why a model gets no place ("" for an eligible one)."""

    eligible: BoolArray
    reasons: list[str]


def minimum_scenarios(share: float, n_scenarios: int) -> int:
    """The scenarios a rank needs: the share of the release's, rounded up, and at least two."""
    if not 0 < share <= 1:
        raise ValueError(f"the scenario share must lie in (0, 1], got {share}")
    return max(MIN_SCENARIOS, math.ceil(share * n_scenarios - 1e-9))


def rank_eligibility(
    scores: npt.ArrayLike, cell_groups: Sequence[str], *, scenario_share: float = 0.5,
    every_group: bool = True,
) -> Eligibility:
    """Which models may be ranked on scores[M, S, K], and why not.

    cell_groups[k] names cell k's condition; with every_group a model needs a score in each
    group that occurs among the cells.
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 3 or values.shape[2] != len(cell_groups):
        raise ValueError(f"scores must be [models, scenarios, {len(cell_groups)} cells], got "
                         f"shape {values.shape}")
    observed = ~np.isnan(values)
    needed = minimum_scenarios(scenario_share, values.shape[1])
    groups = list(dict.fromkeys(cell_groups))
    reasons = [_reason(observed[m], needed, groups, cell_groups, every_group)
               for m in range(values.shape[0])]  # a loop over models (tens)
    if sum(1 for reason in reasons if not reason) == 1:
        reasons = [reason or ALONE for reason in reasons]
    return Eligibility(np.array([not reason for reason in reasons], dtype=bool), reasons)


def _reason(observed: BoolArray, needed: int, groups: list[str], cell_groups: Sequence[str],
            every_group: bool) -> str:
    """observed[S, K] of one model -> why it gets no place, or ""."""
    if not observed.any():
        return "no scores"
    scenarios = int(observed.any(axis=1).sum())
    if scenarios < needed:
        return (f"scores in {scenarios} of {observed.shape[0]} scenarios; a rank needs "
                f"{needed}")
    if every_group:
        labels = np.asarray(cell_groups)
        missing = [group for group in groups if not observed[:, labels == group].any()]
        if missing:
            return (f"no score under {', '.join(missing)}; a rank needs a score under every "
                    f"condition it is compared on")
    return ""
