"""Where the main chart puts each model's name: never on top of another name.

Pure and deterministic, dots in and label positions out. A name goes beside its dot where
there is room (eight directions, nearest first), else a little further out with a leader
line, else into a column at the chart's right-hand side with a leader line back to its dot.
The side column widens the chart instead of shrinking its text, so fifty models stay as
readable as ten.

A name's box is estimated before any browser draws it, from per-character advance widths:
the wider of DejaVu Sans and Liberation Sans (the faces a Debian browser uses for
`system-ui, sans-serif`), plus a margin. A box that is free on paper is free on screen; the
browser test measures the drawn boxes to hold this to account.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Advance widths of the printable ASCII characters (space to tilde), in thousandths of an em:
# per character the wider of DejaVu Sans and Liberation Sans, measured in Chromium.
_ASCII_WIDTHS = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 556, 1015, 684, 686, 722,
    770, 667, 611, 778, 752, 295, 500, 667, 557, 863, 748, 787, 667, 787, 722, 667, 611, 732,
    684, 989, 685, 667, 685, 390, 337, 390, 838, 556, 500, 613, 635, 550, 635, 615, 352, 635,
    634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,
    525, 636, 337, 636, 838,
)
WIDTH_MARGIN = 1.06  # other faces and hinting draw a few per cent wider
GAP = 3.0  # between a dot's edge and its label
STEP = 10.0  # each step further out, with a leader line
STEPS = 4  # how far out a label may go before it moves to the side column
COLUMN_GAP = 10.0  # between the plot (or the previous column) and a side column
SLOT_GAP = 2.0  # between two labels stacked in a side column

# Directions around a dot, nearest-looking first: right, left, then the diagonals, then
# straight above and below (a name centred over a dot reads as a title of its neighbours).
DIRECTIONS = ((1, 0), (-1, 0), (1, -1), (1, 1), (-1, -1), (-1, 1), (0, -1), (0, 1))


@dataclass(frozen=True)
class Box:
    left: float
    top: float
    right: float
    bottom: float

    def overlaps(self, other: Box, gap: float = 1.0) -> bool:
        return not (self.right + gap <= other.left or other.right + gap <= self.left
                    or self.bottom + gap <= other.top or other.bottom + gap <= self.top)

    def within(self, other: Box) -> bool:
        return (self.left >= other.left and self.right <= other.right
                and self.top >= other.top and self.bottom <= other.bottom)

    def touches_circle(self, dot: Dot) -> bool:
        nearest_x = min(max(dot.x, self.left), self.right)
        nearest_y = min(max(dot.y, self.top), self.bottom)
        return math.hypot(dot.x - nearest_x, dot.y - nearest_y) < dot.r

    def nearest_point(self, x: float, y: float) -> tuple[float, float]:
        return min(max(x, self.left), self.right), min(max(y, self.top), self.bottom)


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    r: float


@dataclass(frozen=True)
class Placement:
    """Where a label is drawn: `x` is the start of its text, `baseline` its baseline; the
    leader, when there is one, runs from the dot's edge to the label (x1, y1, x2, y2)."""

    x: float
    baseline: float
    box: Box
    leader: tuple[float, float, float, float] | None = None
    in_column: bool = False


@dataclass(frozen=True)
class LabelLayout:
    placements: list[Placement]
    width: float  # the canvas width the layout needs: wider than asked when a column is used


def text_width(text: str, font_size: float) -> float:
    """The estimated advance width of `text` at `font_size` (see the module docstring)."""
    total = 0
    for character in text:
        code = ord(character)
        if 32 <= code <= 126:
            total += _ASCII_WIDTHS[code - 32]
        elif unicodedata.combining(character):
            continue
        elif unicodedata.east_asian_width(character) in ("W", "F"):
            total += 1000
        else:
            total += 800
    return total / 1000 * font_size * WIDTH_MARGIN


def label_height(font_size: float) -> float:
    """A line's box: the faces' ascent and descent (1.17 em) with a margin."""
    return font_size * 1.25


def _ascent(font_size: float) -> float:
    return font_size * 0.95


def _candidate(dot: Dot, direction: tuple[int, int], extra: float, width: float,
               height: float) -> Box:
    dx, dy = direction
    norm = math.hypot(dx, dy)
    reach = dot.r + GAP + extra
    px, py = dot.x + dx / norm * reach, dot.y + dy / norm * reach
    left = px if dx > 0 else px - width if dx < 0 else px - width / 2
    top = py if dy > 0 else py - height if dy < 0 else py - height / 2
    return Box(left, top, left + width, top + height)


def _leader(dot: Dot, box: Box) -> tuple[float, float, float, float]:
    tx, ty = box.nearest_point(dot.x, dot.y)
    distance = math.hypot(tx - dot.x, ty - dot.y) or 1.0
    sx, sy = dot.x + (tx - dot.x) / distance * dot.r, dot.y + (ty - dot.y) / distance * dot.r
    return round(sx, 2), round(sy, 2), round(tx, 2), round(ty, 2)


def leader_crosses(leader: tuple[float, float, float, float], dot: Dot) -> bool:
    """Whether the segment `leader` passes through `dot`'s circle."""
    x1, y1, x2, y2 = leader
    dx, dy = x2 - x1, y2 - y1
    length = dx * dx + dy * dy
    along = 0.0 if length == 0 else max(0.0, min(1.0, ((dot.x - x1) * dx + (dot.y - y1) * dy)
                                                 / length))
    return math.hypot(x1 + along * dx - dot.x, y1 + along * dy - dot.y) < dot.r


def _placement(box: Box, font_size: float, leader=None, in_column: bool = False) -> Placement:
    return Placement(x=round(box.left, 2), baseline=round(box.top + _ascent(font_size), 2),
                     box=box, leader=leader, in_column=in_column)


def place_labels(dots: Sequence[Dot], names: Sequence[str], *, area: Box,
                 obstacles: Iterable[Box] = (), font_size: float = 12.0) -> LabelLayout:
    """One placement per dot, in order; no two label boxes (nor a label and an obstacle)
    overlap, and every box lies within `area`, widened to the right by side columns.

    Three passes, each deterministic: (1) right beside the dot, covering no dot; (2) up to
    STEPS further out with a leader line, covering as few dots as possible; (3) a side column,
    in the order of the dots' height, each name as close to its dot's height as the column
    allows.
    """
    height = label_height(font_size)
    widths = [text_width(name, font_size) for name in names]
    taken: list[Box] = list(obstacles)
    placed: dict[int, Placement] = {}
    for index, dot in enumerate(dots):
        found = _first_free(dot, widths[index], height, area, taken, dots, steps=(0,),
                            covering_none=True)
        if found is not None:
            taken.append(found[0])
            placed[index] = _placement(found[0], font_size)
    for index, dot in enumerate(dots):
        if index in placed:
            continue
        found = _first_free(dot, widths[index], height, area, taken, dots,
                            steps=range(STEPS + 1), covering_none=False)
        if found is not None:
            box, step = found
            taken.append(box)
            placed[index] = _placement(box, font_size, _leader(dot, box) if step else None)
    rest = [index for index in range(len(dots)) if index not in placed]
    width = area.right
    if rest:
        columns, width = _side_columns(rest, dots, widths, height, area, font_size)
        placed.update(columns)
    return LabelLayout([placed[index] for index in range(len(dots))], width)


def _first_free(dot: Dot, width: float, height: float, area: Box, taken: list[Box],
                dots: Sequence[Dot], *, steps: Iterable[int],
                covering_none: bool) -> tuple[Box, int] | None:
    """(box, step) of the first candidate (nearest step, then direction order) inside the
    area and clear of every taken box; with `covering_none`, clear of every other dot too,
    else the candidate that covers the fewest dots. A leader line that runs through another
    dot covers it as a box would: it reads as that dot's name."""
    best: tuple[int, Box, int] | None = None
    for step in steps:
        for direction in DIRECTIONS:
            box = _candidate(dot, direction, step * STEP, width, height)
            if not box.within(area) or any(box.overlaps(other) for other in taken):
                continue
            leader = _leader(dot, box) if step else None
            covered = sum(1 for other in dots if other is not dot and (
                box.touches_circle(other)
                or (leader is not None and leader_crosses(leader, other))))
            if covered == 0:
                return box, step
            if not covering_none and (best is None or covered < best[0]):
                best = (covered, box, step)
    return None if best is None else (best[1], best[2])


def _side_columns(rest: list[int], dots: Sequence[Dot], widths: list[float], height: float,
                  area: Box, font_size: float) -> tuple[dict[int, Placement], float]:
    """Names that found no room, stacked in columns right of the area, top to bottom in the
    order of their dots' height; as many columns as the area's height requires."""
    slot = height + SLOT_GAP
    capacity = max(1, int((area.bottom - area.top + SLOT_GAP) // slot))
    ordered = sorted(rest, key=lambda index: (dots[index].y, dots[index].x, index))
    placed: dict[int, Placement] = {}
    left = area.right + COLUMN_GAP
    for start in range(0, len(ordered), capacity):
        chunk = ordered[start:start + capacity]
        tops = _stack([dots[index].y - height / 2 for index in chunk], slot, area.top,
                      area.bottom - height)
        column_width = max(widths[index] for index in chunk)
        for index, top in zip(chunk, tops, strict=True):
            box = Box(left, top, left + widths[index], top + height)
            placed[index] = _placement(box, font_size, _leader(dots[index], box),
                                       in_column=True)
        left += column_width + COLUMN_GAP
    return placed, left


def _stack(wanted: list[float], slot: float, lowest: float, highest: float) -> list[float]:
    """Tops as close to `wanted` (ascending) as a column allows: at least `slot` apart and
    within [lowest, highest]. Pushed down first, then back up from the bottom."""
    tops: list[float] = []
    for want in wanted:
        tops.append(max(want, lowest, tops[-1] + slot if tops else lowest))
    for position in range(len(tops) - 1, -1, -1):
        ceiling = highest if position == len(tops) - 1 else tops[position + 1] - slot
        tops[position] = max(min(tops[position], ceiling), lowest)
    return [round(top, 2) for top in tops]
