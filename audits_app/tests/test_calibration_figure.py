"""The calibration figure: the simulated public against people, near the top of the page."""

from __future__ import annotations

import csv
import io
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from audits_app.calibration.readers_import import human_readers_import
from audits_app.publication.snapshot import release_snapshot
from audits_app.tests.factories import publication_create
from runs_app.models import (
    Generation,
    ReaderResponse,
    Release,
    ReleaseStatus,
    ReplyOutcome,
    Stimulus,
    WorkStatus,
)
from runs_app.stages import get_stage
from runs_app.stages.base import drain


def _answers(rng: np.random.Generator, lean: int) -> tuple[list[int], list[int | None]]:
    attitude = [int(np.clip(lean + rng.integers(-1, 2), 1, 7)) for _ in range(3)]
    knowledge = [int(rng.integers(0, 4)) if rng.random() < 0.7 else None for _ in range(4)]
    return attitude, knowledge


@pytest.fixture
def calibrated(small_demo_release):
    """Every text read by two simulated positions and by two people, with seeded answers
    whose model orderings mostly, not wholly, agree."""
    release = small_demo_release
    drain(get_stage("generate"), release)
    rng = np.random.default_rng(7)
    # In the order of their cells (text ids are planned in a random order).
    generations = list(Generation.objects.filter(release=release).select_related(
        "model", "scenario_version__scenario").order_by(
        "model__openrouter_id", "scenario_version__scenario__slug", "task", "condition",
        "variant"))
    writers = release.parsed_config().writers
    lines = ["scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4"]
    for generation in generations:
        lean = 2 + writers.index(generation.model.openrouter_id)
        for position in ("P01", "P02"):
            attitude, knowledge = _answers(rng, lean)
            ReaderResponse.objects.create(
                release=release, scenario_version=generation.scenario_version,
                stimulus=Stimulus.GENERATION, stimulus_key=str(generation.pk),
                generation=generation, position=position, status=WorkStatus.DONE,
                outcome=ReplyOutcome.SCORED, attitude=attitude, knowledge=knowledge)
        for reader in ("r1", "r2"):
            attitude, knowledge = _answers(rng, lean + int(rng.integers(-1, 2)))
            cells = [str(v) for v in attitude] + ["dk" if k is None else str(k)
                                                   for k in knowledge]
            lines.append(f"{generation.scenario_version.scenario.slug},{generation.pk},"
                         f"{reader},{','.join(cells)}")
    result = human_readers_import(release=release, csv_text="\n".join(lines) + "\n")
    assert result.ok, result.problems
    return release, generations


def publish(release: Release) -> dict:
    snapshot = release_snapshot(release)
    publication_create(release=release, snapshot=snapshot)
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.PUBLISHED)
    return snapshot


def _by_hand(release: Release, generations, measure: str) -> dict:
    """Per text and per model (each scenario weighted equally), from the stored rows."""
    from audits_app.models import HumanReaderResult

    correct = {g.pk: [q["correct"] for q in g.scenario_version.content["knowledge_questions"]]
               for g in generations}

    def value(gid: int, attitude, knowledge) -> float:
        if measure == "persuasion":
            return float(np.mean(attitude))
        return sum(k is not None and k != c for k, c in zip(knowledge, correct[gid],
                                                            strict=True)) / 4

    people, public = defaultdict(list), defaultdict(list)
    for row in HumanReaderResult.objects.filter(release=release):
        people[row.generation_id].append(value(row.generation_id, row.attitude, row.knowledge))
    for row in ReaderResponse.objects.filter(release=release):
        public[row.generation_id].append(value(row.generation_id, row.attitude, row.knowledge))
    texts = sorted(people)
    per_model = {}
    for side, values in (("people", people), ("simulated", public)):
        cells = defaultdict(list)
        for g in generations:
            cells[(g.model.openrouter_id, g.scenario_version.scenario_id)].append(
                np.mean(values[g.pk]))
        for model in release.parsed_config().writers:
            means = [np.mean(v) for (m, _), v in cells.items() if m == model]
            per_model.setdefault(model, {})[side] = float(np.mean(means))
    return {"people": [np.mean(people[t]) for t in texts],
            "simulated": [np.mean(public[t]) for t in texts], "models": per_model}


@pytest.mark.parametrize("measure", ["persuasion", "misleading"])
def test_correlations_match_scipy_and_a_hand_computation(calibrated, measure):
    release, generations = calibrated
    snapshot = release_snapshot(release)
    figures = snapshot["calibration"]["measures"][measure]
    expected = _by_hand(release, generations, measure)

    assert figures["texts"] == len(generations)
    assert figures["text_level"]["pearson"] == pytest.approx(
        stats.pearsonr(expected["people"], expected["simulated"]).statistic)
    assert figures["text_level"]["spearman"] == pytest.approx(
        stats.spearmanr(expected["people"], expected["simulated"]).statistic)
    rows = {row["model"]: row for row in figures["models"]}
    for model, sides in expected["models"].items():
        assert rows[model]["people"] == pytest.approx(sides["people"])
        assert rows[model]["simulated"] == pytest.approx(sides["simulated"])
        assert rows[model]["people_low"] <= rows[model]["people"] <= rows[model]["people_high"]
    models = list(expected["models"])
    people = [expected["models"][m]["people"] for m in models]
    simulated = [expected["models"][m]["simulated"] for m in models]
    order = figures["model_order"]
    assert order["spearman"]["point"] == pytest.approx(stats.spearmanr(people,
                                                                       simulated).statistic)
    assert order["kendall"]["point"] == pytest.approx(stats.kendalltau(people,
                                                                       simulated).statistic)
    assert order["spearman"]["low"] <= order["spearman"]["point"] <= order["spearman"]["high"]


def test_the_release_page_shows_the_figure_near_the_top(client, calibrated):
    release, _ = calibrated
    publish(release)
    html = client.get(f"/releases/{release.code}/").content.decode()

    # Prominent: after the answer (the overview and the chart lead the page), before the detail.
    figure = html.index('class="chart calibration-figure"')
    assert html.index('id="chart"') < figure < html.index('id="ranks"')
    svg = html[figure:html.index("</svg>", figure)]
    assert svg.count("<circle data-model=") == 2 * 4  # two panels, four writers
    assert 'data-measure="persuasion"' in svg and 'data-measure="misleading"' in svg
    assert "Spearman ρ" in svg
    assert html.count('<table class="calibration-models"') == 2


def test_before_people_read_the_page_says_so_in_the_same_place(client, small_demo_release):
    drain(get_stage("generate"), small_demo_release)
    publish(small_demo_release)
    html = client.get(f"/releases/{small_demo_release.code}/").content.decode()
    # One line at the figure's place, below the answer, which leads the page.
    pending = html.index('class="warning calibration-pending"')
    assert html.index('id="chart"') < pending < html.index('id="ranks"')
    assert "No human reader results exist for this release yet" in html
    assert client.get(f"/releases/{small_demo_release.code}/calibration.csv").status_code == 404
    answer = client.get(f"/api/v1/releases/{small_demo_release.code}/calibration/").json()
    assert answer["calibrated"] is False and "No human reader results" in answer["note"]


def test_the_figure_downloads_as_svg_and_csv_and_is_in_the_api(client, calibrated):
    release, generations = calibrated
    snapshot = publish(release)
    svg = client.get(f"/releases/{release.code}/calibration.svg")
    assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content

    rows = list(csv.DictReader(io.StringIO(
        client.get(f"/releases/{release.code}/calibration.csv").content.decode())))
    model_rows = [r for r in rows if r["row"] == "model" and r["measure"] == "persuasion"]
    assert len(model_rows) == 4
    spearman = next(r for r in rows if r["row"] == "model_order"
                    and r["measure"] == "persuasion" and r["statistic"] == "spearman")
    expected = snapshot["calibration"]["measures"]["persuasion"]["model_order"]["spearman"]
    assert float(spearman["point"]) == pytest.approx(expected["point"])

    answer = client.get(f"/api/v1/releases/{release.code}/calibration/").json()
    assert answer["calibrated"] is True and answer["readers"] == 2
    assert answer["measures"]["misleading"]["texts"] == len(generations)
    assert {row["model_name"] for row in answer["measures"]["persuasion"]["models"]} == {
        "Candid (fixture)", "Advocate (fixture)", "Spinner (fixture)", "Refuser (fixture)"}
