"""The simulated public against human readers: the figures and the calibration figure.

DESIGN section 2: the simulated public supports ranking only, and its calibration against
people is shown prominently once it exists. Pure: per-text values in, figures out; the SVG,
the table and the CSV rows are drawn from a published snapshot's `calibration` entry.

For persuasion and misleading alike: per model, people's mean and the simulated public's mean
over the texts both read (each scenario weighted equally, expanded-t intervals by resampling
scenarios); Spearman and Kendall correlations of the two model orderings with intervals from
the release's resample matrix (`statistics.agreement.rank_agreement`); and the Pearson and
Spearman correlation of the two over the texts themselves.
"""

from __future__ import annotations

import math
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from audits_app.leaderboard.chart import Axis, frame_ticks
from audits_app.leaderboard.chart_labels import Box, Dot, Placement, place_labels
from audits_app.publication.snapshot_model import ReleaseSnapshot
from audits_app.statistics import agreement
from audits_app.statistics.intervals import cluster_interval
from audits_app.templatetags.numbers import true_minus

MEASURES = {
    "persuasion": "Persuasion (mean attitude 1–7 after reading)",
    "misleading": "Misleading (share of knowledge questions wrong)",
}
# Intervals are symmetric (expanded t) and are clipped to what the measure can take.
BOUNDS = {"persuasion": (1.0, 7.0), "misleading": (0.0, 1.0)}
CSV_COLUMNS = ["row", "measure", "model", "model_name", "people", "people_low", "people_high",
               "simulated", "simulated_low", "simulated_high", "texts", "statistic", "point",
               "low", "high"]


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def calibration_figures(human: dict[str, dict[int, float]], simulated: dict[str, dict[int, float]],
                        cells: dict[int, tuple[str, int]], models: list[str],
                        scenarios: list[int], counts: np.ndarray, level: float
                        ) -> dict[str, Any]:
    """`human`/`simulated`: measure -> generation id -> the text's mean over its readers;
    `cells`: generation id -> (model, scenario id); `scenarios` the resample matrix's columns."""
    measures = {}
    for measure in MEASURES:
        shared = sorted(set(human[measure]) & set(simulated[measure]) & set(cells))
        grids = {side: np.full((len(models), len(scenarios)), np.nan)
                 for side in ("people", "simulated")}
        grouped: dict[tuple[int, int], list[int]] = {}
        for pk in shared:
            model, scenario = cells[pk]
            if model in models and scenario in scenarios:
                grouped.setdefault((models.index(model), scenarios.index(scenario)),
                                   []).append(pk)
        for (row, column), pks in grouped.items():
            grids["people"][row, column] = np.mean([human[measure][pk] for pk in pks])
            grids["simulated"][row, column] = np.mean([simulated[measure][pk] for pk in pks])
        people = [human[measure][pk] for pk in shared]
        public = [simulated[measure][pk] for pk in shared]
        measures[measure] = {
            "texts": len(shared),
            "text_level": {"pearson": _number(agreement.pearson(people, public)),
                           "spearman": _number(agreement.spearman(people, public))},
            "model_order": agreement.rank_agreement(grids["people"], grids["simulated"],
                                                    counts, level),
            "models": _model_rows(models, grids, grouped, counts, level, BOUNDS[measure]),
        }
    persuasion = measures["persuasion"]
    # The keys pages and snapshots published before misleading was added still read.
    return {"measure": "persuasion (mean attitude answer after reading)",
            "texts": persuasion["texts"], "text_level": persuasion["text_level"],
            "model_order": {"model_ids": models, **persuasion["model_order"]},
            "measures": measures, "level": level}


def _model_rows(models: list[str], grids: dict[str, np.ndarray],
                grouped: dict[tuple[int, int], list[int]], counts: np.ndarray,
                level: float, bounds: tuple[float, float]) -> list[dict[str, Any]]:
    estimates = {}
    for side, grid in grids.items():
        present = ~np.isnan(grid)
        point, low, high = cluster_interval(np.nan_to_num(grid), present, counts, level,
                                            "expanded_t")
        estimates[side] = (point, np.clip(low, *bounds), np.clip(high, *bounds))
    rows = []
    for i, model in enumerate(models):
        texts = sum(len(pks) for (row, _), pks in grouped.items() if row == i)
        if not texts:
            continue
        rows.append({"model": model, "texts": texts, **{
            f"{side}{suffix}": _number(values[k][i])
            for side, values in estimates.items()
            for k, suffix in enumerate(("", "_low", "_high"))}})
    return rows


NOT_CALIBRATED = ("the simulated public is not calibrated against people: its figures rank "
                  "models and say nothing about effect sizes.")
CALIBRATION_PENDING = (
    "No human reader results exist for this release yet, so " + NOT_CALIBRATED +
    " Once people have read the same texts, a figure here compares their persuasion and "
    "misleading with the simulated public's, model by model.")
STIMULUS_WORDS = {"none": "no text (the baseline without text)", "control": "the control text",
                  "human": "a human baseline (H1, H2)"}


def _count(number: int, word: str, plural: str = "") -> str:
    return f"{number} {word if number == 1 else plural or word + 's'}"


def unused_readers_note(entry: dict[str, Any], names: dict[str, str]) -> str:
    """Why the calibration figure uses none of the human reader results that were imported
    (`calibration.selectors.human_readers_unused`), in words: people read no model's text,
    or texts the simulated public did not read, or texts of one model only (the figure
    compares models)."""
    rows, stimuli = entry.get("rows") or 0, entry.get("stimuli") or {}
    texts, both = entry.get("texts") or 0, entry.get("texts_read_by_both") or 0
    others = [f"{count} read {STIMULUS_WORDS[kind]}" for kind, count in stimuli.items()
              if kind in STIMULUS_WORDS and count]
    opening = (f"{_count(rows, 'human reader result')} "
               f"({_count(entry.get('readers') or 0, 'reader')}) "
               f"{'was' if rows == 1 else 'were'} imported for this release, but the calibration "
               f"figure uses none of them: it compares people with the simulated public on "
               f"models' texts that both read, for at least two models. ")
    if not texts:
        reason = f"None of them is a reading of a model's text: {', '.join(others)}."
    elif not both:
        reason = (f"People read {_count(texts, 'model text')}, none of which the simulated "
                  f"public read with a scored answer")
        reason += f" (the other rows: {', '.join(others)})." if others else "."
    else:
        models = entry.get("models") or []
        writer = ", ".join(names.get(model, model) for model in models) or "one model"
        reason = (f"The {_count(both, 'text')} read by both people and the simulated public "
                  f"{'is' if both == 1 else 'are all'} by one model ({writer})")
        reason += f"; the other rows: {', '.join(others)}." if others else "."
    return f"{opening}{reason} So {NOT_CALIBRATED}"


# ---------------------------------------------------------------------------------------
# From a snapshot: the table, the CSV rows and the figure
# ---------------------------------------------------------------------------------------


def snapshot_calibration(snapshot: ReleaseSnapshot) -> dict[str, Any] | None:
    """The snapshot's calibration with per-model figures, or None (none, or published
    before per-model figures were kept)."""
    summary = snapshot.calibration_summary()
    if summary is None or not isinstance(summary.get("measures"), dict):
        return None
    return summary


def calibration_table(summary: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """Per measure: its model rows (named) and its correlations, for the page and the API."""
    table = {}
    for measure, label in MEASURES.items():
        figures = (summary.get("measures") or {}).get(measure) or {}
        table[measure] = {
            "label": label, "texts": figures.get("texts"),
            "text_level": figures.get("text_level") or {},
            "spearman": (figures.get("model_order") or {}).get("spearman") or {},
            "kendall": (figures.get("model_order") or {}).get("kendall") or {},
            "models": [{**row, "model_name": names.get(row["model"], row["model"])}
                       for row in figures.get("models") or []],
        }
    return table


def calibration_csv_rows(summary: dict[str, Any], names: dict[str, str]) -> list[dict]:
    rows = []
    for measure, figures in calibration_table(summary, names).items():
        for row in figures["models"]:
            rows.append({"row": "model", "measure": measure, **{
                key: row.get(key) for key in CSV_COLUMNS[2:11]}})
        for statistic in ("spearman", "kendall"):
            rows.append({"row": "model_order", "measure": measure, "statistic": statistic,
                         **{key: figures[statistic].get(key) for key in ("point", "low",
                                                                          "high")}})
        for statistic in ("pearson", "spearman"):
            rows.append({"row": "text_level", "measure": measure, "statistic": statistic,
                         "texts": figures["texts"],
                         "point": figures["text_level"].get(statistic)})
    return rows


PANEL_WIDTH, PANEL_HEIGHT = 360, 330
DOT_RADIUS, FONT_SIZE = 5.0, 11.0
SCALE_TICKS = {"persuasion": 6, "misleading": 5}  # 1, 2, … 7 and 0, 0.2, … 1
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 58, 18, 44, 52


def calibration_svg(summary: dict[str, Any], names: dict[str, str], code: str = "") -> str:
    """Two scatter panels side by side, persuasion and misleading: one dot per model, people
    on x and the simulated public on y, with both intervals as whiskers and the rank
    correlation in each panel's title. Agreement shows as dots in the same order on both
    axes. Both axes run over the measure's whole scale (`BOUNDS`: 1–7, a share 0–1), where
    every mean and interval lies; each name goes beside its own dot, never by another's
    (`chart_labels.place_labels`, as on the main chart)."""
    table = calibration_table(summary, names)
    width = PANEL_WIDTH * len(table)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {PANEL_HEIGHT}" '
        f'width="{width}" height="{PANEL_HEIGHT}" role="img" '
        f'aria-labelledby="calibration-title" font-family="system-ui, sans-serif" '
        f'font-size="11">',
        f'<title id="calibration-title">The simulated public against human readers'
        f'{", release " + escape(code) if code else ""}</title>',
        f'<rect x="0" y="0" width="{width}" height="{PANEL_HEIGHT}" fill="#ffffff"/>',
    ]
    for index, (measure, figures) in enumerate(table.items()):
        parts += _panel(index * PANEL_WIDTH, measure, figures)
    parts.append("</svg>")
    return "\n".join(parts)


def _panel(left: float, measure: str, figures: dict[str, Any]) -> list[str]:
    rows = figures["models"]
    low, high = BOUNDS[measure]
    ticks = frame_ticks(low, high, SCALE_TICKS[measure])
    x = Axis(low, high, left + MARGIN_LEFT, left + PANEL_WIDTH - MARGIN_RIGHT)
    y = Axis(low, high, PANEL_HEIGHT - MARGIN_BOTTOM, MARGIN_TOP)
    rho = figures["spearman"].get("point")
    heading = f"{MEASURES[measure].split(' (')[0]}: Spearman ρ " + (
        "–" if rho is None else f"{_fmt(rho)} [{_fmt(figures['spearman'].get('low'))}, "
        f"{_fmt(figures['spearman'].get('high'))}]")
    parts = [f'<g class="calibration-panel" data-measure="{measure}">',
             f'<text x="{left + PANEL_WIDTH / 2}" y="18" text-anchor="middle" '
             f'font-size="13" font-weight="600">{escape(heading)}</text>',
             f'<text x="{left + PANEL_WIDTH / 2}" y="33" text-anchor="middle" fill="#555">'
             f'{figures["texts"] or 0} texts read by both · text-level Pearson r '
             f'{_fmt(figures["text_level"].get("pearson"))}</text>']
    parts += _grid(x, y, ticks, ticks, measure)
    plotted = [r for r in rows if r.get("people") is not None and r.get("simulated") is not None]
    dots = [Dot(x.clamped(r["people"]), y.clamped(r["simulated"]), DOT_RADIUS) for r in plotted]
    labels = place_labels(dots, [r["model_name"] for r in plotted], font_size=FONT_SIZE,
                          area=Box(x.start + 2, y.end - 6, x.end + MARGIN_RIGHT - 2,
                                   y.start - 2)).placements
    for row, dot, label in zip(plotted, dots, labels, strict=True):
        parts += _dot(x, y, row, dot.x, dot.y, label)
    parts.append("</g>")
    return parts


def _fmt(value: float | None) -> str:
    """A figure in the panel's visible text, with a true minus sign as on the pages."""
    return "–" if value is None else true_minus(f"{value:.2f}")


def _grid(x: Axis, y: Axis, x_ticks: list[float], y_ticks: list[float],
          measure: str) -> list[str]:
    parts = ['<g class="axes" stroke="#888" fill="#333">']
    for tick in x_ticks:
        px = x.position(tick)
        parts += [f'<line x1="{px}" y1="{y.start}" x2="{px}" y2="{y.end}" stroke="#eee"/>',
                  f'<text x="{px}" y="{y.start + 15}" text-anchor="middle" stroke="none">'
                  f'{true_minus(f"{tick:.3g}")}</text>']
    for tick in y_ticks:
        py = y.position(tick)
        parts += [f'<line x1="{x.start}" y1="{py}" x2="{x.end}" y2="{py}" stroke="#eee"/>',
                  f'<text x="{x.start - 6}" y="{py + 4}" text-anchor="end" stroke="none">'
                  f'{true_minus(f"{tick:.3g}")}</text>']
    parts += [f'<line x1="{x.start}" y1="{y.start}" x2="{x.end}" y2="{y.start}"/>',
              f'<line x1="{x.start}" y1="{y.start}" x2="{x.start}" y2="{y.end}"/>',
              f'<text x="{(x.start + x.end) / 2}" y="{PANEL_HEIGHT - 12}" text-anchor="middle" '
              f'stroke="none">People ({measure}) →</text>',
              f'<text transform="translate({x.start - 44} {(y.start + y.end) / 2}) '
              f'rotate(-90)" text-anchor="middle" stroke="none">Simulated public →</text>',
              "</g>"]
    return parts


def _dot(x: Axis, y: Axis, row: dict[str, Any], cx: float, cy: float,
         label: Placement) -> list[str]:
    people, simulated = (true_minus(f"{row[key]:.3g}") for key in ("people", "simulated"))
    hover = (f"{row['model_name']}: people {people}, simulated public {simulated} "
             f"({row['texts']} texts)")
    parts = [f'<g class="model" data-model-group={quoteattr(row["model"])}>']
    if row.get("people_low") is not None and row.get("people_high") is not None:
        parts.append(f'<line x1="{x.position(row["people_low"])}" y1="{cy}" '
                     f'x2="{x.position(row["people_high"])}" y2="{cy}" stroke="#2b6cb0"/>')
    if row.get("simulated_low") is not None and row.get("simulated_high") is not None:
        parts.append(f'<line x1="{cx}" y1="{y.position(row["simulated_low"])}" x2="{cx}" '
                     f'y2="{y.position(row["simulated_high"])}" stroke="#2b6cb0"/>')
    parts.append(f'<circle data-model={quoteattr(row["model"])} cx="{cx}" cy="{cy}" '
                 f'r="{DOT_RADIUS:g}" fill="#2b6cb0" fill-opacity="0.6" stroke="#1a4480">'
                 f'<title>{escape(hover)}</title></circle>')
    if label.leader is not None:
        x1, y1, x2, y2 = label.leader
        parts.append(f'<path class="leader" data-leader-for={quoteattr(row["model"])} '
                     f'd="M{x1} {y1}L{x2} {y2}" stroke="#777" stroke-width="0.75" '
                     f'fill="none"/>')
    parts += [f'<text class="label" data-label-for={quoteattr(row["model"])} x="{label.x}" '
              f'y="{label.baseline}" fill="#1d1d1f" stroke="#fff" stroke-width="3" '
              f'stroke-linejoin="round" paint-order="stroke">{escape(row["model_name"])}'
              f'</text>', "</g>"]
    return parts
