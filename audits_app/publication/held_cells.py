"""The texts a release holds back from the public (DESIGN section 9: arena texts cannot be
looked up; section 10: nor can a reading study's).

At publication, each holder draws `held_share` of the public scenarios (at least one when the
share is above 0; `runs_app.schemas.Arena` and `ReadingStudies`), seeded by the release's
seed, and holds every cell of them (scenario x task x condition x variant), frozen in the
snapshot under the holder's key (`arena.cells`, `reading_studies.cells`). The arena pairs
only its cells' texts and a reading study samples only its own; no public page, answer or
archive shows a held text until its holder reveals them (the arena by closing, reading
studies by a publisher's reveal), so that a person who has read a text can find it nowhere
with its writer's name.

Whole scenarios are held, every writer's every text in them, because a writer's texts on one
scenario are near-copies of each other: the same facts in nearly the same sentences under
another condition, variant or task. Held cell by cell, a held text had a public twin a word
or two apart naming its writer (a tryout found one for each of twelve arena texts). Texts of
other scenarios tell of other organisations and other facts; and the public texts leave no
gap that would name a writer either.

The arena draws first; reading studies then draw from the scenarios the arena left, so no
text is held by both and revealed by one while the other still needs it blind.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from audits_app.publication.snapshot_model import ArenaEntry, ReleaseSnapshot, TextEntry
from runs_app.schemas import ReleaseConfig

Cell = tuple[str, str, str, int]  # scenario slug, task, condition, variant


class Holder(StrEnum):
    """Who holds cells back: the snapshot's key, and the release file's block, of each."""

    ARENA = "arena"
    READING_STUDIES = "reading_studies"


# Mixed into the release's seed, so that each draw is its own and not the bootstrap's.
DRAW_STREAMS = {Holder.ARENA: 9, Holder.READING_STUDIES: 10}


def held_cells_draw(config: ReleaseConfig, public_slugs: list[str]) -> dict[Holder, list[Cell]]:
    """Each holder's cells: every cell of ceil(share x the public scenarios) of them, drawn
    without replacement from the scenarios no earlier holder took (fewer when fewer are
    left); none when the share is 0. Scenarios in the order given, cells in config order."""
    per_scenario = [(task, condition, variant) for task in config.tasks
                    for condition in config.conditions for variant in range(config.variants)]
    free = list(public_slugs)
    draws: dict[Holder, list[Cell]] = {}
    for holder in Holder:
        share = getattr(config, holder.value).held_share
        wanted = min(math.ceil(share * len(public_slugs) - 1e-9), len(free))
        chosen = _draw(config.bootstrap.seed, holder, wanted, free) if share > 0 else set()
        free = [slug for slug in free if slug not in chosen]
        draws[holder] = [(slug, *cell) for slug in public_slugs if slug in chosen
                         for cell in per_scenario]
    return draws


def _draw(seed: int, holder: Holder, wanted: int, free: list[str]) -> set[str]:
    rng = np.random.default_rng([seed, DRAW_STREAMS[holder]])
    return {free[index] for index in rng.choice(len(free), size=wanted, replace=False).tolist()}


def held_entries(draws: dict[Holder, list[Cell]]) -> dict[str, Any]:
    """What the snapshot keeps, in the order drawn: the arena's entry always (snapshots have
    carried it since arenas held cells), reading studies' only when they hold any, so that
    a release without them is frozen, and verified, as before."""
    return {holder.value: {"cells": [
        {"scenario": slug, "task": task, "condition": condition, "variant": variant}
        for slug, task, condition, variant in cells]}
        for holder, cells in draws.items() if cells or holder == Holder.ARENA}


# A holder's entry as the snapshot stores it, checked as `ReleaseSnapshot` checks it.
_HELD_ENTRY = TypeAdapter(ArenaEntry | None)


@dataclass(frozen=True)
class HeldParts:
    """A snapshot's held cells alone, read from its stored parts without the rest of it (the
    generation admin and other releases' texts need no more); `held_cells` and
    `withheld_cells` read it as they read a whole snapshot."""

    arena: ArenaEntry | None
    reading_studies: ArenaEntry | None


def held_parts(stored: Mapping[str, Any]) -> HeldParts:
    """`stored`: each holder's entry (or None) by the holder's key, as in the snapshot."""
    return HeldParts(**{holder.value: _HELD_ENTRY.validate_python(stored.get(holder.value))
                        for holder in Holder})


def held_cells(snapshot: ReleaseSnapshot | HeldParts, holder: Holder) -> set[Cell]:
    """The cells the snapshot holds for `holder` (none in a snapshot frozen before it held
    cells)."""
    entry = getattr(snapshot, holder.value)
    return {(cell.scenario, cell.task, cell.condition, cell.variant)
            for cell in (entry.cells if entry is not None else [])}


def withheld_holders(snapshot: ReleaseSnapshot | HeldParts,
                     revealed: Collection[Holder]) -> list[Holder]:
    """The holders that hold cells of this snapshot and have not revealed them."""
    return [holder for holder in Holder
            if holder not in revealed and held_cells(snapshot, holder)]


def withheld_cells(snapshot: ReleaseSnapshot | HeldParts,
                   revealed: Collection[Holder]) -> set[Cell]:
    """Every cell still kept from the public: held by a holder that has not revealed it."""
    return {cell for holder in withheld_holders(snapshot, revealed)
            for cell in held_cells(snapshot, holder)}


def text_cell(text: TextEntry) -> Cell:
    return (text.scenario, text.task, text.condition, text.variant)
