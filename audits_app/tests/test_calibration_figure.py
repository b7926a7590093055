"""The calibration figure: the simulated public against people, near the top of the page."""

from __future__ import annotations

import csv
import io
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from audits_app.publication.snapshot import release_snapshot
from audits_app.tests.calibration_world import publish
from runs_app.models import (
    ReaderResponse,
    Release,
)
from runs_app.stages import get_stage
from runs_app.stages.base import drain


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


def test_a_drafts_figure_links_no_download_that_would_answer_404(client, calibrated):
    """The downloads are of the published figure: a draft's page (staff) says when they come
    instead of linking to addresses that answer 404 until then."""
    from django.contrib.auth.models import User

    release, _ = calibrated
    client.force_login(User.objects.create_superuser("boss", password="pw"))
    html = client.get(f"/releases/{release.code}/").content.decode()
    assert 'class="chart calibration-figure"' in html
    assert "calibration.svg" not in html and "calibration.csv" not in html
    assert "The SVG and CSV downloads come with publication." in html
    assert client.get(f"/releases/{release.code}/calibration.svg").status_code == 404


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


def _import_readers(release: Release, rows: list[str]) -> None:
    from audits_app.calibration.readers_import import human_readers_import

    lines = ["scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4", *rows]
    result = human_readers_import(release=release, csv_text="\n".join(lines) + "\n")
    assert result.ok, result.problems


def test_imported_readers_of_no_model_text_are_counted_not_denied(client, small_demo_release):
    # The tryout: two rows imported before publishing, for no text and the control text.
    # The figure compares models, so it cannot use them, and the page must say so, not that
    # no results exist.
    drain(get_stage("generate"), small_demo_release)
    slug = small_demo_release.pins.first().scenario_version.scenario.slug
    _import_readers(small_demo_release, [f"{slug},none,r1,4,4,4,dk,1,2,0",
                                         f"{slug},control,r1,5,4,4,dk,1,2,0"])
    snapshot = publish(small_demo_release)
    assert snapshot["calibration"] is None
    assert snapshot["human_readers"]["rows"] == 2

    html = client.get(f"/releases/{small_demo_release.code}/").content.decode()
    answer = client.get(f"/api/v1/releases/{small_demo_release.code}/calibration/").json()
    for note in (html, answer["note"]):
        assert "No human reader results exist" not in note
        assert "2 human reader results (1 reader) were imported" in note
        assert "1 read no text (the baseline without text), 1 read the control text" in note
    assert answer["calibrated"] is False and answer["human_readers"]["stimuli"] == {
        "text": 0, "none": 1, "control": 1, "human": 0}


def test_readers_of_one_model_only_are_named_as_such(client, calibrated):
    from audits_app.models import HumanReaderResult

    release, generations = calibrated
    kept = generations[0].model_id
    HumanReaderResult.objects.filter(release=release).exclude(
        generation__model_id=kept).delete()
    snapshot = publish(release)

    note = client.get(f"/api/v1/releases/{release.code}/calibration/").json()["note"]
    name = next(model["name"] for model in snapshot["models"]
                if model["id"] == generations[0].model.openrouter_id)
    texts = sum(1 for generation in generations if generation.model_id == kept)
    assert f"The {texts} texts read by both people and the simulated public are all by one " \
           f"model ({name})." in note


def test_a_snapshot_frozen_before_it_kept_them_reads_the_rows(client, small_demo_release):
    from audits_app.tests.factories import publication_create
    from runs_app.models import ReleaseStatus

    drain(get_stage("generate"), small_demo_release)
    slug = small_demo_release.pins.first().scenario_version.scenario.slug
    _import_readers(small_demo_release, [f"{slug},none,r1,4,4,4,dk,1,2,0"])
    snapshot = release_snapshot(small_demo_release)
    snapshot.pop("human_readers")
    publication_create(release=small_demo_release, snapshot=snapshot)
    Release.objects.filter(pk=small_demo_release.pk).update(status=ReleaseStatus.PUBLISHED)

    answer = client.get(f"/api/v1/releases/{small_demo_release.code}/calibration/").json()
    assert "1 human reader result (1 reader) was imported" in answer["note"]
