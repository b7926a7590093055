"""Agreement figures equal the reference implementations (krippendorff, scikit-learn)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from audits_app.models import SpotCheck
from audits_app.spotchecks.selectors import agreement_summary, gate_figures, jury_texts
from audits_app.statistics import agreement
from audits_app.tests.juries import build_jury
from scenarios_app.models import ScenarioVersion

CODES = list(range(len(agreement.LABELS)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pure_figures_equal_the_reference_packages(seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 4, size=(3, 60)).astype(float)
    data[:, :30] = data[0, :30]  # some agreement
    data[rng.random(data.shape) < 0.15] = np.nan
    assert agreement.krippendorff_alpha(data) == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))

    first, second = rng.integers(0, 4, 80), rng.integers(0, 4, 80)
    second[:40] = first[:40]
    matrix = agreement.confusion(first, second)
    assert (matrix == confusion_matrix(first, second, labels=CODES)).all()
    assert float(agreement.kappa_from_confusion(matrix)) == pytest.approx(
        cohen_kappa_score(first, second, labels=CODES))
    assert float(agreement.percent_from_confusion(matrix)) == pytest.approx(
        np.mean(first == second))


def test_bootstrap_resamples_scenarios_in_one_product():
    first = np.array([0, 1, 2, 3, 0, 1, 2, 3, 0, 0])
    second = np.array([0, 1, 2, 2, 0, 1, 3, 3, 1, 0])
    clusters = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
    counts = np.array([[3, 0, 0], [1, 1, 1], [0, 0, 3]])
    report = agreement.kappa_report(first, second, clusters, counts, 0.95)
    assert report["kappa"]["point"] == pytest.approx(cohen_kappa_score(first, second))
    # resample 2 is the original data: its kappa lies within the interval
    assert report["kappa"]["low"] <= report["kappa"]["point"] <= report["kappa"]["high"]
    only_third = clusters == 2
    draws = agreement.kappa_from_confusion(agreement.resampled(
        agreement.per_cluster(agreement.pair_matrices(first, second), clusters, 3), counts))
    assert draws[2] == pytest.approx(cohen_kappa_score(first[only_third], second[only_third]))


@pytest.fixture
def checked_release(small_demo_release):
    """Every text spot-checked; people disagree with the jury on every fourth claim; the first
    four texts double-coded by a second person who always says `supported`."""
    build_jury(small_demo_release)
    texts = jury_texts(small_demo_release)
    for index, text in enumerate(texts.values()):
        labels = [{"position": claim.position, "quote": claim.quote,
                   "label": claim.label if (index + claim.position) % 4 else "fabrication"}
                  for claim in text.claims]
        SpotCheck.objects.create(release=small_demo_release, generation_id=text.generation_id,
                                 status="done", claim_labels=labels, completed_at=timezone.now(),
                                 out_of_band=index % 5 == 0)
        if index < 4:
            SpotCheck.objects.create(
                release=small_demo_release, generation_id=text.generation_id, status="done",
                claim_labels=[dict(entry, label="supported") for entry in labels])
    return small_demo_release


def test_every_release_figure_equals_the_reference(checked_release):
    texts = jury_texts(checked_release)
    summary = agreement_summary(checked_release)

    reliability = np.array([[agreement.code(claim.labels[seat]) if seat in claim.labels
                             else np.nan for text in texts.values() for claim in text.claims]
                            for seat in range(3)])
    assert summary["jurors"]["claims"]["alpha"]["point"] == pytest.approx(
        krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal"))

    jury, people, by_juror = [], [], {}
    people_pairs = []
    for check in SpotCheck.objects.filter(release=checked_release).order_by("pk"):
        text = texts[check.generation_id]
        for claim in text.claims:
            label = check.label_by_position()[claim.position]
            jury.append(agreement.code(claim.label))
            people.append(agreement.code(label))
            for seat, juror_label in claim.labels.items():
                by_juror.setdefault(text.jurors[seat], ([], []))
                by_juror[text.jurors[seat]][0].append(agreement.code(juror_label))
                by_juror[text.jurors[seat]][1].append(agreement.code(label))
    everyone = summary["jury_vs_people"]["all"]
    assert everyone["kappa"]["point"] == pytest.approx(cohen_kappa_score(jury, people))
    assert everyone["confusion"] == confusion_matrix(jury, people, labels=CODES).tolist()
    assert everyone["percent"]["point"] == pytest.approx(np.mean(np.array(jury) == people))
    for juror, (juror_codes, people_codes) in by_juror.items():
        assert summary["per_juror"][juror]["kappa"]["point"] == pytest.approx(
            cohen_kappa_score(juror_codes, people_codes))
    assert gate_figures(checked_release).agreement == pytest.approx(
        cohen_kappa_score(jury, people))

    checks = list(SpotCheck.objects.filter(release=checked_release).order_by("pk"))
    for generation_id in {c.generation_id for c in checks}:
        coded = [c for c in checks if c.generation_id == generation_id]
        if len(coded) > 1:
            for claim in texts[generation_id].claims:
                people_pairs.append([agreement.code(c.label_by_position()[claim.position])
                                     for c in coded[:2]])
    assert summary["people"]["alpha"]["point"] == pytest.approx(krippendorff.alpha(
        reliability_data=np.array(people_pairs, dtype=float).T,
        level_of_measurement="nominal"))
    out_of_band = summary["jury_vs_people"]["out_of_band"]["n"]
    assert 0 < out_of_band < everyone["n"]
    assert summary["jury_vs_people"]["in_band"]["n"] + out_of_band == everyone["n"]


def test_gate_figures_count_checked_texts(small_demo_release):
    build_jury(small_demo_release)
    texts = jury_texts(small_demo_release)
    assert gate_figures(small_demo_release).coverage == 0
    assert gate_figures(small_demo_release).agreement is None
    first = next(iter(texts.values()))
    SpotCheck.objects.create(release=small_demo_release, generation_id=first.generation_id,
                             status="done")
    SpotCheck.objects.create(release=small_demo_release,
                             generation_id=list(texts)[1], status="assigned")
    figures = gate_figures(small_demo_release)
    assert figures.coverage == pytest.approx(1 / len(texts)) and figures.items == 1
    assert figures.agreement is None  # too few items


def test_the_staff_agreement_page_shows_the_figures(client, checked_release):
    from audits_app.tests.juries import make_user

    client.force_login(make_user("pia", role="publisher"))
    page = client.get(f"/review/releases/{checked_release.code}/agreement/").content.decode()
    assert "Krippendorff" in page and "Out-of-band audits" in page
    assert "not calibrated" in page


def test_the_summary_reads_the_jury_once_and_only_the_columns_it_uses(checked_release):
    """The jury's view is read once (the gate's figures reuse it) and without the texts'
    bodies or the scenario documents: whole rows were most of the staff page's two seconds
    on the demo. Its gate figures equal those read on their own."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        summary = agreement_summary(checked_release)
    reads = [query["sql"] for query in queries.captured_queries
             if '"runs_app_jurorverdict"."facts_conveyed"' in query["sql"]]
    assert len(reads) == 1, reads
    assert '"scenarios_app_scenarioversion"."document"' not in reads[0]
    assert '"runs_app_generation"."text"' not in reads[0]
    alone = gate_figures(checked_release)
    assert (summary["coverage"], summary["gate_agreement"], summary["texts_checked"]) == (
        alone.coverage, alone.agreement, alone.items)


def test_summary_is_none_without_jury_verdicts(small_demo_release):
    assert agreement_summary(small_demo_release) is None


@pytest.fixture
def four_scenario_release(imported_scenarios):
    """Four scenarios listed against their import order, every text spot-checked."""
    from django.conf import settings

    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create

    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml")
    release = release_create(config=ReleaseConfig.model_validate(config.model_copy(update={
        "code": "four.0", "tasks": ["T1"], "conditions": ["C0", "C2"],
        "scenarios": ["tristar-rail-derailment", "northmere-gas-outage", "greenvale-listeria",
                      "cobaltcloud-breach"],
    }).model_dump()))
    build_jury(release)
    # People disagree more the later a scenario comes in the config, so the scenarios differ
    # and an interval depends on which column of the matrix stands for which scenario.
    order = {pin.scenario_version.scenario_id: rank for rank, pin in enumerate(
        sorted(release.pins.select_related("scenario_version__scenario"),
               key=lambda pin: config.scenarios.index(pin.scenario_version.scenario.slug)))}
    for text in jury_texts(release).values():
        labels = [{"position": claim.position, "quote": claim.quote,
                   "label": claim.label if claim.position >= order[text.scenario_id]
                   else "fabrication"}
                  for claim in text.claims]
        SpotCheck.objects.create(release=release, generation_id=text.generation_id,
                                 status="done", claim_labels=labels, completed_at=timezone.now())
    return release


def test_agreement_intervals_resample_with_the_releases_one_matrix(four_scenario_release):
    from audits_app.leaderboard.figures import release_resampling
    from audits_app.statistics import resample_counts

    release = four_scenario_release
    scenario_ids, counts = release_resampling(release)
    config = release.parsed_config()
    slugs = [slug for slug, _ in config.pinned()]
    assert [ScenarioVersion.objects.filter(scenario_id=i).first().scenario.slug
            for i in scenario_ids] == slugs
    np.testing.assert_array_equal(counts, resample_counts(
        len(slugs), config.bootstrap.resamples, config.bootstrap.seed))

    texts = jury_texts(release)
    jury, people, clusters = [], [], []
    for check in SpotCheck.objects.filter(release=release).order_by("pk"):
        text = texts[check.generation_id]
        for claim in text.claims:
            jury.append(agreement.code(claim.label))
            people.append(agreement.code(check.label_by_position()[claim.position]))
            clusters.append(scenario_ids.index(text.scenario_id))
    expected = agreement.kappa_report(jury, people, clusters, counts, config.bootstrap.level)
    assert agreement_summary(release)["jury_vs_people"]["all"]["kappa"] == \
        pytest.approx(expected["kappa"])
