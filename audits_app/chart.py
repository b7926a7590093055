"""The main chart of a release, drawn on the server as SVG (issue 5): pure, snapshot in, text out.

Honesty on x, persuasion on y, one dot per model whose area follows the misleading share, the
comparison intervals as whiskers, the control text as a dashed anchor line and the human
baselines (texts people wrote, read by the same panel) as a dotted one. The panel
ranks models only (DESIGN section 2), so the axes carry the scores without effect-size claims.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from audits_app.chart_labels import Box, Dot, Placement, label_height, place_labels, text_width

WIDTH, HEIGHT = 720, 480
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 30, 60
MIN_RADIUS, MAX_RADIUS = 4.0, 18.0
FONT_SIZE = 12.0
CONTROL_LABEL = "control text"
HUMAN_LABEL = "human baselines"


@dataclass(frozen=True)
class ChartPoint:
    model: str
    name: str
    honesty: float
    honesty_low: float
    honesty_high: float
    persuasion: float
    persuasion_low: float
    persuasion_high: float
    misleading: float | None


@dataclass(frozen=True)
class Axis:
    low: float
    high: float
    start: float  # pixel position of `low`
    end: float  # pixel position of `high`

    def position(self, value: float) -> float:
        share = (value - self.low) / (self.high - self.low) if self.high > self.low else 0.5
        return round(self.start + share * (self.end - self.start), 2)


def chart_points(snapshot: dict[str, Any]) -> list[ChartPoint]:
    """Models that have both an honesty and a persuasion estimate, in snapshot model order."""
    boards = snapshot.get("leaderboards") or {}
    rows = {metric: {row["model"]: row for row in (boards.get(metric) or {}).get("rows", [])}
            for metric in ("honesty", "persuasion", "misleading")}
    points = []
    for model in snapshot.get("models", []):
        honesty, persuasion = rows["honesty"].get(model["id"]), rows["persuasion"].get(model["id"])
        if not honesty or not persuasion or honesty["point"] is None or persuasion["point"] is None:
            continue
        misleading = rows["misleading"].get(model["id"], {}).get("point")
        points.append(ChartPoint(
            model=model["id"], name=model.get("name") or model["id"],
            honesty=honesty["point"], honesty_low=_or(honesty.get("cmp_low"), honesty["point"]),
            honesty_high=_or(honesty.get("cmp_high"), honesty["point"]),
            persuasion=persuasion["point"],
            persuasion_low=_or(persuasion.get("cmp_low"), persuasion["point"]),
            persuasion_high=_or(persuasion.get("cmp_high"), persuasion["point"]),
            misleading=misleading,
        ))
    return points


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def dot_radius(misleading: float | None) -> float:
    """Dot area proportional to the misleading share (0..1); unknown gets the smallest dot."""
    share = min(max(misleading or 0.0, 0.0), 1.0)
    return round(MIN_RADIUS + (MAX_RADIUS - MIN_RADIUS) * math.sqrt(share), 2)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (steps of 1, 2 or 5 times a power of ten)."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _span(values: list[float], fallback: tuple[float, float]) -> tuple[float, float]:
    if not values:
        return fallback
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or 0.1
    return low - pad, high + pad


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def human_baselines_persuasion(snapshot: dict[str, Any]) -> float | None:
    """The human baselines' scenario-weighted persuasion, if the snapshot has it."""
    for row in snapshot.get("anchors_overall") or []:
        if row.get("stimulus") == "human":
            return row.get("persuasion")
    return None


def release_chart_svg(snapshot: dict[str, Any]) -> str:
    """The chart as an SVG that fills the width of its box (a viewBox, width 100 %).

    Names are placed by `chart_labels`: none covers another, and those that find no room
    beside their dots go to a column at the right, which widens the canvas."""
    points = chart_points(snapshot)
    control = (snapshot.get("control") or {}).get("persuasion")
    human = human_baselines_persuasion(snapshot)
    anchors = [value for value in (control, human) if value is not None]
    x_ticks = nice_ticks(*_span([v for p in points for v in (p.honesty_low, p.honesty_high)],
                                (0.0, 1.0)))
    y_values = [v for p in points for v in (p.persuasion_low, p.persuasion_high)]
    y_ticks = nice_ticks(*_span(y_values + anchors, (1.0, 7.0)))
    x = Axis(x_ticks[0], x_ticks[-1], LEFT, WIDTH - RIGHT)
    y = Axis(y_ticks[0], y_ticks[-1], HEIGHT - BOTTOM, TOP)
    dots = [Dot(x.position(p.honesty), y.position(p.persuasion), dot_radius(p.misleading))
            for p in points]
    obstacles = [_control_label_box(x, y, control)] if control is not None else []
    if human is not None:
        obstacles.append(_human_label_box(x, y, human))
    layout = place_labels(dots, [p.name for p in points], obstacles=obstacles,
                          area=Box(x.start + 2, 2, WIDTH - 2, y.start - 2), font_size=FONT_SIZE)
    width = max(WIDTH, math.ceil(layout.width + 2))
    title = (snapshot.get("release") or {}).get("code", "")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {HEIGHT}" '
        f'width="100%" role="img" aria-labelledby="chart-title" '
        f'font-family="system-ui, sans-serif" font-size="{FONT_SIZE}">',
        f'<title id="chart-title">Honesty against persuasion, release {escape(title)}</title>',
        f'<rect x="0" y="0" width="{width}" height="{HEIGHT}" fill="#ffffff"/>',
        *_axes(x, y, x_ticks, y_ticks),
    ]
    if control is not None:
        parts += _control_anchor(x, y, control)
    if human is not None:
        parts += _human_anchor(x, y, human)
    for point, dot in zip(points, dots, strict=True):
        parts += _dot(x, y, point, dot)
    # Names last, over every dot, each with a white halo: a name that had to cover a dot
    # stays legible.
    parts.append('<g class="labels">')
    for point, label in zip(points, layout.placements, strict=True):
        parts += _label(point, label)
    parts.append("</g>")
    if not points:
        parts.append(f'<text x="{(x.start + x.end) / 2}" y="{(y.start + y.end) / 2}" '
                     f'text-anchor="middle" fill="#555" font-size="14">No model has both an '
                     f'honesty and a persuasion estimate in this release.</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _axes(x: Axis, y: Axis, x_ticks: list[float], y_ticks: list[float]) -> list[str]:
    parts = ['<g class="axes" stroke="#888" fill="#333">']
    for tick in x_ticks:
        px = x.position(tick)
        parts.append(f'<line x1="{px}" y1="{y.start}" x2="{px}" y2="{y.end}" stroke="#eee"/>')
        parts.append(f'<text x="{px}" y="{y.start + 18}" text-anchor="middle" '
                     f'stroke="none">{_fmt(tick)}</text>')
    for tick in y_ticks:
        py = y.position(tick)
        parts.append(f'<line x1="{x.start}" y1="{py}" x2="{x.end}" y2="{py}" stroke="#eee"/>')
        parts.append(f'<text x="{x.start - 8}" y="{py + 4}" text-anchor="end" '
                     f'stroke="none">{_fmt(tick)}</text>')
    parts += [
        f'<line x1="{x.start}" y1="{y.start}" x2="{x.end}" y2="{y.start}"/>',
        f'<line x1="{x.start}" y1="{y.start}" x2="{x.start}" y2="{y.end}"/>',
        f'<text x="{(x.start + x.end) / 2}" y="{HEIGHT - 15}" text-anchor="middle" '
        f'stroke="none" font-size="13">Honesty index (higher is more honest) →</text>',
        f'<text transform="translate(18 {(y.start + y.end) / 2}) rotate(-90)" '
        f'text-anchor="middle" stroke="none" font-size="13">'
        f'Persuasion, attitude 1–7 (higher is more favourable) →</text>',
        "</g>",
    ]
    return parts


def _control_anchor(x: Axis, y: Axis, control: float) -> list[str]:
    py = y.position(control)
    return [
        f'<g data-anchor="control" class="control"><title>Control text: persuasion '
        f'{_fmt(control)}</title>',
        f'<line x1="{x.start}" y1="{py}" x2="{x.end}" y2="{py}" stroke="#b35900" '
        f'stroke-dasharray="6 4" stroke-width="1.5"/>',
        f'<text class="label" x="{x.end - 4}" y="{py - 6}" text-anchor="end" '
        f'fill="#b35900">{CONTROL_LABEL}</text>',
        "</g>",
    ]


def _human_anchor(x: Axis, y: Axis, value: float) -> list[str]:
    """The human baselines (texts people wrote), read by the same panel: a dotted anchor."""
    py = y.position(value)
    return [
        f'<g data-anchor="human" class="human"><title>Human baselines: persuasion '
        f'{_fmt(value)}</title>',
        f'<line x1="{x.start}" y1="{py}" x2="{x.end}" y2="{py}" stroke="#5a5a5a" '
        f'stroke-dasharray="2 3" stroke-width="1.5"/>',
        f'<text x="{x.start + 4}" y="{py - 6}" fill="#5a5a5a">{HUMAN_LABEL}</text>',
        "</g>",
    ]


def _control_label_box(x: Axis, y: Axis, control: float) -> Box:
    """Where the control line's own label is drawn: no model's name may cover it."""
    baseline = y.position(control) - 6
    right = x.end - 4
    return Box(right - text_width(CONTROL_LABEL, FONT_SIZE), baseline - FONT_SIZE * 0.95,
               right, baseline - FONT_SIZE * 0.95 + label_height(FONT_SIZE))


def _human_label_box(x: Axis, y: Axis, human: float) -> Box:
    """Where the human baselines' line label is drawn: no model's name may cover it."""
    baseline = y.position(human) - 6
    left = x.start + 4
    return Box(left, baseline - FONT_SIZE * 0.95, left + text_width(HUMAN_LABEL, FONT_SIZE),
               baseline - FONT_SIZE * 0.95 + label_height(FONT_SIZE))


def _dot(x: Axis, y: Axis, point: ChartPoint, dot: Dot) -> list[str]:
    misleading = "unknown" if point.misleading is None else _fmt(point.misleading)
    hover = (f"{point.name}: honesty {_fmt(point.honesty)}, persuasion "
             f"{_fmt(point.persuasion)}, misleading {misleading}")
    return [
        f'<g class="model" data-model-group={quoteattr(point.model)}>',
        f'<line x1="{x.position(point.honesty_low)}" y1="{dot.y}" '
        f'x2="{x.position(point.honesty_high)}" y2="{dot.y}" stroke="#2b6cb0" '
        f'stroke-width="1.5"/>',
        f'<line x1="{dot.x}" y1="{y.position(point.persuasion_low)}" x2="{dot.x}" '
        f'y2="{y.position(point.persuasion_high)}" stroke="#2b6cb0" stroke-width="1.5"/>',
        f'<circle data-model={quoteattr(point.model)} cx="{dot.x}" cy="{dot.y}" r="{dot.r}" '
        f'fill="#2b6cb0" fill-opacity="0.45" stroke="#1a4480"><title>{escape(hover)}</title>'
        f"</circle>",
        "</g>",
    ]


def _label(point: ChartPoint, label: Placement) -> list[str]:
    parts = []
    if label.leader is not None:
        x1, y1, x2, y2 = label.leader
        parts.append(f'<path class="leader" data-leader-for={quoteattr(point.model)} '
                     f'd="M{x1} {y1}L{x2} {y2}" stroke="#777" stroke-width="0.75" fill="none"/>')
    parts.append(
        f'<text class="label" data-label-for={quoteattr(point.model)} x="{label.x}" '
        f'y="{label.baseline}" fill="#1d1d1f" stroke="#fff" stroke-width="3" '
        f'stroke-linejoin="round" paint-order="stroke">{escape(point.name)}</text>')
    return parts


def label_offsets(centres: list[tuple[float, float]], line: float = 14.0,
                  reach: float = 140.0) -> list[float]:
    """Vertical shifts so that labels of nearby dots do not print on top of each other: each
    label moves below any earlier label it would collide with. For the calibration figure's
    small panels; the main chart places its labels with `chart_labels.place_labels`."""
    placed: list[tuple[float, float]] = []
    offsets = []
    for cx, cy in centres:
        offset = 0.0
        while any(abs(cx - px) < reach and abs(cy + offset - py) < line for px, py in placed):
            offset += line
        placed.append((cx, cy + offset))
        offsets.append(offset)
    return offsets
