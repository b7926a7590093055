"""Drawing a spot-check batch: how many texts each stratum gets, and which (seeded).

Pure: strata, weights and sizes in, chosen positions out (DESIGN section 6, agreement)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def allocate(stratum_weights: dict[str, float], stratum_sizes: dict[str, int],
             size: int) -> dict[str, int]:
    """Split `size` over strata in proportion to their total weight (largest remainder), never
    more than a stratum holds; what a full stratum cannot take goes to the others."""
    allocation = dict.fromkeys(stratum_sizes, 0)
    remaining = min(size, sum(stratum_sizes.values()))
    open_strata = [name for name in stratum_sizes if stratum_sizes[name] > 0]
    while remaining > 0 and open_strata:
        total = sum(stratum_weights[name] for name in open_strata)
        exact = {name: remaining * stratum_weights[name] / total for name in open_strata}
        shares = {name: int(exact[name]) for name in open_strata}
        by_remainder = sorted(open_strata, key=lambda name: (-(exact[name] - shares[name]), name))
        for name in by_remainder[: remaining - sum(shares.values())]:
            shares[name] += 1
        for name in open_strata:
            take = min(shares[name], stratum_sizes[name] - allocation[name])
            allocation[name] += take
            remaining -= take
        open_strata = [name for name in open_strata if allocation[name] < stratum_sizes[name]]
    return allocation


def stratified_sample(strata: Sequence[str], weights: Sequence[float], size: int,
                      seed: int) -> list[int]:
    """Indices of a weighted stratified sample: per stratum, `allocate`d counts drawn without
    replacement with probability proportional to weight. Same seed, same sample."""
    rng = np.random.default_rng(seed)
    weight = np.asarray(weights, dtype=float)
    members: dict[str, list[int]] = {}
    for index, stratum in enumerate(strata):
        members.setdefault(stratum, []).append(index)
    names = sorted(members)
    allocation = allocate({name: float(weight[members[name]].sum()) for name in names},
                          {name: len(members[name]) for name in names}, size)
    chosen: list[int] = []
    for name in names:
        indices = np.array(members[name])
        probabilities = weight[indices] / weight[indices].sum()
        picked = rng.choice(indices, size=allocation[name], replace=False, p=probabilities)
        chosen.extend(int(index) for index in picked)
    return sorted(chosen)
