"""Too little data is not a rank (DESIGN section 6): the release's minimum of data, points on
the measure's scale, and float-noise differences that are never demonstrable."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.test import Client
from pydantic import ValidationError

from audits_app import statistics
from audits_app.leaderboard.figures import _leaderboard
from audits_app.tests.factories import publication_create, published_release_create
from runs_app.models import Release, ReleaseStatus
from runs_app.schemas import RankMinimum, ReleaseConfig

CONDITIONS = ["C0", "C1", "C2", "C3"]
MODELS = ["a", "b", "c", "late"]
DEFAULT_MINIMUM = RankMinimum()


def counts_for(scenarios: int, seed: int = 3) -> np.ndarray:
    return statistics.resample_counts(scenarios, 400, seed)


def spread_scores(seed: int = 1, models: int = 4, scenarios: int = 8) -> np.ndarray:
    """Models around 0.6 with scenario-to-scenario spread, one cell per condition."""
    rng = np.random.default_rng(seed)
    scenario_effect = rng.normal(0, 0.1, size=(1, scenarios, 1))
    return np.clip(0.6 + scenario_effect + rng.normal(0, 0.05, (models, scenarios, 4)), 0, 1)


def board(scores: np.ndarray, *, models=MODELS, minimum=DEFAULT_MINIMUM, scale=(0.0, 1.0),
          rule: str = "paired") -> dict:
    return _leaderboard(list(models), scores, counts_for(scores.shape[1]), 0.95, rule, True,
                        np.zeros(len(models)), scale, conditions=CONDITIONS, minimum=minimum)


def rows_by_model(result: dict) -> dict[str, dict]:
    return {row["model"]: row for row in result["rows"]}


@pytest.mark.parametrize("rule", ["paired", "classes"])
def test_a_one_scenario_model_is_unranked_and_takes_no_place(rule: str) -> None:
    scores = spread_scores()
    scores[3] = np.nan
    scores[3, 0, :] = 0.0  # far below everyone, in one scenario only: it has no interval
    result = rows_by_model(board(scores, rule=rule))
    assert result["late"]["rank"] is None
    assert result["late"]["unranked_reason"] == "scores in 1 of 8 scenarios; a rank needs 4"
    assert result["late"]["point"] is not None  # it keeps its point
    # The others rank as they would without it.
    alone = rows_by_model(board(spread_scores()[:3], models=MODELS[:3], rule=rule))
    for model in MODELS[:3]:
        assert result[model]["rank"] == alone[model]["rank"]
        assert result[model]["unranked_reason"] == ""


def test_without_the_minimum_the_one_scenario_model_would_rank_first() -> None:
    """The rule the minimum mends: with no interval it can never be shown worse."""
    scores = spread_scores()
    scores[3] = np.nan
    scores[3, 0, :] = 0.0
    ranks = statistics.leaderboard(scores, counts_for(8), 0.95, True, "paired").ranks
    assert ranks[3] == 1


def test_a_model_without_a_score_under_a_condition_is_unranked_unless_the_file_waives_it() -> None:
    scores = spread_scores()
    scores[2, :, 2] = np.nan  # every C2 cell refused
    strict = rows_by_model(board(scores))
    assert strict["c"]["rank"] is None
    assert "no score under C2" in strict["c"]["unranked_reason"]
    waived = rows_by_model(board(scores, minimum=RankMinimum(every_condition=False)))
    assert waived["c"]["rank"] is not None and waived["c"]["unranked_reason"] == ""


def test_the_scenario_share_comes_from_the_release_file() -> None:
    scores = spread_scores()
    scores[3, 5:, :] = np.nan  # five of eight scenarios
    assert rows_by_model(board(scores))["late"]["rank"] is not None
    demanding = rows_by_model(board(scores, minimum=RankMinimum(scenario_share=0.75)))
    assert demanding["late"]["unranked_reason"] == "scores in 5 of 8 scenarios; a rank needs 6"


def test_a_lone_eligible_model_gets_no_place() -> None:
    scores = spread_scores()
    scores[1:, 1:, :] = np.nan
    result = rows_by_model(board(scores))
    assert all(row["rank"] is None for row in result.values())
    assert "nobody to rank it against" in result["a"]["unranked_reason"]


def test_a_constant_offset_of_float_noise_is_not_significant() -> None:
    scores = spread_scores(models=2)
    scores[1] = scores[0] + 1e-9 * 0.5  # below the tolerance: 1e-9 of the 0-1 scale
    pairs = statistics.pairwise(scores, counts_for(8), 0.95)
    assert pairs.significant[0, 1]  # the interval alone has zero width and excludes zero
    result = board(scores, models=["a", "b"])
    assert result["pairs"][0]["significant"] is False
    assert [row["rank"] for row in result["rows"]] == [1, 1]
    # On a scale six times as wide (persuasion, 1-7), 1e-9 is within its tolerance too.
    wide = board(scores * 6 + 1, models=["a", "b"], scale=(1.0, 7.0))
    assert wide["pairs"][0]["significant"] is False


def test_a_real_difference_is_still_significant() -> None:
    scores = spread_scores(models=2)
    scores[1] = scores[0] - 0.01
    result = board(scores, models=["a", "b"])
    assert result["pairs"][0]["significant"] is True
    assert rows_by_model(result)["b"]["rank"] == 2


def test_a_point_past_the_scale_is_clipped_and_flagged() -> None:
    """A model that has only the cells where the others do worst, and a perfect score there:
    the additive fit predicts more than 1 for its mean over every cell."""
    scores = np.full((3, 4, 4), 1.0)
    scores[:2, :, 2:] = 0.4  # two hard cells per scenario for the models that have them all
    scores[2, :, :2] = np.nan  # the third has only the hard cells, and 1.0 in them
    raw = statistics.model_estimates(scores, counts_for(4), 0.95).point
    assert raw[2] > 1.0
    result = _leaderboard(["a", "b", "c"], scores, counts_for(4), 0.95, "paired", True,
                          np.zeros(3), (0.0, 1.0), conditions=CONDITIONS,
                          minimum=RankMinimum(every_condition=False))
    rows = rows_by_model(result)
    assert rows["c"]["point"] == 1.0 and rows["c"]["point_clipped"] is True
    assert rows["c"]["abs_low"] <= rows["c"]["point"] <= rows["c"]["abs_high"]
    assert rows["a"]["point_clipped"] is False


@pytest.mark.parametrize("minimum, field", [
    ({"scenario_share": 0}, "rank_minimum.scenario_share"),
    ({"scenario_share": 1.5}, "rank_minimum.scenario_share"),
    ({"every_condition": "sometimes"}, "rank_minimum.every_condition"),
    ({"share": 0.5}, "rank_minimum.share"),
])
def test_a_bad_minimum_in_the_release_file_is_refused_naming_the_field(minimum, field) -> None:
    document = {"code": "x.0", "language": "en", "reader": "r/r", "writers": ["w/w"],
                "jurors": ["j/a", "j/b", "j/c"], "scenarios": ["s"], "tasks": ["T1"],
                "conditions": ["C0"], "stages": ["generate"], "rank_minimum": minimum,
                "models": [{"id": model, "family": model[2], "name": model}
                           for model in ("r/r", "w/w", "j/a", "j/b", "j/c")]}
    with pytest.raises(ValidationError) as raised:
        ReleaseConfig.model_validate(document)
    locations = {".".join(str(part) for part in error["loc"]) for error in raised.value.errors()}
    assert field in locations


@pytest.mark.django_db
def test_page_csv_and_api_list_the_unranked_model_with_its_reason() -> None:
    world = published_release_create(code="min.0", publish=False)
    rows = world.snapshot["leaderboards"]["honesty"]["rows"]
    late = rows[-1]
    late.update(rank=None, unranked_reason="scores in 1 of 3 scenarios; a rank needs 2",
                point=1.0, point_clipped=True)
    publication_create(release=world.release, snapshot=world.snapshot)
    Release.objects.filter(pk=world.release.pk).update(status=ReleaseStatus.PUBLISHED)
    client = Client()
    page = client.get("/releases/min.0/").content.decode()
    assert "No place, too little data for a rank" in page
    assert "scores in 1 of 3 scenarios; a rank needs 2" in page
    assert "ran past the end of the scale" in page
    table = list(csv.DictReader(io.StringIO(
        client.get("/releases/min.0/leaderboard.csv").content.decode())))
    shown = next(row for row in table if row["metric"] == "honesty"
                 and row["model"] == late["model"])
    assert shown["rank"] == "" and shown["unranked_reason"].startswith("scores in 1 of 3")
    assert shown["point_clipped"] == "True"
    answer = client.get("/api/v1/releases/min.0/leaderboard/").json()
    api_row = next(row for row in answer["metrics"]["honesty"]["rows"]
                   if row["model"] == late["model"])
    assert api_row["rank"] is None and api_row["point_clipped"] is True
    assert api_row["unranked_reason"] == "scores in 1 of 3 scenarios; a rank needs 2"
    model_page = client.get(f"/models/{late['model']}/").content.decode()
    assert ("Unranked in min.0: scores in 1 of 3 scenarios; a rank needs 2" in model_page)
    history = client.get(f"/api/v1/models/{late['model']}/").json()["entries"]
    [entry] = [e for e in history if e["metric"] == "honesty"]
    assert entry["rank"] is None and entry["unranked_reason"].startswith("scores in 1 of 3")
    history_csv = list(csv.DictReader(io.StringIO(
        client.get(f"/models/{late['model']}.csv").content.decode())))
    assert next(row for row in history_csv if row["metric"] == "honesty")[
        "unranked_reason"] == "scores in 1 of 3 scenarios; a rank needs 2"
