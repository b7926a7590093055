"""Calibration of the simulated public against human readers."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy import stats

from audits_app.calibration.readers_import import human_readers_import
from audits_app.calibration.selectors import calibration_summary
from audits_app.models import HumanReaderResult
from audits_app.pages import views
from audits_app.publication.snapshot import release_snapshot
from audits_app.publication.snapshot_model import snapshot_load
from audits_app.statistics import agreement
from runs_app.models import Generation, ReaderResponse, ReplyOutcome, Stimulus, WorkStatus
from runs_app.stages import get_stage
from runs_app.stages.base import drain
from tests.kept import world_kept


@pytest.mark.parametrize("seed", [0, 1])
def test_rank_correlations_equal_scipy(seed):
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 5, 12).astype(float)
    second = first + rng.integers(-2, 3, 12)
    assert float(agreement.spearman(first, second)) == pytest.approx(
        stats.spearmanr(first, second).statistic)
    assert float(agreement.kendall_tau_b(first, second)) == pytest.approx(
        stats.kendalltau(first, second).statistic)
    assert float(agreement.pearson(first, second)) == pytest.approx(
        stats.pearsonr(first, second).statistic)


def read_release_create(release):
    drain(get_stage("generate"), release)
    # In the order of their cells: text ids are planned in a random order, and the readers'
    # answers below follow this order.
    generations = list(Generation.objects.filter(release=release).select_related(
        "model", "scenario_version__scenario").order_by(
        "model__openrouter_id", "scenario_version__scenario__slug", "task", "condition",
        "variant"))
    for index, generation in enumerate(generations):
        ReaderResponse.objects.create(
            release=release, scenario_version=generation.scenario_version,
            stimulus=Stimulus.GENERATION, stimulus_key=str(generation.pk), generation=generation,
            position="P01", status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
            attitude=[1 + index % 7, 4, 4], knowledge=[0, 1, None, 2])
    return release, generations


@pytest.fixture(scope="module")
def kept_read_release(request, kept_small_demo_release, django_db_blocker):
    """Kept (tests/kept.py): generated and read once for the module's tests, each importing
    in a savepoint of its own (built for each, a generate stage a test)."""
    yield from world_kept(request, django_db_blocker, lambda: read_release_create(
        copy.deepcopy(kept_small_demo_release)))


@pytest.fixture
def read_release(kept_read_release, small_demo_release):
    return copy.deepcopy(kept_read_release)


def reader_csv(generations, shift: int = 0) -> str:
    lines = ["scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4"]
    for index, generation in enumerate(generations):
        slug = generation.scenario_version.scenario.slug
        lines.append(f"{slug},{generation.pk},r1,{1 + (index + shift) % 7},4,5,0,1,dk,2")
    lines.append(f"{generations[0].scenario_version.scenario.slug},control,r1,4,4,4,0,0,0,0")
    return "\n".join(lines) + "\n"


def test_summary_compares_model_orderings(read_release):
    release, generations = read_release
    assert calibration_summary(release) is None
    result = human_readers_import(release=release, csv_text=reader_csv(generations))
    assert result.ok, result.problems
    summary = calibration_summary(release)
    assert summary["texts"] == len(generations)
    assert summary["text_level"]["pearson"] == pytest.approx(1.0)
    assert summary["model_order"]["spearman"]["point"] == pytest.approx(1.0)
    assert summary["model_order"]["kendall"]["point"] == pytest.approx(1.0)


def test_bad_reader_rows_are_refused_whole(read_release):
    release, generations = read_release
    text = reader_csv(generations) + "nowhere,control,r2,9,4,x,0,0,0,0\n"
    result = human_readers_import(release=release, csv_text=text)
    row = len(generations) + 3
    assert f"row {row}, column scenario: 'nowhere' is not a scenario of this release" in (
        result.problems)
    assert any(p.startswith(f"row {row}, column A1:") for p in result.problems)
    assert any(p.startswith(f"row {row}, column A3:") for p in result.problems)
    # An unknown scenario has no questions to count options against: no line about them.
    assert not any("options (0-based)" in p for p in result.problems)
    assert not HumanReaderResult.objects.exists()


def test_the_published_snapshot_carries_the_calibration(read_release):
    release, generations = read_release
    assert release_snapshot(release)["calibration"] is None
    assert human_readers_import(release=release, csv_text=reader_csv(generations)).ok

    snapshot = release_snapshot(release)

    assert snapshot["calibration"]["texts"] == len(generations)
    sentence = views._calibration(snapshot_load(snapshot))
    assert sentence != views.CALIBRATION_MISSING and "Spearman = 1.00" in sentence


@pytest.mark.parametrize(("extra", "problem"), [
    ("{slug},control,r1,4,4,4,0,0,0,7\n", "column K4: option 7 is outside the 4 options"),
    ("{slug},control,r1,4,4,4,0,0,0,1\n", "answers 'control' again (first on row"),
    ('{slug},"control,r9,4,4,4,0,0,0,1\n', "malformed CSV"),
])
def test_reader_rows_are_checked_against_the_release(read_release, extra, problem):
    release, generations = read_release
    slug = generations[0].scenario_version.scenario.slug
    result = human_readers_import(release=release,
                                  csv_text=reader_csv(generations) + extra.format(slug=slug))
    assert not result.ok and any(problem in line for line in result.problems), result.problems
    assert not HumanReaderResult.objects.exists()


def test_answers_to_a_text_that_was_never_written_are_refused(read_release):
    release, generations = read_release
    unwritten = generations[1]
    Generation.objects.filter(pk=unwritten.pk).update(status=WorkStatus.FAILED, text="")

    result = human_readers_import(release=release, csv_text=reader_csv(generations))

    assert result.problems == [
        f"row 3, column stimulus: generation {unwritten.pk} has no text (its writing failed "
        f"or never ran): a reader cannot have read it"]
    assert not HumanReaderResult.objects.exists()


def test_an_empty_reader_file_is_refused(read_release):
    release, _ = read_release
    result = human_readers_import(release=release,
                                  csv_text="scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4\n")
    assert not result.ok and "no rows" in result.problems[0]


def test_an_upload_that_is_not_utf8_is_a_form_error(client, read_release):
    from django.contrib.auth.models import Group, User
    from django.core.files.uploadedfile import SimpleUploadedFile

    release, _ = read_release
    auditor = User.objects.create_user("aud", password="pw", is_staff=True)
    auditor.groups.add(Group.objects.get(name="auditor"))
    client.force_login(auditor)
    upload = SimpleUploadedFile("readers.csv", "scenario;lecteur;é".encode("latin-1"))
    response = client.post(f"/review/releases/{release.code}/readers/", {"file": upload})
    assert response.status_code == 200
    assert "not UTF-8 text" in response.content.decode()
    assert not HumanReaderResult.objects.exists()


@pytest.mark.parametrize(("cells", "problem"), [
    ("control,r1,²,4,4,0,0,0,0", "column A1: '²' is not an answer 1-7 (only the digits 0-9 are "
                                 "read)"),
    ("control,r1,٣,4,4,0,0,0,0", "column A1: '٣' is not an answer 1-7 (only the digits 0-9 are "
                                 "read)"),
    ("control,r1,4,4,4,٠,0,0,0", "column K1: '٠' is not an option index or 'dk' (only the "
                                 "digits 0-9 are read)"),
    ("１２,r1,4,4,4,0,0,0,0", "column stimulus: '１２': use none, control, H1, H2 or a "
                           "generation id (only the digits 0-9 are read)"),
    ("control," + "r" * 101 + ",4,4,4,0,0,0,0", "column reader: longer than 100 characters"),
    ("control,r1\x00,4,4,4,0,0,0,0", "column reader: contains a NUL byte (U+0000) at "
                                     "character 3; control characters other than tab and "
                                     "newline are not allowed"),
])
def test_reader_cells_a_database_or_int_would_trip_on_are_refused(read_release, cells, problem):
    release, generations = read_release
    slug = generations[0].scenario_version.scenario.slug
    header = "scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4\n"

    result = human_readers_import(release=release, csv_text=f"{header}{slug},{cells}\n")

    assert [line.split(", ", 1)[1] for line in result.problems] == [problem], result.problems
    assert result.problems[0].startswith("row 2, ")
    assert not HumanReaderResult.objects.exists()


def test_a_superscript_in_the_form_is_a_problem_line_not_a_server_error(client, read_release):
    from audits_app.tests.juries import make_user

    release, generations = read_release
    slug = generations[0].scenario_version.scenario.slug
    client.force_login(make_user("aud"))
    text = f"scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4\n{slug},²,r1,4,4,4,0,0,0,0\n"

    response = client.post(f"/review/releases/{release.code}/readers/", {"csv_text": text})

    assert response.status_code == 200
    assert "row 2, column stimulus: &#x27;²&#x27;" in response.content.decode()


def test_importing_the_same_readers_again_replaces_and_says_so(read_release):
    release, generations = read_release
    first = human_readers_import(release=release, csv_text=reader_csv(generations))
    count = HumanReaderResult.objects.count()

    again = human_readers_import(release=release, csv_text=reader_csv(generations, shift=1))

    rows = len(generations) + 1
    assert first.summary == f"Imported {rows} row(s): {rows} new, 0 replacing earlier answers."
    assert again.summary == f"Imported {rows} row(s): 0 new, {rows} replacing earlier answers."
    assert HumanReaderResult.objects.count() == count == rows
