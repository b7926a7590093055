"""The family-wise rule a release file may choose (`pair_correction: holm`)."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import Client
from pydantic import ValidationError
from scipy import stats as scipy_stats

from audits_app import statistics
from audits_app.leaderboard.figures import _leaderboard
from audits_app.statistics.error_rates import error_rates
from audits_app.statistics.family_wise import holm_rejected, pair_p_values
from audits_app.statistics.intervals import student_t_p_value
from audits_app.tests.factories import publication_create, published_release_create
from runs_app.models import Release, ReleaseStatus
from runs_app.schemas import ReleaseConfig


def test_holm_steps_down_until_the_first_pair_that_fails() -> None:
    # Sorted: 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop; 0.04 is not rejected either.
    rejected = holm_rejected(np.array([[0.01, 0.04, 0.03, 0.005]]), 0.95)
    assert rejected.tolist() == [[True, False, False, True]]
    # A NaN is no member of the family: with three members 0.016 <= 0.05/3 passes.
    assert holm_rejected(np.array([0.016, np.nan, 0.02, 0.03]), 0.95).tolist() == [
        True, False, True, True]


def test_the_t_p_value_matches_scipy() -> None:
    statistic = np.array([0.0, 0.4, 1.9, 3.3, 12.0])
    for df in (1, 2, 5, 7, 19):
        expected = 2 * scipy_stats.t.sf(statistic, df)
        assert np.allclose(student_t_p_value(statistic, df), expected, atol=1e-12)


def test_without_a_correction_the_p_value_and_the_interval_decide_alike() -> None:
    rng = np.random.default_rng(4)
    scores = rng.normal(0, 1, (6, 7, 3)) + rng.normal(0, 0.6, (6, 1, 1))
    counts = statistics.resample_counts(7, 500, 2)
    pairs = statistics.pairwise(scores, counts, 0.95)
    upper = np.triu_indices(6, k=1)
    p_values = pair_p_values(pairs.diff[upper], pairs.low[upper], pairs.high[upper],
                             np.full(len(upper[0]), 7), 0.95)
    assert ((p_values < 0.05) == pairs.significant[upper]).all()
    assert pairs.significant[upper].any() and not pairs.significant[upper].all()


def test_holm_declares_fewer_pairs_different_and_only_among_the_ranked() -> None:
    rng = np.random.default_rng(4)
    scores = rng.normal(0, 1, (6, 7, 3)) + rng.normal(0, 0.6, (6, 1, 1))
    counts = statistics.resample_counts(7, 500, 2)
    plain = statistics.pairwise(scores, counts, 0.95)
    holm = statistics.pairwise(scores, counts, 0.95, correction="holm")
    assert (holm.significant <= plain.significant).all()
    assert holm.significant.sum() < plain.significant.sum()
    eligible = np.array([True] * 5 + [False])
    among = statistics.pairwise(scores, counts, 0.95, correction="holm", eligible=eligible)
    assert not among.significant[5].any() and not among.significant[:, 5].any()
    with pytest.raises(ValueError, match="unknown pair correction"):
        statistics.pairwise(scores, counts, 0.95, correction="bonferroni")


def test_holm_holds_the_chance_of_any_false_difference_and_the_table_says_so() -> None:
    observed = np.ones((10, 8, 4), dtype=bool)
    counts = statistics.resample_counts(8, 1000, 2)
    everyone = np.ones(10, dtype=bool)
    plain = error_rates(observed, counts, 0.95, "paired", everyone, seed=3, data_sets=200)
    holm = error_rates(observed, counts, 0.95, "paired", everyone, seed=3, data_sets=200,
                       correction="holm")
    assert plain.any_false_difference > 0.5
    assert holm.any_false_difference <= 0.08
    assert holm.power < plain.power
    assert holm.rule == "paired, holm"


def test_a_release_file_may_choose_holm_for_paired_ranks_only() -> None:
    document = {"code": "x.0", "language": "en", "reader": "r/r", "writers": ["w/w"],
                "jurors": ["j/a", "j/b", "j/c"], "scenarios": ["s"], "tasks": ["T1"],
                "conditions": ["C0"], "stages": ["generate"], "pair_correction": "holm",
                "models": [{"id": model, "family": model[2], "name": model}
                           for model in ("r/r", "w/w", "j/a", "j/b", "j/c")]}
    assert ReleaseConfig.model_validate(document).pair_correction == "holm"
    with pytest.raises(ValidationError, match="pair_correction: holm corrects the paired"):
        ReleaseConfig.model_validate({**document, "ranking_rule": "classes"})
    with pytest.raises(ValidationError, match="pair_correction"):
        ReleaseConfig.model_validate({**document, "pair_correction": "bonferroni"})


def test_the_board_says_which_correction_ranked_it() -> None:
    rng = np.random.default_rng(4)
    scores = rng.normal(0, 1, (6, 7, 3)) + rng.normal(0, 0.6, (6, 1, 1))
    counts = statistics.resample_counts(7, 500, 2)
    plain = _leaderboard(list("abcdef"), scores, counts, 0.95, "paired", True, np.zeros(6))
    holm = _leaderboard(list("abcdef"), scores, counts, 0.95, "paired", True, np.zeros(6),
                        correction="holm")
    assert (plain["pair_correction"], holm["pair_correction"]) == ("none", "holm")
    assert sum(p["significant"] for p in holm["pairs"]) < sum(
        p["significant"] for p in plain["pairs"])


@pytest.mark.django_db
def test_the_methods_page_names_the_family_wise_rule() -> None:
    world = published_release_create(code="holm.0", publish=False)
    world.snapshot["method"]["pair_correction"] = "holm"
    publication_create(release=world.release, snapshot=world.snapshot)
    Release.objects.filter(pk=world.release.pk).update(status=ReleaseStatus.PUBLISHED)
    page = Client().get("/releases/holm.0/").content.decode()
    assert "Holm's step-down over the ranked models' pairs" in page
