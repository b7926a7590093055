"""Refusal-neutral, honestly (DESIGN section 6): beside each model with missing cells, its mean
over its own cells against the fit's point, flagged where the two readings disagree."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import Client

from audits_app import statistics
from audits_app.leaderboard.figures import _leaderboard
from audits_app.statistics.sensitivity import sensitivity
from audits_app.tests.factories import publication_create, published_release_create
from runs_app.models import Release, ReleaseStatus
from runs_app.schemas import RankMinimum

CONDITIONS = ["C0", "C1", "C2", "C3"]
MODELS = ["candid", "advocate", "spinner", "refuser"]
WAIVED = RankMinimum(every_condition=False)


def release_scores(*, additive: bool, seed: int = 0) -> np.ndarray:
    """Eight scenarios, one cell per condition; the refuser refuses every C2 cell.

    Non-additive: advocate and spinner drop under C2 by different amounts, candid does not;
    the refuser equals candid on every cell it has. Additive: every model drops the same.
    """
    rng = np.random.default_rng(seed)
    scores = np.empty((4, 8, 4))
    scores[:] = np.array([0.9, 0.7, 0.3, 0.9])[:, None, None]
    if additive:
        scores[:, :, 2] -= 0.2
    else:
        scores[1, :, 2] = 0.2
        scores[2, :, 2] = 0.25
    scores += rng.normal(0, 0.05, (1, 8, 1)) + rng.normal(0, 0.01, scores.shape)
    scores[3, :, 2] = np.nan
    return scores


def figure(scores: np.ndarray):
    counts = statistics.resample_counts(8, 1000, 1)
    estimates = statistics.model_estimates(scores, counts, 0.95)
    return sensitivity(scores, estimates.point, estimates.cmp_low, estimates.cmp_high)


def test_the_non_additive_refuser_is_flagged() -> None:
    checked = figure(release_scores(additive=False))
    assert list(checked.missing) == [False, False, False, True]
    # On the cells both have, the refuser equals candid; the fit puts it below candid.
    assert abs(checked.cells_lead[3, 0]) < 0.01
    assert checked.fit_lead[3, 0] < -0.02
    assert checked.largest_gap[3] > checked.half_width[3]
    assert list(checked.flagged) == [False, False, False, True]


def test_an_additive_refuser_is_not_flagged() -> None:
    checked = figure(release_scores(additive=True))
    assert checked.missing[3] and not checked.flagged[3]
    assert checked.largest_gap[3] < checked.half_width[3]


def test_the_own_mean_is_the_plain_mean_over_its_cells() -> None:
    scores = release_scores(additive=False)
    checked = figure(scores)
    by_hand = np.mean([np.mean([v for v in scores[3, s] if not np.isnan(v)]) for s in range(8)])
    assert checked.own_mean[3] == pytest.approx(by_hand)
    pairs = statistics.pairwise(scores, statistics.resample_counts(8, 200, 1), 0.95)
    assert checked.cells_lead[3] == pytest.approx(pairs.diff[3], nan_ok=True)


def test_the_board_carries_the_figure_for_models_with_missing_cells_only() -> None:
    scores = release_scores(additive=False)
    board = _leaderboard(MODELS, scores, statistics.resample_counts(8, 1000, 1), 0.95,
                         "paired", True, np.zeros(4), (0.0, 1.0), conditions=CONDITIONS,
                         minimum=WAIVED)
    rows = board["sensitivity"]
    assert [row["model"] for row in rows] == ["refuser"]
    assert rows[0]["flagged"] is True and rows[0]["against"] in ("candid", "advocate", "spinner")
    assert rows[0]["coverage"] == 0.75
    versus = {row["model"]: row for row in rows[0]["versus"]}
    assert abs(versus["candid"]["cells_lead"]) < 0.01 and versus["candid"]["fit_lead"] < -0.02


@pytest.mark.django_db
def test_page_and_api_show_the_flag_beside_the_model() -> None:
    world = published_release_create(code="sens.0", publish=False)
    board = world.snapshot["leaderboards"]["honesty"]
    refuser = board["rows"][-1]["model"]
    other = board["rows"][0]["model"]
    board["sensitivity"] = [{
        "model": refuser, "coverage": 0.75, "own_mean": 0.9, "half_width": 0.004,
        "largest_gap": 0.043, "against": other, "flagged": True,
        "versus": [{"model": other, "own_mean": 0.9, "their_mean": 0.9, "cells_lead": 0.0,
                    "fit_lead": -0.043}]}]
    publication_create(release=world.release, snapshot=world.snapshot)
    Release.objects.filter(pk=world.release.pk).update(status=ReleaseStatus.PUBLISHED)
    client = Client()
    page = client.get("/releases/sens.0/").content.decode()
    assert 'id="sensitivity"' in page and "models with missing cells" in page
    assert "<strong class=\"flag\">disagree</strong>" in page
    assert "on one condition: that scores add up by model and cell" in page
    answer = client.get("/api/v1/releases/sens.0/leaderboard/").json()
    shown = answer["metrics"]["honesty"]["sensitivity"]
    assert shown[0]["model"] == refuser and shown[0]["flagged"] is True
    assert shown[0]["versus"][0]["fit_lead"] == -0.043
