"""The cells a release keeps for its arena (DESIGN section 9: arena texts cannot be looked up).

At publication, `held_share` of each public scenario's cells (scenario x task x condition x
variant; `runs_app.schemas.Arena`) are drawn, seeded by the release's seed, and frozen in the
snapshot under `arena.cells`. Their texts are the only ones the arena may pair, and no public
page, answer or archive shows them until the arena closes: a voter who has seen a text can
find it nowhere with its writer's name. Whole cells are held, every writer's text in them, so
the texts that remain public leave no gap that would name a writer either.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runs_app.schemas import ReleaseConfig

Cell = tuple[str, str, str, int]  # scenario slug, task, condition, variant

# Mixed into the release's seed, so that the draw is its own and not the bootstrap's.
DRAW_STREAM = 9


def arena_cells_draw(config: ReleaseConfig, public_slugs: list[str]) -> list[Cell]:
    """The held cells: per public scenario, ceil(share x its cells), drawn without
    replacement; none when the share is 0. Config order within each scenario."""
    share = config.arena.held_share
    if share <= 0:
        return []
    rng = np.random.default_rng([config.bootstrap.seed, DRAW_STREAM])
    per_scenario = [(task, condition, variant) for task in config.tasks
                    for condition in config.conditions for variant in range(config.variants)]
    wanted = min(len(per_scenario), math.ceil(share * len(per_scenario)))
    held: list[Cell] = []
    for slug in public_slugs:
        chosen = sorted(rng.choice(len(per_scenario), size=wanted, replace=False).tolist())
        held += [(slug, *per_scenario[index]) for index in chosen]
    return held


def held_cells(snapshot: dict[str, Any]) -> set[Cell]:
    """The cells the snapshot holds for its arena (none in a snapshot frozen before arenas
    held cells)."""
    arena = snapshot.get("arena") or {}
    return {(cell["scenario"], cell["task"], cell["condition"], int(cell["variant"]))
            for cell in arena.get("cells", [])}


def text_cell(text: dict[str, Any]) -> Cell:
    return (text.get("scenario"), text.get("task"), text.get("condition"),
            int(text.get("variant") or 0))


def arena_entry(cells: list[Cell]) -> dict[str, Any]:
    """What the snapshot keeps: the cells, in the order drawn."""
    return {"cells": [{"scenario": slug, "task": task, "condition": condition,
                       "variant": variant} for slug, task, condition, variant in cells]}
