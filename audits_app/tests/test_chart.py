"""The main chart is pure: a snapshot in, an SVG string out."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from audits_app.chart import dot_radius, nice_ticks, release_chart_svg

SVG = "{http://www.w3.org/2000/svg}"


def snapshot(models: list[tuple[str, str, float]]) -> dict:
    """(id, name, misleading) per model; honesty and persuasion spread out."""
    rows = {"honesty": [], "persuasion": [], "misleading": []}
    for index, (model_id, _, misleading) in enumerate(models):
        for metric, point in (("honesty", 0.9 - 0.1 * index), ("persuasion", 4 + 0.3 * index),
                              ("misleading", misleading)):
            rows[metric].append({"model": model_id, "rank": index + 1, "point": point,
                                 "abs_low": point - 0.1, "abs_high": point + 0.1,
                                 "cmp_low": point - 0.05, "cmp_high": point + 0.05,
                                 "n_texts": 10})
    return {
        "release": {"code": "t.0"},
        "models": [{"id": m, "name": name, "family": "f"} for m, name, _ in models],
        "leaderboards": {metric: {"higher_is_better": True, "rule": "paired", "rows": r,
                                  "pairs": []} for metric, r in rows.items()},
        "control": {"persuasion": 4.2, "misleading": 0.1},
    }


def test_it_draws_one_dot_per_model_and_the_control_anchor():
    svg = release_chart_svg(snapshot([("a/x", "X", 0.1), ("b/y", "Y", 0.2), ("c/z", "Z", 0.3)]))
    root = ET.fromstring(svg)
    circles = root.findall(f".//{SVG}circle")
    assert [c.get("data-model") for c in circles] == ["a/x", "b/y", "c/z"]
    anchors = [g for g in root.iter() if g.get("data-anchor") == "control"]
    assert len(anchors) == 1
    assert "control text" in "".join(anchors[0].itertext())
    assert all(c.find(f"{SVG}title") is not None for c in circles)


def test_it_escapes_model_names():
    svg = release_chart_svg(snapshot([('evil"/<m>', "<script>alert(1)</script> & co", 0.1)]))
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    root = ET.fromstring(svg)  # still well-formed XML
    assert root.find(f".//{SVG}circle").get("data-model") == 'evil"/<m>'


def test_dot_size_follows_misleading():
    svg = release_chart_svg(snapshot([("a", "A", 0.05), ("b", "B", 0.6), ("c", "C", 0.3)]))
    radii = {c.get("data-model"): float(c.get("r"))
             for c in ET.fromstring(svg).findall(f".//{SVG}circle")}
    assert radii["a"] < radii["c"] < radii["b"]
    assert dot_radius(None) == dot_radius(0.0)


def test_it_draws_comparison_intervals_and_axes():
    svg = release_chart_svg(snapshot([("a", "A", 0.1), ("b", "B", 0.2)]))
    assert "Honesty index" in svg and "Persuasion" in svg
    # Two whiskers per model (honesty horizontal, persuasion vertical).
    group = re.search(r'<g class="model" data-model-group="a">(.*?)</g>', svg, re.S).group(1)
    assert group.count("<line") == 2


def test_it_omits_the_anchor_without_a_control_value():
    data = snapshot([("a", "A", 0.1)])
    data["control"] = {"persuasion": None, "misleading": None}
    assert 'data-anchor="control"' not in release_chart_svg(data)


def test_nice_ticks_cover_the_range():
    ticks = nice_ticks(0.37, 0.93)
    assert ticks[0] <= 0.37 and ticks[-1] >= 0.93


def test_it_says_so_when_no_model_can_be_placed():
    data = snapshot([("a", "A", 0.1)])
    data["leaderboards"]["persuasion"]["rows"][0]["point"] = None
    svg = release_chart_svg(data)
    assert "<circle" not in svg and "No model has both" in svg
    ET.fromstring(svg)


def test_the_svg_fills_its_box_at_any_width():
    root = ET.fromstring(release_chart_svg(snapshot([("a", "A", 0.1), ("b", "B", 0.2)])))
    assert root.get("width") == "100%" and root.get("height") is None
    assert root.get("viewBox") == "0 0 720 480"


def test_models_with_equal_scores_get_one_readable_label_each():
    svg = release_chart_svg(snapshot([(f"m/{i}", f"Model {i}", 0.3) for i in range(3)]))
    root = ET.fromstring(svg)
    labels = {t.get("data-label-for"): t for t in root.iter(f"{SVG}text")
              if t.get("class") == "label" and t.get("data-label-for")}
    assert [labels[f"m/{i}"].text for i in range(3)] == ["Model 0", "Model 1", "Model 2"]


def test_the_human_baselines_are_a_second_anchor_at_their_persuasion():
    data = snapshot([("a", "A", 0.1), ("b", "B", 0.2)])
    assert 'data-anchor="human"' not in release_chart_svg(data)  # older snapshots have none
    data["anchors_overall"] = [
        {"stimulus": "control", "label": "Control text", "persuasion": 4.2},
        {"stimulus": "human", "label": "Human baselines", "persuasion": 5.5}]
    root = ET.fromstring(release_chart_svg(data))
    human = next(g for g in root.iter() if g.get("data-anchor") == "human")
    control = next(g for g in root.iter() if g.get("data-anchor") == "control")
    assert "human baselines" in "".join(human.itertext())
    # Higher persuasion is higher on the chart: a smaller y.
    assert float(human.find(f"{SVG}line").get("y1")) < float(control.find(f"{SVG}line").get("y1"))
