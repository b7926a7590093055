"""The simulated public weighted to a cited population (DESIGN section 10): each reading
position's answers count with its population share. Pure; `calibration.release_weighted`
reads the release's panel answers and the newest weights of its language.

Only where staff recorded a source (citation, URL, date, who) is anything weighted; the page
shows the weighted figures beside the unweighted ones with the source named, and says that
nothing is weighted where there is none. Points only: the ranks and intervals stay the
unweighted panel's, as published.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from runs_app.readers import load_panel

TOLERANCE = 0.01


def share_problems(shares: Any, language: str, panel: str = "v1") -> list[str]:
    """What is wrong with a shares mapping, each naming the position."""
    if not isinstance(shares, dict):
        return ['give an object of shares, e.g. {"P01": 0.08, …}']
    ids = [position.id for position in load_panel(panel, language).positions]
    problems = [f"{key}: not a reading position of panel {panel}" for key in shares
                if key not in ids]
    problems += [f"{key}: missing" for key in ids if key not in shares]
    for key, value in shares.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            problems.append(f"{key}: {value!r} is not a share (a number from 0 to 1)")
    if not problems and abs(sum(shares.values()) - 1) > TOLERANCE:
        problems.append(f"the shares sum to {sum(shares.values()):.3f}, not 1")
    return problems


def weighted_means(answers: list[tuple[str, str, str, float, float | None]],
                   shares: dict[str, float] | None) -> dict[str, dict[str, float | None]]:
    """Per model, persuasion and misleading: per text the positions' answers averaged with
    `shares` (equal weights when None), then each scenario's texts, then the scenarios.
    `answers`: one (position, model, scenario, text, persuasion, misleading) per answer."""
    per_text: dict[tuple, dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: {"persuasion": [], "misleading": []})
    for position, model, scenario, text, persuasion, misleading in answers:
        weight = 1.0 if shares is None else float(shares.get(position, 0.0))
        per_text[(model, scenario, text)]["persuasion"].append((weight, persuasion))
        if misleading is not None:
            per_text[(model, scenario, text)]["misleading"].append((weight, misleading))
    by_scenario: dict[tuple, dict[str, list[float]]] = defaultdict(
        lambda: {"persuasion": [], "misleading": []})
    for (model, scenario, _), measures in per_text.items():
        for measure, pairs in measures.items():
            total = sum(weight for weight, _ in pairs)
            if total > 0:
                by_scenario[(model, scenario)][measure].append(
                    sum(weight * value for weight, value in pairs) / total)
    result: dict[str, dict[str, list[float]]] = defaultdict(
        lambda: {"persuasion": [], "misleading": []})
    for (model, _), measures in by_scenario.items():
        for measure, values in measures.items():
            if values:
                result[model][measure].append(sum(values) / len(values))
    return {model: {measure: sum(v) / len(v) if v else None for measure, v in m.items()}
            for model, m in result.items()}
