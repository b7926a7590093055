"""The simulated public weighted to a cited population (DESIGN section 10): each reading
position's answers count with its population share. Pure; `calibration.release_weighted`
reads the release's panel answers and the newest weights of its language.

Only where staff recorded a source (citation, URL, date, who) is anything weighted; the page
shows the weighted figures beside the unweighted ones with the source named, and says that
nothing is weighted where there is none. Both carry intervals from the release's own
resampling of scenarios (`weighted_intervals`); the ranks stay the unweighted panel's, as
published.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from audits_app.statistics.intervals import cluster_interval
from runs_app.readers import load_panel

TOLERANCE = 0.01
MEASURES = ("persuasion", "misleading")


def share_problems(shares: Any, language: str, panel: str = "v1") -> list[str]:
    """What is wrong with a shares mapping, each naming the position."""
    if not isinstance(shares, dict):
        return ['give an object of shares, e.g. {"P01": 0.08, …}']
    ids = [position.id for position in load_panel(panel, language).positions]
    problems = [f"{key}: not a reading position of panel {panel}" for key in shares
                if key not in ids]
    problems += [f"{key}: missing" for key in ids if key not in shares]
    for key, value in shares.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            problems.append(f"{key}: {value!r} is not a share (a number from 0 to 1)")
        elif not math.isfinite(value):  # JSON as Python reads it takes NaN and Infinity
            shown = "NaN" if math.isnan(value) else f"{'-' if value < 0 else ''}Infinity"
            problems.append(f"{key}: {shown} is not a number; a share is a number from 0 to 1")
        elif not 0 <= value <= 1:
            problems.append(f"{key}: {value!r} is not between 0 and 1")
    if not problems and abs(sum(shares.values()) - 1) > TOLERANCE:
        problems.append(f"the shares sum to {sum(shares.values()):.3f}, not 1")
    return problems


def weighted_cells(answers: list[tuple[str, str, str, int, float, float | None]],
                   shares: dict[str, float] | None) -> dict[str, dict[tuple[str, str], float]]:
    """measure -> (model, scenario) -> the mean over the scenario's texts of each text's
    answers averaged with `shares` (equal weights when None). `answers`: one (position,
    model, scenario, text, persuasion, misleading) per answer."""
    per_text: dict[tuple, dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: {measure: [] for measure in MEASURES})
    for position, model, scenario, text, persuasion, misleading in answers:
        weight = 1.0 if shares is None else float(shares.get(position, 0.0))
        per_text[(model, scenario, text)]["persuasion"].append((weight, persuasion))
        if misleading is not None:
            per_text[(model, scenario, text)]["misleading"].append((weight, misleading))
    by_scenario: dict[str, dict[tuple[str, str], list[float]]] = {
        measure: defaultdict(list) for measure in MEASURES}
    for (model, scenario, _), measures in per_text.items():
        for measure, pairs in measures.items():
            total = sum(weight for weight, _ in pairs)
            if total > 0:
                by_scenario[measure][(model, scenario)].append(
                    sum(weight * value for weight, value in pairs) / total)
    return {measure: {cell: sum(values) / len(values) for cell, values in cells.items()}
            for measure, cells in by_scenario.items()}


def weighted_means(answers: list[tuple[str, str, str, int, float, float | None]],
                   shares: dict[str, float] | None) -> dict[str, dict[str, float | None]]:
    """Per model, persuasion and misleading: `weighted_cells`, then the mean over the
    scenarios (each counts equally)."""
    cells = weighted_cells(answers, shares)
    models = sorted({model for measure in MEASURES for model, _ in cells[measure]})
    result: dict[str, dict[str, float | None]] = {}
    for model in models:
        result[model] = {}
        for measure in MEASURES:
            values = [value for (m, _), value in cells[measure].items() if m == model]
            result[model][measure] = sum(values) / len(values) if values else None
    return result


def weighted_intervals(answers: list[tuple[str, str, str, int, float, float | None]],
                       shares: dict[str, float] | None, models: list[str],
                       scenarios: list[str], counts: np.ndarray, level: float
                       ) -> dict[str, dict[str, dict[str, float | None]]]:
    """model -> measure -> {point, low, high}: `weighted_means`' points with intervals from
    resampling whole scenarios with the release's matrix of resample counts (`counts[B, S]`,
    columns in `scenarios` order) and its interval rule, as every other figure of the release
    (DESIGN section 6). Scenarios not in `scenarios` are left out; no interval below two."""
    cells = weighted_cells(answers, shares)
    found: dict[str, dict[str, dict[str, float | None]]] = {model: {} for model in models}
    for measure in MEASURES:
        means = np.full((len(models), len(scenarios)), np.nan)
        for (model, scenario), value in cells[measure].items():
            if model in models and scenario in scenarios:
                means[models.index(model), scenarios.index(scenario)] = value
        present = ~np.isnan(means)
        point, low, high = cluster_interval(np.nan_to_num(means), present, counts, level,
                                            "expanded_t")
        for row, model in enumerate(models):
            found[model][measure] = {key: None if np.isnan(values[row]) else float(values[row])
                                     for key, values in (("point", point), ("low", low),
                                                         ("high", high))}
    return found
