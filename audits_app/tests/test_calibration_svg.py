"""The calibration figure drawn from a summary: each model's name by its own dot, and both
axes over the measure's whole scale. Pure: a summary in, SVG out."""

from __future__ import annotations

import math
import re

from audits_app.calibration.figures import BOUNDS, MEASURES, calibration_svg
from audits_app.leaderboard.chart_labels import label_height, text_width
from audits_app.templatetags.numbers import MINUS

FONT_SIZE = 11.0
# Four writers whose means lie close together on a diagonal, as a small study's often do.
MEANS = {"fixture/candid": (3.9, 3.7), "fixture/advocate": (4.1, 3.95),
         "fixture/spinner": (4.2, 4.05), "fixture/refuser": (4.0, 3.85)}
# Misleading is a share: the same spread, as a share of its scale.
SCALES = {"persuasion": lambda mean: mean, "misleading": lambda mean: (mean - 3.0) / 6}
NAMES = {model: model.split("/")[1].capitalize() for model in MEANS}


def summary() -> dict:
    def rows(scale) -> list[dict]:
        return [{"model": model, "texts": 6, "people": scale(people),
                 "people_low": scale(people - 0.3), "people_high": scale(people + 0.3),
                 "simulated": scale(simulated), "simulated_low": scale(simulated - 0.2),
                 "simulated_high": scale(simulated + 0.2)}
                for model, (people, simulated) in MEANS.items()]

    return {"level": 0.95, "measures": {
        measure: {"texts": 24, "text_level": {"pearson": 0.5},
                  "model_order": {"spearman": {"point": 0.8, "low": 0.2, "high": 1.0}},
                  "models": rows(SCALES[measure])}
        for measure in MEASURES}}


def test_every_name_sits_by_its_own_dot():
    """Beside it, nearer to it than to any other dot, or further out with a line to it: a
    name pushed down past the next dot read as that dot's ("Advocate" by Refuser's)."""
    svg = calibration_svg(summary(), NAMES)
    for measure in MEASURES:
        panel = svg.split(f'data-measure="{measure}"')[1].split('class="calibration-panel"')[0]
        groups = re.findall(r'<g class="model" data-model-group="([^"]+)">(.*?)</g>', panel,
                            flags=re.S)
        dots = {model: tuple(map(float, re.search(r'cx="([\d.]+)" cy="([\d.]+)"',
                                                   group).groups())) for model, group in groups}
        labels = [(model, *re.search(r'<text[^>]* x="([\d.]+)" y="([\d.]+)"', group).groups())
                  for model, group in groups]
        leaders = {model: tuple(map(float, found.groups())) for model, group in groups
                   if (found := re.search(r'd="M([\d.]+) ([\d.]+)L', group))}
        assert len(dots) == len(labels) == len(MEANS), measure
        for model, start in leaders.items():  # a name set further out points to its dot
            assert math.dist(start, dots[model]) <= 5.01, (measure, model)
        for model, x, baseline in labels:
            if model in leaders:
                continue
            left, bottom = float(x), float(baseline) + FONT_SIZE * 0.3
            box = (left, bottom - label_height(FONT_SIZE),
                   left + text_width(NAMES[model], FONT_SIZE), bottom)

            def distance(dot: tuple[float, float], box=box) -> float:
                nearest = (min(max(dot[0], box[0]), box[2]), min(max(dot[1], box[1]), box[3]))
                return math.dist(dot, nearest)

            nearest = min(dots, key=lambda other: distance(dots[other]))
            assert nearest == model, (measure, model, nearest)


def test_both_axes_run_over_the_measures_scale():
    svg = calibration_svg(summary(), NAMES)
    for measure, expected in (("persuasion", ["1", "2", "3", "4", "5", "6", "7"]),
                              ("misleading", ["0", "0.2", "0.4", "0.6", "0.8", "1"])):
        panel = svg.split(f'data-measure="{measure}"')[1].split('class="calibration-panel"')[0]
        ticks = re.findall(r'text-anchor="middle" stroke="none">([\d.]+)</text>', panel)
        assert ticks == expected, (measure, ticks)
        assert (float(ticks[0]), float(ticks[-1])) == BOUNDS[measure]


def test_negative_figures_read_with_a_true_minus_and_attributes_stay_ascii():
    """The download (`calibration.svg`) wrote a negative correlation "-0.40" with a
    hyphen-minus, where the pages write U+2212; its coordinates stay ASCII, as SVG reads
    them."""
    figures = summary()
    for measure in figures["measures"].values():
        measure["text_level"] = {"pearson": -0.25}
        measure["model_order"] = {"spearman": {"point": -0.4, "low": -0.9, "high": 0.3}}
    svg = calibration_svg(figures, NAMES, "pub.0")
    texts = "".join(re.findall(r">([^<]*)<", svg))
    assert f"Spearman ρ {MINUS}0.40 [{MINUS}0.90, 0.30]" in texts
    assert f"text-level Pearson r {MINUS}0.25" in texts
    assert not re.search(r"-\d", texts), texts
    assert all(MINUS not in value for value in re.findall(r'="([^"]*)"', svg))
