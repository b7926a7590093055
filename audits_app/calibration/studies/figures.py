"""A reading study's calibration figure: people against the simulated public, per model
(DESIGN sections 2 and 10). Pure: plain rows in, plain figures out.

People's per-model means carry intervals from resampling both scenarios (the release's one
matrix of resample counts) and participants (a Poisson weight per participant and resample,
drawn with the study's seed): a result should hold for the next scenario and the next reader.
Per resample, a cell (model x scenario) is the weighted mean of its readers' values, and a
model's mean is the scenario-weighted mean of its cells; all resamples at once, no loop.
The rank correlation and the text-level correlations come from `calibration_figures`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from audits_app.calibration.figures import BOUNDS, MEASURES


def two_stage_means(values: np.ndarray, models: np.ndarray, scenarios: np.ndarray,
                    participants: np.ndarray, model_count: int, counts: np.ndarray,
                    seed: int) -> np.ndarray:
    """Per resample and model, the mean (shape B x M; NaN where a model has no cell).

    `values`, `models`, `scenarios`, `participants`: one entry per response (indices);
    `counts`: B x S scenario resample counts."""
    resamples, scenario_count = counts.shape
    people = int(participants.max()) + 1 if len(participants) else 0
    weights = np.random.default_rng(seed).poisson(1.0, size=(resamples, people)).astype(float)
    per_response = weights[:, participants]  # B x R
    cell = models * scenario_count + scenarios
    design = np.zeros((len(values), model_count * scenario_count))
    design[np.arange(len(values)), cell] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        cell_means = ((per_response * values) @ design) / (per_response @ design)
    cell_means = cell_means.reshape(resamples, model_count, scenario_count)
    present = ~np.isnan(cell_means)
    scenario_weights = counts[:, None, :] * present
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.nansum(cell_means * counts[:, None, :], axis=2)
                / scenario_weights.sum(axis=2))


def people_intervals(responses: list[dict[str, Any]], models: list[str], scenarios: list[int],
                     counts: np.ndarray, level: float, seed: int
                     ) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """measure -> model -> {people_low, people_high, people_n}; `responses` as
    `study_calibration` builds them: reader, model, scenario (id), persuasion, misleading."""
    readers = {reader: i for i, reader in enumerate(sorted({r["reader"] for r in responses}))}
    found: dict[str, dict[str, dict]] = {}
    for measure in MEASURES:
        rows = [r for r in responses if r.get(measure) is not None
                and r["model"] in models and r["scenario"] in scenarios]
        means = two_stage_means(
            np.array([r[measure] for r in rows], dtype=float),
            np.array([models.index(r["model"]) for r in rows], dtype=int),
            np.array([scenarios.index(r["scenario"]) for r in rows], dtype=int),
            np.array([readers[r["reader"]] for r in rows], dtype=int),
            len(models), counts, seed) if rows else np.full((1, len(models)), np.nan)
        tail = (1 - level) / 2 * 100
        low, high = BOUNDS[measure]
        found[measure] = {}
        for i, model in enumerate(models):
            column = means[:, i][~np.isnan(means[:, i])]
            n = len({r["reader"] for r in rows if r["model"] == model})
            found[measure][model] = {
                "people_low": float(np.clip(np.percentile(column, tail), low, high))
                if len(column) else None,
                "people_high": float(np.clip(np.percentile(column, 100 - tail), low, high))
                if len(column) else None,
                "people_n": n}
    return found


def attitude_effects(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model, people's mean attitude after its texts minus, per scenario, people's mean
    after the control text and people's mean knowing only the organisation (no text),
    averaged over the scenarios where both exist. `rows`: kind (text/control/none), model,
    scenario, reader, attitude (the reader's mean answer)."""
    by: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        by[(row["kind"], row.get("model") or "", row["scenario"])].append(row["attitude"])
    mean = {key: float(np.mean(values)) for key, values in by.items()}
    models = sorted({model for kind, model, _ in by if kind == "text"})
    effects = []
    for model in models:
        scenarios = [s for kind, m, s in by if kind == "text" and m == model]
        versus_control = [mean[("text", model, s)] - mean[("control", "", s)]
                          for s in scenarios if ("control", "", s) in mean]
        versus_none = [mean[("text", model, s)] - mean[("none", "", s)]
                       for s in scenarios if ("none", "", s) in mean]
        effects.append({
            "model": model,
            "readers": len({r["reader"] for r in rows if r.get("model") == model}),
            "versus_control": float(np.mean(versus_control)) if versus_control else None,
            "versus_none": float(np.mean(versus_none)) if versus_none else None})
    return effects
