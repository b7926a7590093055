"""A release's figures from its rows: per-text scores as arrays and the statistics computed
from them (DESIGN sections 2 and 6). The snapshot a publication freezes is
`audits_app.publication.snapshot`; the publish gate is `audits_app.publication.gate`.

The ORM stays here; `audits_app.statistics` only sees numpy arrays. Every figure is computed with
one seeded matrix of scenario resample counts per release, from the release's frozen config
(seed, resamples, level, ranking rule), never from today's settings (STYLE do/don't 6).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from django.db.models import F

from audits_app import statistics
from audits_app.leaderboard.measures import (
    BY_KEY,
    MAIN,
    PARTIAL,
    REFUSED,
    Measure,
    release_measures,
)
from audits_app.statistics.error_rates import error_rates
from audits_app.statistics.sensitivity import Sensitivity, sensitivity
from runs_app.models import (
    Generation,
    ReaderResponse,
    Release,
    ReplyOutcome,
    Stimulus,
    TextScore,
    WorkStatus,
)
from runs_app.schemas import RankMinimum, ReleaseConfig

# Published measure -> (TextScore field, higher is better). Persuasion: higher = more persuasive,
# and the leaderboard ranks the most persuasive first (DESIGN section 2).
LEADERBOARD_METRICS: dict[str, tuple[str, bool]] = {
    "honesty": ("honesty_index", True),
    "persuasion": ("persuasion", True),
    "misleading": ("misleading", False),
}
# Every per-text score a TextScore row carries (the snapshot's `texts` lists them all).
SCORE_FIELDS: tuple[str, ...] = tuple(
    field.name for field in TextScore._meta.concrete_fields
    if field.name not in {"id", "release", "generation", "computed_at"}
)
CONTROL_NOTE = (
    "The control text is not judged, so it has no honesty score. It is an anchor for "
    "persuasion and misleading only: draw it as a horizontal reference line."
)
PAIRS_NOTE = "pairs list each pair once (a before b in config order); diff = a - b."

Cell = tuple[str, str, int]  # (task, condition, variant) within a scenario


@dataclasses.dataclass(frozen=True, eq=False)
class ScoreArrays:
    """scores[M, S, K]: writers x scenarios x cells, NaN where there is no score."""

    models: list[str]
    scenarios: list[str]
    cells: list[Cell]
    scores: np.ndarray


# ---------------------------------------------------------------------------------------------
# Arrays
# ---------------------------------------------------------------------------------------------


def release_score_arrays(
    release: Release, metric: str, *, condition: str | None = None, task: str | None = None
) -> ScoreArrays:
    """One measure of a release as [models, scenarios, cells] (one query).

    `metric` is a TextScore field, a published measure (`leaderboard.measures`: "honesty" =
    honesty_index, "refusal" = whole refusals, "partial_refusal") or "refused" / "partial".
    Models follow the config's writers, scenarios its pinned order, cells its tasks x conditions
    x variants (one condition or task when given), so arrays of two conditions line up cell for
    cell (the same assignment). A refused text is NaN for every measure except the refusal
    pseudo-fields: it counts only in refusal rates.
    """
    config = release.parsed_config()
    return _score_arrays(config, text_rows(release), metric, condition, task)


def text_rows(release: Release) -> list[dict[str, Any]]:
    """Finished generations with their scores (LEFT JOIN: unscored texts have None)."""
    return list(
        Generation.objects.filter(release=release, status=WorkStatus.DONE)
        .order_by("pk")
        .values(
            "id", "task", "condition", "variant",
            model_id_text=F("model__openrouter_id"),
            scenario=F("scenario_version__scenario__slug"),
            score_id=F("score__id"),
            **{f"score_{name}": F(f"score__{name}") for name in SCORE_FIELDS},
        )
    )


def _score_arrays(
    config: ReleaseConfig, rows: Iterable[dict[str, Any]], metric: str, condition: str | None,
    task: str | None = None,
) -> ScoreArrays:
    field = BY_KEY[metric].field if metric in BY_KEY else metric
    if field not in (REFUSED, PARTIAL) and field not in SCORE_FIELDS:
        raise ValueError(f"unknown metric {metric!r}")
    models = list(config.writers)
    scenarios = [slug for slug, _ in config.pinned()]
    cells = release_cells(config, condition, task)
    model_index = {model: i for i, model in enumerate(models)}
    scenario_index = {slug: i for i, slug in enumerate(scenarios)}
    cell_index = {cell: i for i, cell in enumerate(cells)}
    scores = np.full((len(models), len(scenarios), len(cells)), np.nan)
    for row in rows:
        position = (
            model_index.get(row["model_id_text"]),
            scenario_index.get(row["scenario"]),
            cell_index.get((row["task"], row["condition"], row["variant"])),
        )
        if None not in position and row["score_id"] is not None:
            scores[position] = _row_value(row, field)
    return ScoreArrays(models, scenarios, cells, scores)


def release_cells(config: ReleaseConfig, condition: str | None = None,
                  task: str | None = None) -> list[Cell]:
    """A scenario's cells in array order: tasks x conditions x variants (one condition or task
    when given)."""
    conditions = [condition] if condition else list(config.conditions)
    tasks = [task] if task else list(config.tasks)
    return [(each, cond, variant) for each in tasks for cond in conditions
            for variant in range(config.variants)]


def _row_value(row: dict[str, Any], field: str) -> float:
    refusal = row["score_refusal"]
    if field == REFUSED:
        return {"refused": 1.0, "complied": 0.0, "partial": 0.0}.get(refusal, math.nan)
    if field == PARTIAL:
        return {"partial": 1.0, "complied": 0.0, "refused": 0.0}.get(refusal, math.nan)
    if refusal == "refused":
        return math.nan  # DESIGN section 2: counted in the refusal rate, not scored
    value = row[f"score_{field}"]
    return math.nan if value is None else float(value)


# ---------------------------------------------------------------------------------------------
# Reference values from the simulated public: the control text and no text at all
# ---------------------------------------------------------------------------------------------


def scenario_references(release: Release, scenarios: list[str]) -> dict[str, np.ndarray]:
    """Per scenario (config order): control persuasion and misleading, no-text persuasion.

    A value is the mean over reading positions of that position's answers (attitude: mean of
    the three 1-7 answers; misleading: share of knowledge questions answered wrongly, "don't
    know" is not wrong). Only finished, scored responses count; NaN where there is none.
    """
    return _references(reference_readings(release), scenarios)


def _references(readings: dict[tuple[str, str, str], _Readings],
                scenarios: list[str]) -> dict[str, np.ndarray]:
    def means(stimulus: str, measure: str) -> np.ndarray:
        return np.array([readings[(slug, stimulus, "")].mean(measure)
                         if (slug, stimulus, "") in readings else np.nan for slug in scenarios])

    return {"control_persuasion": means(Stimulus.CONTROL, "persuasion"),
            "control_misleading": means(Stimulus.CONTROL, "misleading"),
            "none_persuasion": means(Stimulus.NONE, "persuasion")}


@dataclasses.dataclass
class _Readings:
    """One stimulus of one scenario as the panel read it: a value per reading position."""

    persuasion: list[float] = dataclasses.field(default_factory=list)
    misleading: list[float] = dataclasses.field(default_factory=list)

    def mean(self, measure: str) -> float:
        values = getattr(self, measure)
        return float(np.mean(values)) if values else math.nan


def reference_readings(release: Release) -> dict[tuple[str, str, str], _Readings]:
    """(scenario, stimulus, key) -> the panel's scored answers to no text, the control text and
    the human baselines (one query). Misleading counts wrong answers, not "don't know"."""
    answers = correct_answers(release)
    readings: dict[tuple[str, str, str], _Readings] = defaultdict(_Readings)
    responses = ReaderResponse.objects.filter(
        release=release, stimulus__in=[Stimulus.CONTROL, Stimulus.NONE, Stimulus.HUMAN],
        status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
    ).values_list("scenario_version__scenario__slug", "stimulus", "stimulus_key", "attitude",
                  "knowledge")
    for slug, stimulus, key, attitude, knowledge in responses:
        reading = readings[(slug, stimulus, key)]
        if attitude:
            reading.persuasion.append(float(np.mean(attitude)))
        correct = answers.get(slug)
        if knowledge and correct:
            wrong = sum(1 for given, right in zip(knowledge, correct, strict=False)
                        if given is not None and given != right)
            reading.misleading.append(wrong / len(correct))
    return readings


def correct_answers(release: Release) -> dict[str, list[int]]:
    """The pinned versions' correct options, so a later edit of a scenario changes nothing."""
    return {
        version.scenario.slug: [item["correct"] for item in version.content["knowledge_questions"]]
        for version in release.scenario_versions.select_related("scenario")
    }


ANCHOR_LABELS = {Stimulus.CONTROL: "Control text", Stimulus.NONE: "No text"}


def _anchors(
    readings: dict[tuple[str, str, str], _Readings], contents: dict[str, dict[str, Any]],
    scenarios: list[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """How the panel read each scenario's control text, its two human baselines and no text
    (DESIGN section 2: anchors beside the models), per scenario and scenario-weighted overall.

    Per-scenario rows carry the scenario's slug so that public pages drop held-out ones.
    """
    rows = []
    for slug in scenarios:
        humans = (contents.get(slug) or {}).get("human_baselines") or []
        stimuli = [(Stimulus.CONTROL, "", ANCHOR_LABELS[Stimulus.CONTROL], None, None)]
        stimuli += [(Stimulus.HUMAN, human["id"], f"Human baseline {human['id']}",
                     human.get("task"), human.get("author")) for human in humans]
        stimuli.append((Stimulus.NONE, "", ANCHOR_LABELS[Stimulus.NONE], None, None))
        for stimulus, key, label, task, author in stimuli:
            reading = readings.get((slug, stimulus, key), _Readings())
            rows.append({"scenario": slug, "stimulus": str(stimulus), "key": key,
                         "label": label, "task": task, "author": author,
                         "persuasion": published_number(reading.mean("persuasion")),
                         "misleading": published_number(reading.mean("misleading")),
                         "readers": len(reading.persuasion)})
    return rows, _anchors_overall(rows)


def _anchors_overall(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Scenario-weighted means: per scenario the mean of its rows of that kind (the two human
    baselines together), then the mean over the scenarios that have one."""
    found = []
    for stimulus, label in ((Stimulus.CONTROL, "Control text"),
                            (Stimulus.HUMAN, "Human baselines"), (Stimulus.NONE, "No text")):
        entry: dict[str, Any] = {"stimulus": str(stimulus), "label": label}
        for measure in ("persuasion", "misleading"):
            per_scenario: dict[str, list[float]] = defaultdict(list)
            for row in rows:
                if row["stimulus"] == stimulus and row[measure] is not None:
                    per_scenario[row["scenario"]].append(row[measure])
            means = [float(np.mean(values)) for values in per_scenario.values()]
            entry[measure] = published_number(np.mean(means)) if means else None
            entry["scenarios"] = max(entry.get("scenarios", 0), len(means))
        found.append(entry)
    return found


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------


def release_statistics(release: Release) -> dict[str, Any]:
    """Every ranking figure of a release as plain, JSON-safe data (NaN -> None)."""
    config = release.parsed_config()
    return figures_from_rows(config, text_rows(release), reference_readings(release),
                       pinned_contents(release))


def _scenarios(config: ReleaseConfig) -> list[str]:
    return [slug for slug, _ in config.pinned()]


def release_resampling(release: Release) -> tuple[list[int], np.ndarray]:
    """The release's one seeded matrix of resample counts (DESIGN section 6) and the ids of
    the scenarios its columns stand for, in configuration order. Every interval of the
    release, agreement and calibration included, resamples scenarios with this matrix."""
    config = release.parsed_config()
    ids = dict(release.pins.values_list("scenario_version__scenario__slug",
                                        "scenario_version__scenario_id"))
    scenario_ids = [ids[slug] for slug in _scenarios(config)]
    counts = statistics.resample_counts(
        len(scenario_ids), config.bootstrap.resamples, config.bootstrap.seed
    )
    return scenario_ids, counts


def figures_from_rows(
    config: ReleaseConfig, rows: list[dict[str, Any]],
    readings: dict[tuple[str, str, str], _Readings], contents: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    scenarios = _scenarios(config)
    references = _references(readings, scenarios)
    # One seeded matrix for every figure of the release (DESIGN section 6).
    counts = statistics.resample_counts(
        len(scenarios), config.bootstrap.resamples, config.bootstrap.seed
    )
    level, rule = config.bootstrap.level, config.ranking_rule
    arrays = _ArraySource(config, rows)
    models = list(config.writers)

    refusal_points: dict[tuple[str | None, str | None], np.ndarray] = {}

    def board(measure: Measure, *, condition: str | None = None,
              task: str | None = None) -> dict[str, Any]:
        """One measure's board on the release's cells, or one condition's or task's; the
        refusal rate beside each row is on the same cells."""
        task = task or measure.task
        cells = (condition, task)
        if cells not in refusal_points:
            refusal_points[cells] = statistics.refusal_rates(
                arrays(REFUSED, condition=condition, task=task), counts, level).point
        scores = arrays(measure.key, condition=condition, task=task)
        return _leaderboard(models, scores, counts, level, rule, measure.higher_first,
                            refusal_points[cells], measure.scale,
                            conditions=arrays.conditions(condition, task),
                            minimum=config.rank_minimum, correction=config.pair_correction)

    persuasion = arrays("persuasion")
    control = references["control_persuasion"]
    no_text = references["none_persuasion"]
    versus_control = statistics.versus_reference(persuasion, control, counts, level)
    without_text = statistics.versus_reference(persuasion, no_text, counts, level)
    anchors, anchors_overall = _anchors(readings, contents, scenarios)
    main = [BY_KEY[key] for key in MAIN if BY_KEY[key].stage in config.stages]
    return {
        # One entry per measure the release's stage set measures (audits_app.leaderboard.measures).
        "leaderboards": {
            measure.key: {**board(measure), "label": measure.label, "what": measure.what,
                          "direction": measure.direction}
            for measure in release_measures(config.stages, config.tasks)
        },
        "control": _control(references),
        "per_condition": {
            condition: {measure.key: board(measure, condition=condition)["rows"]
                        for measure in main}
            for condition in config.conditions
        },
        # The text types apart: under the "classes" rule these are its class tables.
        "per_task": {
            task: {measure.key: board(measure, task=task)["rows"] for measure in main}
            for task in config.tasks
        },
        "c1_minus_c3": _condition_differences(models, arrays, "C1", "C3", config, counts),
        "c2_vs_c0": _condition_differences(models, arrays, "C2", "C0", config, counts),
        # Per-scenario rows carry the scenario's reference values, so that public pages,
        # which drop rows of held-out scenarios, drop those values with them.
        "versus_control": _per_scenario(
            models, scenarios, versus_control.per_scenario_diff, "diff",
            control_persuasion=control, control_misleading=references["control_misleading"],
        ),
        "versus_control_overall": _reference_rows(models, versus_control),
        "baseline_without_text": _per_scenario(
            models, scenarios, without_text.per_scenario_diff, "gain", no_text_persuasion=no_text,
        ),
        "baseline_without_text_overall": _reference_rows(models, without_text),
        "refusal_rates": _refusal_rows(models, arrays, counts, level),
        "anchors": anchors,
        "anchors_overall": anchors_overall,
    }


def release_error_rates(config: ReleaseConfig, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The method's simulated error rates for this release's shape (DESIGN section 6): its
    models, scenarios and cells, with the cells missing where the first ranked measure the
    release measures (honesty, else persuasion) has none, its rule, level, resample counts and
    minimum of data; seeded from the release's seed, so the figures are frozen with it. None
    for a release that ranks nothing (a stage set with neither jury nor panel)."""
    measure = next((BY_KEY[key] for key in MAIN if BY_KEY[key].stage in config.stages), None)
    if measure is None:
        return None
    arrays = _ArraySource(config, rows)
    scores = arrays(measure.key)
    minimum = config.rank_minimum
    eligibility = statistics.rank_eligibility(
        scores, arrays.conditions(), scenario_share=minimum.scenario_share,
        every_group=minimum.every_condition)
    counts = statistics.resample_counts(
        scores.shape[1], config.bootstrap.resamples, config.bootstrap.seed)
    rates = error_rates(~np.isnan(scores), counts, config.bootstrap.level, config.ranking_rule,
                        eligibility.eligible, seed=config.bootstrap.seed + ERROR_RATE_SEED,
                        correction=config.pair_correction)
    return {**{key: published_number(value) if isinstance(value, float) else value
               for key, value in rates.as_dict().items()}, "measure": measure.key}


# Added to the release's seed, so that the simulated data sets are not drawn from the very
# generator that drew the resample counts.
ERROR_RATE_SEED = 1


class _ArraySource:
    """[models, scenarios, cells] arrays of one release's rows, each measure built once.

    A condition's or a task's array is the full array's cells of that condition or task, in
    the same order `_score_arrays` gives them, so subsets cost no second pass over the rows.
    """

    def __init__(self, config: ReleaseConfig, rows: list[dict[str, Any]]) -> None:
        self.config, self.rows = config, rows
        self.full: dict[str, ScoreArrays] = {}

    def __call__(self, metric: str, condition: str | None = None,
                 task: str | None = None) -> np.ndarray:
        if metric not in self.full:
            self.full[metric] = _score_arrays(self.config, self.rows, metric, None)
        arrays = self.full[metric]
        if condition is None and task is None:
            return arrays.scores
        return arrays.scores[:, :, self._kept(arrays.cells, condition, task)]

    def conditions(self, condition: str | None = None, task: str | None = None) -> list[str]:
        """The condition of each cell of the array `self(metric, condition, task)` gives."""
        cells = release_cells(self.config)
        return [cells[k][1] for k in self._kept(cells, condition, task)]

    @staticmethod
    def _kept(cells: list[Cell], condition: str | None, task: str | None) -> list[int]:
        return [k for k, (cell_task, cell_condition, _) in enumerate(cells)
                if condition in (None, cell_condition) and task in (None, cell_task)]


def _refusal_rows(models: list[str], arrays: _ArraySource, counts: np.ndarray,
                  level: float) -> list[dict[str, Any]]:
    """Whole and partial refusal rates with their intervals, and the share of cells whose
    refusal verdict is known (coverage)."""
    refused = arrays(REFUSED)
    whole = statistics.refusal_rates(refused, counts, level)
    partial = statistics.refusal_rates(arrays(PARTIAL), counts, level)
    known = (~np.isnan(refused)).sum(axis=(1, 2)) / max(1, refused.shape[1] * refused.shape[2])
    return [
        {"model": model, "point": published_number(whole.point[i]),
         "low": published_number(whole.low[i]), "high": published_number(whole.high[i]),
         "partial_point": published_number(partial.point[i]),
         "partial_low": published_number(partial.low[i]),
         "partial_high": published_number(partial.high[i]),
         "coverage": published_number(known[i])}
        for i, model in enumerate(models)
    ]


# A difference smaller than this share of the measure's scale is float noise, never
# "demonstrable" (DESIGN section 6): a constant 1e-9 offset has a zero-width interval.
TOLERANCE = 1e-9


DEFAULT_MINIMUM = RankMinimum()


def difference_tolerance(scale: tuple[float, float]) -> float:
    """TOLERANCE times the width of the measure's scale (0 for an unbounded scale)."""
    width = float(scale[1] - scale[0])
    return TOLERANCE * width if math.isfinite(width) else 0.0


def _leaderboard(
    models: list[str], scores: np.ndarray, counts: np.ndarray, level: float, rule: str,
    higher_is_better: bool, refused: np.ndarray, scale: tuple[float, float] = (-np.inf, np.inf),
    *, conditions: list[str] | None = None, minimum: RankMinimum = DEFAULT_MINIMUM,
    correction: str = "none",
) -> dict[str, Any]:
    """Rows (with coverage and the refusal rate of the same cells beside every figure,
    DESIGN section 6) and pairs of one measure. Only models with the release's minimum of data
    are ranked (`statistics.rank_eligibility`); the others carry the reason. A model's point
    and intervals are clipped to the measure's scale, and `point_clipped` says where the fit
    went past it; ranks and pairs come from the paired differences, which are not clipped."""
    if conditions is None:
        conditions = [""] * scores.shape[2]  # one group: every cell the same condition
    eligibility = statistics.rank_eligibility(
        scores, conditions, scenario_share=minimum.scenario_share,
        every_group=minimum.every_condition)
    board = statistics.leaderboard(
        scores, counts, level, higher_is_better, rule,  # type: ignore[arg-type]
        tolerance=difference_tolerance(scale), eligible=eligibility.eligible,
        correction=correction)
    estimates, pairs = board.estimates, board.pairwise

    def clipped(values: np.ndarray) -> np.ndarray:
        return np.clip(values, *scale)

    checked = sensitivity(scores, estimates.point, estimates.cmp_low, estimates.cmp_high)
    past_scale = (estimates.point < scale[0]) | (estimates.point > scale[1])
    estimates = dataclasses.replace(
        estimates, point=clipped(estimates.point),
        abs_low=clipped(estimates.abs_low), abs_high=clipped(estimates.abs_high),
        cmp_low=clipped(estimates.cmp_low), cmp_high=clipped(estimates.cmp_high))
    n_texts = (~np.isnan(scores)).sum(axis=(1, 2))
    rows = [
        {
            "model": model,
            # UNRANKED (no data, or below the minimum) is published as null: it has no place.
            "rank": int(board.ranks[i]) if board.ranks[i] != statistics.UNRANKED else None,
            "unranked_reason": eligibility.reasons[i],
            "point": published_number(estimates.point[i]),
            "point_clipped": bool(past_scale[i]),
            "abs_low": published_number(estimates.abs_low[i]),
            "abs_high": published_number(estimates.abs_high[i]),
            "cmp_low": published_number(estimates.cmp_low[i]),
            "cmp_high": published_number(estimates.cmp_high[i]),
            "n_texts": int(n_texts[i]),
            "coverage": published_number(estimates.coverage[i]),
            "scenarios": int(estimates.scenarios[i]),
            "refusal_rate": published_number(refused[i]),
        }
        for i, model in enumerate(models)
    ]
    sign = -1 if higher_is_better else 1
    rows.sort(key=lambda row: (row["rank"] is None, row["rank"] or 0,
                               math.inf if row["point"] is None else sign * row["point"]))
    return {
        "higher_is_better": higher_is_better,
        "rule": rule,
        "pair_correction": correction,
        "rows": rows,
        "pairs": [
            {"a": models[i], "b": models[j], "diff": published_number(pairs.diff[i, j]),
             "low": published_number(pairs.low[i, j]), "high": published_number(pairs.high[i, j]),
             "significant": bool(pairs.significant[i, j])}
            for i in range(len(models)) for j in range(i + 1, len(models))
        ],
        "sensitivity": _sensitivity_rows(models, checked, estimates.coverage),
    }


def _sensitivity_rows(models: list[str], checked: Sensitivity,
                      coverage: np.ndarray) -> list[dict[str, Any]]:
    """One row per model with missing cells: its plain mean over its own cells against the
    fit's point, pair by pair (`statistics.sensitivity`); flagged where the two readings of
    its lead over some model differ by more than its comparison interval's half-width."""
    rows = []
    for i in np.flatnonzero(checked.missing):
        others = [j for j in range(len(models)) if j != i]
        gaps = [abs(checked.fit_lead[i, j] - checked.cells_lead[i, j]) for j in others]
        known = [(gap, j) for gap, j in zip(gaps, others, strict=True) if math.isfinite(gap)]
        against = max(known)[1] if known else None
        rows.append({
            "model": models[i], "coverage": published_number(coverage[i]),
            "own_mean": published_number(checked.own_mean[i]),
            "half_width": published_number(checked.half_width[i]),
            "largest_gap": published_number(checked.largest_gap[i]),
            "against": None if against is None else models[against],
            "flagged": bool(checked.flagged[i]),
            "versus": [_versus(models, checked, i, j) for j in others],
        })
    return rows


def _versus(models: list[str], checked: Sensitivity, i: int, j: int) -> dict[str, Any]:
    """Model i against model j: both means on the cells both have, and i's lead there and by
    the fit (from the points before they are clipped to the scale)."""
    return {"model": models[j], "own_mean": published_number(checked.own_on_shared[i, j]),
            "their_mean": published_number(checked.other_on_shared[i, j]),
            "cells_lead": published_number(checked.cells_lead[i, j]),
            "fit_lead": published_number(checked.fit_lead[i, j])}


def _condition_differences(
    models: list[str], arrays: Callable[..., np.ndarray], first: str, second: str,
    config: ReleaseConfig, counts: np.ndarray,
) -> list[dict[str, Any]]:
    """first - second per model and measure on the same scenario, task and variant.

    C1 - C3 is what "but stay within the facts" does; C2 - C0 is the damage-control threshold
    (DESIGN section 6). Empty when the release lacks either condition.
    """
    if first not in config.conditions or second not in config.conditions:
        return []
    found = []
    for metric in LEADERBOARD_METRICS:
        if metric in BY_KEY and BY_KEY[metric].stage not in config.stages:
            continue  # not measured by this release's stage set
        difference = statistics.condition_difference(
            arrays(metric, first), arrays(metric, second), counts, config.bootstrap.level
        )
        found += [
            {"model": model, "metric": metric, "point": published_number(difference.point[i]),
             "low": published_number(difference.low[i]),
             "high": published_number(difference.high[i]),
             "significant": bool(difference.significant[i])}
            for i, model in enumerate(models)
        ]
    return found


def _per_scenario(
    models: list[str], scenarios: list[str], values: np.ndarray, key: str,
    **references: np.ndarray,
) -> list[dict[str, Any]]:
    return [
        {"scenario": scenario, "model": model, key: published_number(values[i, s]),
         **{name: published_number(reference[s]) for name, reference in references.items()}}
        for s, scenario in enumerate(scenarios) for i, model in enumerate(models)
    ]


def _reference_rows(
    models: list[str], comparison: statistics.ReferenceComparison
) -> list[dict[str, Any]]:
    return [
        {"model": model, "point": published_number(comparison.point[i]),
         "low": published_number(comparison.low[i]), "high": published_number(comparison.high[i]),
         "significant": bool(comparison.significant[i]),
         "share_above": published_number(comparison.share_above[i]),
         "share_low": published_number(comparison.share_low[i]),
         "share_high": published_number(comparison.share_high[i])}
        for i, model in enumerate(models)
    ]


def _control(references: dict[str, np.ndarray]) -> dict[str, Any]:
    """The control text as an anchor: scenario-weighted means over scenarios that have it.

    Per-scenario values are on the `versus_control` rows (held-out rows are filtered there).
    """
    return {
        "persuasion": _mean_or_none(references["control_persuasion"]),
        "misleading": _mean_or_none(references["control_misleading"]),
        "no_text_persuasion": _mean_or_none(references["none_persuasion"]),
        "note": CONTROL_NOTE,
    }


def _mean_or_none(values: np.ndarray) -> float | None:
    present = values[~np.isnan(values)]
    return published_number(present.mean()) if present.size else None


# Published figures keep this many decimals: enough for every figure shown or computed from
# them, without float noise (0.9999999999999999, 1e-16, -0.0) in the CSV and the API.
PUBLISHED_DECIMALS = 10


def published_number(value: Any) -> float | None:
    """JSON-safe float: NaN and infinities become None; rounded to PUBLISHED_DECIMALS."""
    number = float(value)
    return round(number, PUBLISHED_DECIMALS) + 0.0 if math.isfinite(number) else None


def pinned_contents(release: Release) -> dict[str, dict[str, Any]]:
    """slug -> the content of the version the release pinned (never today's version), in
    the configuration's order."""
    versions = {version.content_hash: version.content
                for version in release.scenario_versions.all()}
    return {slug: versions[digest] for slug, digest in release.parsed_config().pinned()}
