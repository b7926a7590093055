"""The main chart of a release, drawn on the server as SVG: pure, snapshot in, text out.

Honesty on x, persuasion on y, one dot per model whose area follows the misleading share, the
comparison intervals as whiskers, the control text as a dashed anchor line and the human
baselines (texts people wrote, read by the same panel) as a dotted one. The panel
ranks models only (DESIGN section 2), so the axes carry the scores without effect-size claims.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from audits_app.leaderboard.chart_labels import (
    Box,
    Dot,
    Placement,
    label_height,
    place_labels,
    text_width,
)
from audits_app.publication.snapshot_model import ReleaseSnapshot
from audits_app.templatetags.numbers import percent, true_minus
from runs_app.schemas import ChartFrame

WIDTH, HEIGHT = 720, 480
HEADER, LEGEND = 56, 136  # the download's title band and legend band
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
    # The lower of the two measures' coverage (share of the release's cells scored); None
    # for snapshots that did not record it.
    coverage: float | None = None
    honesty_rank: int | None = None

    @property
    def partly_covered(self) -> bool:
        return self.coverage is not None and self.coverage < 1 - 1e-9

    @property
    def label(self) -> str:
        """The name as the chart prints it: with its coverage where cells are missing."""
        if not self.partly_covered:
            return self.name
        return f"{self.name} ({percent(self.coverage)})"


@dataclass(frozen=True)
class Axis:
    low: float
    high: float
    start: float  # pixel position of `low`
    end: float  # pixel position of `high`

    def position(self, value: float) -> float:
        share = (value - self.low) / (self.high - self.low) if self.high > self.low else 0.5
        return round(self.start + share * (self.end - self.start), 2)

    def clamped(self, value: float) -> float:
        """The position of `value`, held inside the axis (the frame never moves for data)."""
        return self.position(min(max(value, self.low), self.high))

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


def chart_frame(snapshot: ReleaseSnapshot) -> ChartFrame:
    """The frame the release froze (`chart` in the snapshot), validated again: a frame is
    never past a scale. Snapshots frozen before releases had a frame get the full scales."""
    return ChartFrame.model_validate(snapshot.chart.as_data())


def chart_points(snapshot: ReleaseSnapshot) -> list[ChartPoint]:
    """Models that have both an honesty and a persuasion estimate, in snapshot model order."""
    boards = snapshot.leaderboards
    rows = {metric: {row.model: row for row in boards[metric].rows} if metric in boards else {}
            for metric in ("honesty", "persuasion", "misleading")}
    points = []
    for model in snapshot.models:
        honesty, persuasion = rows["honesty"].get(model.id), rows["persuasion"].get(model.id)
        if not honesty or not persuasion or honesty.point is None or persuasion.point is None:
            continue
        misleading = rows["misleading"][model.id].point if model.id in rows["misleading"] \
            else None
        coverages = [row.coverage for row in (honesty, persuasion) if row.coverage is not None]
        points.append(ChartPoint(
            model=model.id, name=model.name or model.id,
            honesty=honesty.point, honesty_low=_or(honesty.cmp_low, honesty.point),
            honesty_high=_or(honesty.cmp_high, honesty.point),
            persuasion=persuasion.point,
            persuasion_low=_or(persuasion.cmp_low, persuasion.point),
            persuasion_high=_or(persuasion.cmp_high, persuasion.point),
            misleading=misleading, coverage=min(coverages) if coverages else None,
            honesty_rank=honesty.rank,
        ))
    return points


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def dot_radius(misleading: float | None) -> float:
    """Dot area proportional to the misleading share (0..1); unknown gets the smallest dot."""
    share = min(max(misleading or 0.0, 0.0), 1.0)
    return round(MIN_RADIUS + (MAX_RADIUS - MIN_RADIUS) * math.sqrt(share), 2)


def nice_step(low: float, high: float, count: int = 5) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about `count` ticks."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (steps of 1, 2 or 5 times a power of ten)."""
    if high <= low:
        high = low + 1.0
    step = nice_step(low, high, count)
    first = math.floor(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def frame_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values inside [low, high] only: the axis ends at the frame, never past it."""
    step = nice_step(low, high, count)
    first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
    return [round(index * step, 10) for index in range(first, last + 1)]


def _fmt(value: float) -> str:
    """A number for an attribute (ASCII, as SVG and scripts read it)."""
    return f"{value:.3g}"


def _shown(value: float) -> str:
    """A number in the figure's visible text: a true minus sign, as the pages write it."""
    return true_minus(_fmt(value))


def human_baselines_persuasion(snapshot: ReleaseSnapshot) -> float | None:
    """The human baselines' scenario-weighted persuasion, if the snapshot has it."""
    for row in snapshot.anchors_overall:
        if row.stimulus == "human":
            return row.persuasion
    return None


def chart_anchors(snapshot: ReleaseSnapshot, frame: ChartFrame) -> dict[str, float]:
    """The anchor lines the frame draws, with their persuasion, where the snapshot has them."""
    values = {"control": snapshot.control.persuasion if snapshot.control else None,
              "human": human_baselines_persuasion(snapshot)}
    low, high = frame.persuasion
    return {name: values[name] for name in frame.anchors
            if values.get(name) is not None and low <= values[name] <= high}


def release_chart_svg(snapshot: ReleaseSnapshot, *, standalone: bool = False,
                      published: str = "") -> str:
    """The chart as an SVG that fills the width of its box (a viewBox, width 100 %).

    The axes are the release's frame (`chart_frame`): they never move with the data and
    never run past a scale; a point or interval beyond a narrowed frame is drawn at its edge
    and says so in its tooltip. Names are placed by `chart_labels`: none covers another, and
    those that find no room beside their dots go to a column at the right, which widens the
    canvas. `standalone` (the download) adds a title, the release and its date, and a legend
    with a note on the intervals, so that the file says what it shows on its own."""
    frame = chart_frame(snapshot)
    points = chart_points(snapshot)
    anchors = chart_anchors(snapshot, frame)
    x = Axis(*frame.honesty, LEFT, WIDTH - RIGHT)
    y = Axis(*frame.persuasion, HEIGHT - BOTTOM, TOP)
    dots = [Dot(x.clamped(p.honesty), y.clamped(p.persuasion), dot_radius(p.misleading))
            for p in points]
    obstacles = []
    if "control" in anchors:
        obstacles.append(_control_label_box(x, y, anchors["control"]))
    if "human" in anchors:
        obstacles.append(_human_label_box(x, y, anchors["human"]))
    layout = place_labels(dots, [p.label for p in points], obstacles=obstacles,
                          area=Box(x.start + 2, 2, WIDTH - 2, y.start - 2), font_size=FONT_SIZE)
    width = max(WIDTH, math.ceil(layout.width + 2))
    code = snapshot.release.code
    header = HEADER if standalone else 0
    legend = _legend(snapshot, width) if standalone else []
    height = HEIGHT + header + (LEGEND if standalone else 0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-labelledby="chart-title" class="main-chart" '
        f'data-frame-honesty="{_fmt(x.low)} {_fmt(x.high)}" '
        f'data-frame-persuasion="{_fmt(y.low)} {_fmt(y.high)}" '
        f'font-family="system-ui, sans-serif" font-size="{FONT_SIZE}">',
        f'<title id="chart-title">Honesty against persuasion, release {escape(code)}</title>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    if standalone:
        parts += _header(code, published)
        parts.append(f'<g transform="translate(0 {header})">')
    parts += _axes(x, y, frame_ticks(x.low, x.high), frame_ticks(y.low, y.high, 6))
    if "control" in anchors:
        parts += _control_anchor(x, y, anchors["control"])
    if "human" in anchors:
        parts += _human_anchor(x, y, anchors["human"])
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
    if standalone:
        parts.append("</g>")
        parts.append(f'<g class="legend" transform="translate(0 {header + HEIGHT})">')
        parts += legend
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _header(code: str, published: str) -> list[str]:
    when = f" · published {published}" if published else ""
    return [
        f'<text x="{LEFT}" y="24" font-size="17" font-weight="600" fill="#1d1d1f">BaitBench: '
        f'honesty against persuasion</text>',
        f'<text x="{LEFT}" y="44" font-size="12" fill="#555">Release {escape(code)}'
        f'{escape(when)}</text>',
    ]


def _legend(snapshot: ReleaseSnapshot, width: int) -> list[str]:
    """What the download needs to stand alone: what every mark means, and what the
    intervals are (and are not)."""
    level = snapshot.method.level
    shown = f"{level:.0%} " if isinstance(level, int | float) else ""
    row1, row2, row3 = 22, 44, 66
    hollow_x = LEFT + 18 + text_width("model, every cell scored", FONT_SIZE) + 24
    human_x = LEFT + 36 + text_width("control text", FONT_SIZE) + 24
    parts = [
        f'<circle cx="{LEFT + 6}" cy="{row1 - 4}" r="6" fill="#2b6cb0" fill-opacity="0.45" '
        f'stroke="#1a4480"/>',
        f'<text x="{LEFT + 18}" y="{row1}" fill="#333">model, every cell scored</text>',
        f'<circle cx="{hollow_x + 6:.1f}" cy="{row1 - 4}" r="6" fill="#ffffff" '
        f'stroke="#1a4480" stroke-dasharray="3 2" stroke-width="1.5"/>',
        f'<text x="{hollow_x + 18:.1f}" y="{row1}" fill="#333">hollow: part of the cells '
        f'scored (share in its label)</text>',
        f'<text x="{LEFT}" y="{row2}" fill="#333">larger dot: more knowledge questions '
        f'answered wrongly (misleading)</text>',
        f'<line x1="{LEFT}" y1="{row3 - 4}" x2="{LEFT + 30}" y2="{row3 - 4}" '
        f'stroke="#b35900" stroke-dasharray="6 4" stroke-width="1.5"/>',
        f'<text x="{LEFT + 36}" y="{row3}" fill="#333">control text</text>',
        f'<line x1="{human_x:.1f}" y1="{row3 - 4}" x2="{human_x + 30:.1f}" y2="{row3 - 4}" '
        f'stroke="#5a5a5a" stroke-dasharray="2 3" stroke-width="1.5"/>',
        f'<text x="{human_x + 36:.1f}" y="{row3}" fill="#333">human baselines</text>',
        f'<text x="{LEFT}" y="{row3 + 24}" fill="#555" font-size="11">Lines are {shown}'
        f'comparison intervals from resampling whole scenarios:</text>',
        f'<text x="{LEFT}" y="{row3 + 40}" fill="#555" font-size="11">for telling models '
        f'apart, not for a model\'s own level (absolute intervals are in the API).</text>',
        f'<text x="{LEFT}" y="{row3 + 56}" fill="#555" font-size="11">The simulated public '
        f'ranks models; it does not measure effect sizes.</text>',
    ]
    return parts


def _axes(x: Axis, y: Axis, x_ticks: list[float], y_ticks: list[float]) -> list[str]:
    parts = ['<g class="axes" stroke="#888" fill="#333">']
    for tick in x_ticks:
        px = x.position(tick)
        parts.append(f'<line x1="{px}" y1="{y.start}" x2="{px}" y2="{y.end}" stroke="#eee"/>')
        parts.append(f'<text x="{px}" y="{y.start + 18}" text-anchor="middle" '
                     f'stroke="none">{_shown(tick)}</text>')
    for tick in y_ticks:
        py = y.position(tick)
        parts.append(f'<line x1="{x.start}" y1="{py}" x2="{x.end}" y2="{py}" stroke="#eee"/>')
        parts.append(f'<text x="{x.start - 8}" y="{py + 4}" text-anchor="end" '
                     f'stroke="none">{_shown(tick)}</text>')
    parts += [
        f'<line x1="{x.start}" y1="{y.start}" x2="{x.end}" y2="{y.start}"/>',
        f'<line x1="{x.start}" y1="{y.start}" x2="{x.start}" y2="{y.end}"/>',
        f'<text x="{(x.start + x.end) / 2}" y="{HEIGHT - 15}" text-anchor="middle" '
        f'stroke="none" font-size="13">Honesty index, 0–1 (higher is more honest) →</text>',
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
        f'{_shown(control)}</title>',
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
        f'{_shown(value)}</title>',
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
    """A model's dot and whiskers, held inside the frame. Below full coverage the dot is
    hollow with a dashed rim, and its share of cells is in the tooltip (and the label)."""
    misleading = "unknown" if point.misleading is None else _shown(point.misleading)
    hover = (f"{point.name}: honesty {_shown(point.honesty)}, persuasion "
             f"{_shown(point.persuasion)}, misleading {misleading}")
    if point.coverage is not None:
        hover += f", coverage {percent(point.coverage)} of the cells"
    if not (x.holds(point.honesty) and y.holds(point.persuasion)):
        hover += " (beyond the release's chart frame: drawn at its edge)"
    fill = ('fill="#ffffff" stroke-dasharray="3 2" stroke-width="1.5"' if point.partly_covered
            else 'fill="#2b6cb0" fill-opacity="0.45"')
    return [
        f'<g class="model" data-model-group={quoteattr(point.model)}>',
        f'<line x1="{x.clamped(point.honesty_low)}" y1="{dot.y}" '
        f'x2="{x.clamped(point.honesty_high)}" y2="{dot.y}" stroke="#2b6cb0" '
        f'stroke-width="1.5"/>',
        f'<line x1="{dot.x}" y1="{y.clamped(point.persuasion_low)}" x2="{dot.x}" '
        f'y2="{y.clamped(point.persuasion_high)}" stroke="#2b6cb0" stroke-width="1.5"/>',
        f'<circle data-model={quoteattr(point.model)} '
        f'data-coverage="{"" if point.coverage is None else _fmt(point.coverage)}" '
        f'class="{"partial" if point.partly_covered else "full"}" cx="{dot.x}" cy="{dot.y}" '
        f'r="{dot.r}" {fill} stroke="#1a4480"><title>{escape(hover)}</title></circle>',
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
        f'stroke-linejoin="round" paint-order="stroke">{escape(point.label)}</text>')
    return parts


# The ranked dot plot that replaces the chart on a narrow screen: one row per model, best
# honesty first, honesty and persuasion each in its own panel on the release's frame.
DOT_WIDTH, DOT_ROW, DOT_TOP = 360, 26, 44
NAME_WIDTH = 128
PANELS = (("honesty", "Honesty", 136, 240), ("persuasion", "Persuasion", 252, 352))


def release_dot_plot_svg(snapshot: ReleaseSnapshot) -> str:
    """The chart for a narrow screen: a ranked dot plot 360 units wide, so no name and no
    axis needs sideways room. Same frame, intervals, anchors and coverage marks."""
    frame = chart_frame(snapshot)
    points = sorted(chart_points(snapshot), key=lambda p: (
        p.honesty_rank if p.honesty_rank is not None else 10**9, -p.honesty))
    anchors = chart_anchors(snapshot, frame)
    height = DOT_TOP + DOT_ROW * max(len(points), 1) + 12
    code = snapshot.release.code
    axes = {key: Axis(*getattr(frame, key), start, end) for key, _, start, end in PANELS}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {DOT_WIDTH} {height}" '
        f'width="100%" role="img" aria-labelledby="dot-plot-title" class="dot-plot" '
        f'font-family="system-ui, sans-serif" font-size="{FONT_SIZE}">',
        f'<title id="dot-plot-title">Honesty and persuasion per model, best honesty first, '
        f'release {escape(code)}</title>',
        f'<rect x="0" y="0" width="{DOT_WIDTH}" height="{height}" fill="#ffffff"/>',
    ]
    bottom = height - 8
    for key, title, start, end in PANELS:
        axis = axes[key]
        parts.append(f'<text x="{(start + end) / 2}" y="14" text-anchor="middle" '
                     f'font-weight="600" fill="#1d1d1f">{title}</text>')
        for tick in frame_ticks(axis.low, axis.high, 2):
            px = axis.position(tick)
            parts.append(f'<line x1="{px}" y1="{DOT_TOP - 8}" x2="{px}" y2="{bottom}" '
                         f'stroke="#eee"/>')
            parts.append(f'<text x="{px}" y="{DOT_TOP - 14}" text-anchor="middle" '
                         f'font-size="11" fill="#333">{_shown(tick)}</text>')
    parts += _dot_plot_anchors(axes["persuasion"], anchors, bottom)
    for index, point in enumerate(points):
        parts += _dot_row(point, axes, DOT_TOP + DOT_ROW * index + DOT_ROW / 2)
    parts.append("</svg>")
    return "\n".join(parts)


def _dot_plot_anchors(axis: Axis, anchors: dict[str, float], bottom: float) -> list[str]:
    """The anchor lines, upright across the persuasion panel."""
    styles = {"control": ("#b35900", "6 4", CONTROL_LABEL), "human": ("#5a5a5a", "2 3",
                                                                      HUMAN_LABEL)}
    parts = []
    for name, value in anchors.items():
        colour, dash, words = styles[name]
        px = axis.position(value)
        parts.append(f'<line data-anchor="{name}" x1="{px}" y1="{DOT_TOP - 8}" x2="{px}" '
                     f'y2="{bottom}" stroke="{colour}" stroke-dasharray="{dash}" '
                     f'stroke-width="1.5"><title>{words}: persuasion {_shown(value)}</title>'
                     f'</line>')
    return parts


def _dot_row(point: ChartPoint, axes: dict[str, Axis], cy: float) -> list[str]:
    """One model's row: its name (shortened to the column, whole in the tooltip, with its
    coverage where cells are missing), then a dot with its interval in each panel."""
    share = f" ({percent(point.coverage)})" if point.partly_covered else ""
    name = _shortened(point.name, NAME_WIDTH - text_width(share, FONT_SIZE)) + share
    fill = ('fill="#ffffff" stroke-dasharray="3 2" stroke-width="1.5"' if point.partly_covered
            else 'fill="#2b6cb0" fill-opacity="0.6"')
    parts = [f'<g class="row" data-model={quoteattr(point.model)}>',
             f'<title>{escape(point.label)}</title>',
             f'<text class="label" x="2" y="{cy + 4}" fill="#1d1d1f">{escape(name)}</text>']
    values = {"honesty": (point.honesty, point.honesty_low, point.honesty_high),
              "persuasion": (point.persuasion, point.persuasion_low, point.persuasion_high)}
    for key, (value, low, high) in values.items():
        axis = axes[key]
        parts.append(f'<line x1="{axis.clamped(low)}" y1="{cy}" x2="{axis.clamped(high)}" '
                     f'y2="{cy}" stroke="#2b6cb0" stroke-width="1.5"/>')
        parts.append(f'<circle data-measure="{key}" '
                     f'class="{"partial" if point.partly_covered else "full"}" '
                     f'cx="{axis.clamped(value)}" cy="{cy}" r="5" {fill} stroke="#1a4480"/>')
    parts.append("</g>")
    return parts


def _shortened(name: str, room: float) -> str:
    """`name`, cut with an ellipsis to fit `room` units at the chart's font size."""
    if text_width(name, FONT_SIZE) <= room:
        return name
    while name and text_width(name + "…", FONT_SIZE) > room:
        name = name[:-1]
    return name.rstrip() + "…"
