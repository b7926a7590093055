"""The main chart is pure: a snapshot in, an SVG string out."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from audits_app.leaderboard import chart
from audits_app.leaderboard.chart import dot_radius, nice_ticks
from audits_app.tests.factories import typed_snapshot

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


def release_chart_svg(data: dict, **options) -> str:
    """The chart of a snapshot the test wrote as stored JSON (the chart reads it typed)."""
    return chart.release_chart_svg(typed_snapshot(data), **options)


def release_dot_plot_svg(data: dict) -> str:
    return chart.release_dot_plot_svg(typed_snapshot(data))


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


# --- The release's frame, coverage, the download and the phone's dot plot ---------------

import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from audits_app.leaderboard.chart_labels import label_height, text_width  # noqa: E402
from runs_app.schemas import ChartFrame  # noqa: E402
from runs_app.services import ReleaseConfigError, release_config_from_file  # noqa: E402

PLOT_X = (chart.LEFT, chart.WIDTH - chart.RIGHT)
PLOT_Y = (chart.TOP, chart.HEIGHT - chart.BOTTOM)


def placed(svg: str) -> dict:
    root = ET.fromstring(svg)
    axes = root.find(f".//{SVG}g[@class='axes']")
    return {
        "root": root,
        # x ticks are centred under the axis, y ticks end left of it
        "x_ticks": [float(t.text) for t in axes.findall(f"{SVG}text[@text-anchor='middle']")
                    if re.fullmatch(r"-?[\d.]+", t.text or "")],
        "y_ticks": [float(t.text) for t in axes.findall(f"{SVG}text[@text-anchor='end']")
                    if re.fullmatch(r"-?[\d.]+", t.text or "")],
        "circles": root.findall(f".//{SVG}circle[@data-model]"),
        "whiskers": [line for group in root.findall(f".//{SVG}g[@class='model']")
                     for line in group.findall(f"{SVG}line")],
    }


def rows_with(values: list[tuple[float, float, float]], coverage: float = 1.0) -> dict:
    """A snapshot with one model per (honesty, persuasion, interval half-width)."""
    data = snapshot([(f"m/{i}", f"Model {i}", 0.2) for i in range(len(values))])
    for metric, position in (("honesty", 0), ("persuasion", 1)):
        for row, value in zip(data["leaderboards"][metric]["rows"], values, strict=True):
            row.update(point=value[position], cmp_low=value[position] - value[2],
                       cmp_high=value[position] + value[2], coverage=coverage)
    return data


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-0.5, 1.5), st.floats(-1.0, 9.0), st.floats(0, 2)),
                min_size=1, max_size=12))
def test_the_axes_stay_within_the_scales_for_any_data(values):
    found = placed(release_chart_svg(rows_with(values)))
    root = found["root"]
    assert root.get("data-frame-honesty") == "0 1"
    assert root.get("data-frame-persuasion") == "1 7"
    assert found["x_ticks"] == [0, 0.2, 0.4, 0.6, 0.8, 1]
    assert found["y_ticks"] == [1, 2, 3, 4, 5, 6, 7]
    for circle in found["circles"]:
        assert PLOT_X[0] <= float(circle.get("cx")) <= PLOT_X[1]
        assert PLOT_Y[0] <= float(circle.get("cy")) <= PLOT_Y[1]
    for line in found["whiskers"]:
        assert PLOT_X[0] <= float(line.get("x1")) <= PLOT_X[1]
        assert PLOT_X[0] <= float(line.get("x2")) <= PLOT_X[1]
        assert PLOT_Y[0] <= float(line.get("y1")) <= PLOT_Y[1]


def test_the_axes_follow_the_releases_frame_and_mark_what_lies_beyond_it():
    data = rows_with([(0.9, 4.0, 0.05), (0.2, 6.5, 0.05)])
    data["chart"] = {"honesty": [0.4, 1.0], "persuasion": [2.0, 6.0], "anchors": []}
    found = placed(release_chart_svg(data))
    assert found["root"].get("data-frame-honesty") == "0.4 1"
    assert found["root"].get("data-frame-persuasion") == "2 6"
    assert min(found["x_ticks"]) >= 0.4 and max(found["x_ticks"]) <= 1
    assert min(found["y_ticks"]) >= 2 and max(found["y_ticks"]) <= 6
    beyond = found["circles"][1]
    assert float(beyond.get("cx")) == PLOT_X[0] and float(beyond.get("cy")) == PLOT_Y[0]
    assert "beyond the release's chart frame" in beyond.find(f"{SVG}title").text
    assert "beyond" not in found["circles"][0].find(f"{SVG}title").text
    # No anchor in the frame: the control line is not drawn.
    assert 'data-anchor="control"' not in release_chart_svg(data)


@pytest.mark.parametrize("frame, problem", [
    ({"honesty": [0.2, 1.2]}, "honesty: the range 0.2 to 1.2 runs past the scale 0 to 1"),
    ({"persuasion": [0, 8]}, "persuasion: the range 0 to 8 runs past the scale 1 to 7"),
    ({"persuasion": [5, 3]}, "persuasion: the range 5 to 3 is empty"),
    ({"anchors": ["control", "control"]}, "anchors: an anchor is named twice"),
])
def test_a_frame_past_a_scale_is_refused_and_never_drawn(frame, problem):
    with pytest.raises(ValidationError, match=problem):
        ChartFrame.model_validate(frame)
    data = rows_with([(0.5, 4.0, 0.1)])
    data["chart"] = frame
    with pytest.raises(ValidationError):
        release_chart_svg(data)


@pytest.mark.django_db
def test_a_release_file_with_a_frame_past_a_scale_names_the_file_and_field(tmp_path):
    from django.conf import settings as django_settings

    source = (django_settings.RELEASES_DIR / "demo.0.yaml").read_text(encoding="utf-8")
    path = tmp_path / "framed.yaml"
    path.write_text(source + "\nchart:\n  honesty: [0.0, 1.2]\n", encoding="utf-8")
    with pytest.raises(ReleaseConfigError) as caught:
        release_config_from_file(path)
    assert caught.value.lines == [
        f"{path}: chart: honesty: the range 0 to 1.2 runs past the scale 0 to 1"]
    path.write_text(source, encoding="utf-8")
    assert release_config_from_file(path).chart == ChartFrame()  # full scales by default


def test_a_partly_covered_model_is_hollow_with_its_share_in_label_and_tooltip():
    data = rows_with([(0.8, 4.0, 0.05), (0.6, 5.0, 0.05)])
    for metric in ("honesty", "persuasion"):
        data["leaderboards"][metric]["rows"][1]["coverage"] = 0.75
    root = ET.fromstring(release_chart_svg(data))
    full, partial = root.findall(f".//{SVG}circle[@data-model]")
    assert (full.get("class"), partial.get("class")) == ("full", "partial")
    assert partial.get("fill") == "#ffffff" and full.get("fill") != "#ffffff"
    assert "coverage 75 % of the cells" in partial.find(f"{SVG}title").text
    label = root.find(f".//{SVG}text[@data-label-for='m/1']")
    assert label.text == "Model 1 (75 %)"
    assert root.find(f".//{SVG}text[@data-label-for='m/0']").text == "Model 0"


def test_the_download_stands_alone():
    data = rows_with([(0.8, 4.0, 0.05)])
    data["method"] = {"level": 0.95}
    svg = release_chart_svg(data, standalone=True, published="2026-12-01")
    words = " ".join(ET.fromstring(svg).itertext())
    for expected in ("BaitBench: honesty against persuasion", "Release t.0",
                     "published 2026-12-01", "Honesty index, 0–1", "Persuasion, attitude 1–7",
                     "hollow: part of the cells scored", "control text", "human baselines",
                     "95% comparison intervals from resampling whole scenarios",
                     "does not measure effect sizes"):
        assert expected in words, expected
    assert "Release t.0" not in " ".join(ET.fromstring(release_chart_svg(data)).itertext())
    legend = ET.fromstring(svg).find(f"{SVG}g[@class='legend']")
    boxes = []
    for text in legend.findall(f"{SVG}text"):
        size = float(text.get("font-size") or chart.FONT_SIZE)
        x, baseline = float(text.get("x")), float(text.get("y"))
        boxes.append((x, baseline - size, x + text_width(text.text, size), baseline))
        assert x + text_width(text.text, size) <= chart.WIDTH, text.text  # inside the file
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]


def label_boxes(svg: str) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Each model name's box as drawn (estimated from the font's advance widths)."""
    boxes = []
    for text in ET.fromstring(svg).iter(f"{SVG}text"):
        if text.get("class") == "label" and text.get("data-label-for"):
            x, baseline = float(text.get("x")), float(text.get("y"))
            top = baseline - chart.FONT_SIZE * 0.95
            boxes.append((text.text, (x, top, x + text_width(text.text, chart.FONT_SIZE),
                                      top + label_height(chart.FONT_SIZE))))
    return boxes


@pytest.mark.parametrize("models", [10, 50])
def test_no_label_overlaps_another_at_10_and_50_models(models):
    # Crowded on purpose: every dot in a small corner, every third one partly covered.
    values = [(0.6 + 0.004 * i, 4.0 + 0.01 * (i % 7), 0.05) for i in range(models)]
    data = rows_with(values)
    for metric in ("honesty", "persuasion"):
        for index, row in enumerate(data["leaderboards"][metric]["rows"]):
            row["coverage"] = 0.5 if index % 3 == 0 else 1.0
    boxes = label_boxes(release_chart_svg(data))
    assert len(boxes) == models
    clashes = [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
               if a[1][0] < b[1][2] and b[1][0] < a[1][2] and a[1][1] < b[1][3]
               and b[1][1] < a[1][3]]
    assert clashes == []


def test_the_dot_plot_ranks_models_on_the_frame_within_360_units():
    data = rows_with([(0.5, 4.0, 0.05), (0.9, 3.0, 0.05), (0.7, 9.0, 0.05)])
    for index, rank in enumerate((3, 1, 2)):
        data["leaderboards"]["honesty"]["rows"][index]["rank"] = rank
    data["leaderboards"]["honesty"]["rows"][0]["coverage"] = 0.5
    root = ET.fromstring(release_dot_plot_svg(data))
    assert root.get("viewBox").split()[2] == "360"
    rows = root.findall(f"{SVG}g[@class='row']")
    assert [row.get("data-model") for row in rows] == ["m/1", "m/2", "m/0"]
    assert rows[2].find(f"{SVG}text").text == "Model 0 (50 %)"
    assert {c.get("class") for c in rows[2].findall(f"{SVG}circle")} == {"partial"}
    persuasion = [c for row in rows for c in row.findall(f"{SVG}circle")
                  if c.get("data-measure") == "persuasion"]
    start, end = chart.PANELS[1][2:]
    assert all(start <= float(c.get("cx")) <= end for c in persuasion)  # 9 held at 7
    name_room = chart.NAME_WIDTH
    long_name = rows_with([(0.5, 4.0, 0.05)])
    long_name["models"][0]["name"] = "A model with a very long name indeed, version 2"
    text = ET.fromstring(release_dot_plot_svg(long_name)).find(
        f".//{SVG}g[@class='row']/{SVG}text").text
    assert text.endswith("…") and text_width(text, chart.FONT_SIZE) <= name_room
