"""Reads of audits_app: a release's per-text scores as arrays, the statistics computed from them,
and the snapshot a publication freezes (DESIGN sections 2, 6 and 8).

The ORM stays here; `audits_app.statistics` only sees numpy arrays. Every figure is computed with
one seeded matrix of scenario resample counts per release, from the release's frozen config
(seed, resamples, level, ranking rule), never from today's settings (STYLE do/don't 6).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from django.db.models import Count, F, Q

from audits_app import statistics
from audits_app.measures import (
    BY_KEY,
    CONDITION_PURPOSES,
    MAIN,
    PARTIAL,
    REFUSED,
    SMALL_SAMPLE,
    TASK_PURPOSES,
    Measure,
    release_measures,
)
from audits_app.trial_checks import trial_for_reader
from runs_app.models import (
    Generation,
    JurorVerdict,
    LlmModel,
    ReaderResponse,
    Release,
    ReplyOutcome,
    ScoringVersion,
    Stimulus,
    TextScore,
    WorkStatus,
)
from runs_app.schemas import ReleaseConfig
from runs_app.scoring_versions import split_pin
from scenarios_app.models import Condition, Task

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
AGREEMENT_MODULE = "audits_app.spotcheck_selectors"

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

    `metric` is a TextScore field, a published measure (`audits_app.measures`: "honesty" =
    honesty_index, "refusal" = whole refusals, "partial_refusal") or "refused" / "partial".
    Models follow the config's writers, scenarios its pinned order, cells its tasks x conditions
    x variants (one condition or task when given), so arrays of two conditions line up cell for
    cell (the same assignment). A refused text is NaN for every measure except the refusal
    pseudo-fields: it counts only in refusal rates.
    """
    config = release.parsed_config()
    return _score_arrays(config, _text_rows(release), metric, condition, task)


def _text_rows(release: Release) -> list[dict[str, Any]]:
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
    conditions = [condition] if condition else list(config.conditions)
    tasks = [task] if task else list(config.tasks)
    cells = [(each, cond, variant) for each in tasks for cond in conditions
             for variant in range(config.variants)]
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
    return _references(_reference_readings(release), scenarios)


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


def _reference_readings(release: Release) -> dict[tuple[str, str, str], _Readings]:
    """(scenario, stimulus, key) -> the panel's scored answers to no text, the control text and
    the human baselines (one query). Misleading counts wrong answers, not "don't know"."""
    answers = _correct_answers(release)
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


def _correct_answers(release: Release) -> dict[str, list[int]]:
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
                         "persuasion": _number(reading.mean("persuasion")),
                         "misleading": _number(reading.mean("misleading")),
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
            entry[measure] = _number(np.mean(means)) if means else None
            entry["scenarios"] = max(entry.get("scenarios", 0), len(means))
        found.append(entry)
    return found


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------


def release_statistics(release: Release) -> dict[str, Any]:
    """Every ranking figure of a release as plain, JSON-safe data (NaN -> None)."""
    config = release.parsed_config()
    return _statistics(config, _text_rows(release), _reference_readings(release),
                       _pinned_contents(release))


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


def _statistics(
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
                            refusal_points[cells], measure.scale)

    persuasion = arrays("persuasion")
    control = references["control_persuasion"]
    no_text = references["none_persuasion"]
    versus_control = statistics.versus_reference(persuasion, control, counts, level)
    without_text = statistics.versus_reference(persuasion, no_text, counts, level)
    anchors, anchors_overall = _anchors(readings, contents, scenarios)
    main = [BY_KEY[key] for key in MAIN if BY_KEY[key].stage in config.stages]
    return {
        # One entry per measure the release's stage set measures (audits_app.measures).
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
        keep = [k for k, (cell_task, cell_condition, _) in enumerate(arrays.cells)
                if condition in (None, cell_condition) and task in (None, cell_task)]
        return arrays.scores[:, :, keep]


def _refusal_rows(models: list[str], arrays: _ArraySource, counts: np.ndarray,
                  level: float) -> list[dict[str, Any]]:
    """Whole and partial refusal rates with their intervals, and the share of cells whose
    refusal verdict is known (coverage)."""
    refused = arrays(REFUSED)
    whole = statistics.refusal_rates(refused, counts, level)
    partial = statistics.refusal_rates(arrays(PARTIAL), counts, level)
    known = (~np.isnan(refused)).sum(axis=(1, 2)) / max(1, refused.shape[1] * refused.shape[2])
    return [
        {"model": model, "point": _number(whole.point[i]), "low": _number(whole.low[i]),
         "high": _number(whole.high[i]), "partial_point": _number(partial.point[i]),
         "partial_low": _number(partial.low[i]), "partial_high": _number(partial.high[i]),
         "coverage": _number(known[i])}
        for i, model in enumerate(models)
    ]


def _leaderboard(
    models: list[str], scores: np.ndarray, counts: np.ndarray, level: float, rule: str,
    higher_is_better: bool, refused: np.ndarray, scale: tuple[float, float] = (-np.inf, np.inf),
) -> dict[str, Any]:
    """Rows (with coverage and the refusal rate of the same cells beside every figure,
    DESIGN section 6) and pairs of one measure. A model's intervals are clipped to the
    measure's scale; ranks and pairs come from the paired differences, which are not."""
    board = statistics.leaderboard(scores, counts, level, higher_is_better, rule)  # type: ignore[arg-type]
    estimates, pairs = board.estimates, board.pairwise

    def clipped(values: np.ndarray) -> np.ndarray:
        return np.clip(values, *scale)

    estimates = dataclasses.replace(
        estimates, abs_low=clipped(estimates.abs_low), abs_high=clipped(estimates.abs_high),
        cmp_low=clipped(estimates.cmp_low), cmp_high=clipped(estimates.cmp_high))
    n_texts = (~np.isnan(scores)).sum(axis=(1, 2))
    rows = [
        {
            "model": model,
            # UNRANKED (no data) is published as null: it has no place.
            "rank": int(board.ranks[i]) if board.ranks[i] != statistics.UNRANKED else None,
            "point": _number(estimates.point[i]),
            "abs_low": _number(estimates.abs_low[i]),
            "abs_high": _number(estimates.abs_high[i]),
            "cmp_low": _number(estimates.cmp_low[i]),
            "cmp_high": _number(estimates.cmp_high[i]),
            "n_texts": int(n_texts[i]),
            "coverage": _number(estimates.coverage[i]),
            "scenarios": int(estimates.scenarios[i]),
            "refusal_rate": _number(refused[i]),
        }
        for i, model in enumerate(models)
    ]
    sign = -1 if higher_is_better else 1
    rows.sort(key=lambda row: (row["rank"] is None, row["rank"] or 0,
                               math.inf if row["point"] is None else sign * row["point"]))
    return {
        "higher_is_better": higher_is_better,
        "rule": rule,
        "rows": rows,
        "pairs": [
            {"a": models[i], "b": models[j], "diff": _number(pairs.diff[i, j]),
             "low": _number(pairs.low[i, j]), "high": _number(pairs.high[i, j]),
             "significant": bool(pairs.significant[i, j])}
            for i in range(len(models)) for j in range(i + 1, len(models))
        ],
    }


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
            {"model": model, "metric": metric, "point": _number(difference.point[i]),
             "low": _number(difference.low[i]), "high": _number(difference.high[i]),
             "significant": bool(difference.significant[i])}
            for i, model in enumerate(models)
        ]
    return found


def _per_scenario(
    models: list[str], scenarios: list[str], values: np.ndarray, key: str,
    **references: np.ndarray,
) -> list[dict[str, Any]]:
    return [
        {"scenario": scenario, "model": model, key: _number(values[i, s]),
         **{name: _number(reference[s]) for name, reference in references.items()}}
        for s, scenario in enumerate(scenarios) for i, model in enumerate(models)
    ]


def _reference_rows(
    models: list[str], comparison: statistics.ReferenceComparison
) -> list[dict[str, Any]]:
    return [
        {"model": model, "point": _number(comparison.point[i]),
         "low": _number(comparison.low[i]), "high": _number(comparison.high[i]),
         "significant": bool(comparison.significant[i]),
         "share_above": _number(comparison.share_above[i]),
         "share_low": _number(comparison.share_low[i]),
         "share_high": _number(comparison.share_high[i])}
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
    return _number(present.mean()) if present.size else None


# Published figures keep this many decimals: enough for every figure shown or computed from
# them, without float noise (0.9999999999999999, 1e-16, -0.0) in the CSV and the API.
PUBLISHED_DECIMALS = 10


def _number(value: Any) -> float | None:
    """JSON-safe float: NaN and infinities become None; rounded to PUBLISHED_DECIMALS."""
    number = float(value)
    return round(number, PUBLISHED_DECIMALS) + 0.0 if math.isfinite(number) else None


# ---------------------------------------------------------------------------------------------
# Counts, the spot-check gate, and the snapshot
# ---------------------------------------------------------------------------------------------


def release_counts(release: Release) -> dict[str, int]:
    """What a publication freezes, in numbers (shown before publishing, stored in the snapshot)."""
    config = release.parsed_config()
    generations = Generation.objects.filter(release=release).aggregate(
        texts=Count("pk", filter=Q(status=WorkStatus.DONE)),
        failed_cells=Count("pk", filter=Q(status=WorkStatus.FAILED)),
    )
    scores = TextScore.objects.filter(release=release).aggregate(
        scored=Count("pk"), refused=Count("pk", filter=Q(refusal="refused")),
    )
    unscored = JurorVerdict.objects.filter(release=release, outcome=ReplyOutcome.UNSCORED).count()
    return {
        "texts": generations["texts"], "scored": scores["scored"], "unscored_verdicts": unscored,
        "failed_cells": generations["failed_cells"], "refused": scores["refused"],
        "scenarios": len(config.scenarios), "models": len(config.writers),
    }


@dataclasses.dataclass(frozen=True)
class GateCheck:
    """The spot-check gate (config.gate) against the release's spot-check figures.

    Coverage must reach min_coverage. Agreement must reach min_agreement; an agreement that
    cannot be computed yet (no spot-checks) blocks only when min_agreement is above 0.
    """

    coverage: float
    agreement: float | None
    items: int
    min_coverage: float
    min_agreement: float
    available: bool  # False while the spot-check module does not exist

    @property
    def reasons(self) -> list[str]:
        found = []
        if self.coverage < self.min_coverage:
            found.append(f"spot-check coverage {self.coverage:.1%} is below the gate's "
                         f"{self.min_coverage:.1%} ({self.items} items checked)")
        if self.agreement is None and self.min_agreement > 0:
            found.append(f"spot-check agreement is not known yet; the gate asks for "
                         f"{self.min_agreement:.2f}")
        elif self.agreement is not None and self.agreement < self.min_agreement:
            found.append(f"spot-check agreement {self.agreement:.2f} is below the gate's "
                         f"{self.min_agreement:.2f}")
        return found

    @property
    def passed(self) -> bool:
        return not self.reasons

    def as_dict(self) -> dict[str, Any]:
        return {"coverage": self.coverage, "agreement": self.agreement, "items": self.items,
                "min_coverage": self.min_coverage, "min_agreement": self.min_agreement,
                "passed": self.passed, "reasons": self.reasons}


def release_gate(release: Release) -> GateCheck:
    gate = release.parsed_config().gate
    module = _spotcheck_module()
    if module is None:
        # Not built yet: nothing has been checked (coverage 0, agreement unknown).
        coverage, agreement, items = 0.0, None, 0
    else:
        figures = module.gate_figures(release)
        coverage, agreement, items = figures.coverage, figures.agreement, figures.items
    return GateCheck(
        coverage=float(coverage), agreement=None if agreement is None else float(agreement),
        items=int(items), min_coverage=gate.min_coverage, min_agreement=gate.min_agreement,
        available=module is not None,
    )


def _spotcheck_module():
    # find_spec first: a missing module means "no spot-checks yet", but an error inside an
    # existing module must surface, not be mistaken for that.
    if importlib.util.find_spec(AGREEMENT_MODULE) is None:
        return None
    return importlib.import_module(AGREEMENT_MODULE)


def _agreement(release: Release) -> dict[str, Any] | None:
    """The spot-check module's agreement figures (`agreement_summary`), JSON-safe; None when
    that module is absent or there is nothing to agree on yet."""
    module = _spotcheck_module()
    summary = getattr(module, "agreement_summary", None) if module else None
    return _json_safe(summary(release)) if summary else None


def _calibration(release: Release) -> dict[str, Any] | None:
    """The simulated public against human readers (`calibration_summary`), JSON-safe; None
    until human reader results exist. The release page shows it prominently (issue 6)."""
    module = _spotcheck_module()
    summary = getattr(module, "calibration_summary", None) if module else None
    return _json_safe(summary(release)) if summary else None


def _json_safe(value: Any) -> Any:
    """Plain JSON data: numpy scalars and arrays unwrapped, NaN and infinities as None."""
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_json_safe(item) for item in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return _number(value)
    return value


def release_snapshot(
    release: Release, *, gate: GateCheck | None = None, override_reason: str = ""
) -> dict[str, Any]:
    """Everything a publication freezes, as JSON-safe data (issue 5's snapshot format).

    Keys: release, models (writers, config order), jurors (the jury pool, with the registry key
    their verdict rows name), scenarios (pinned versions), the statistics of
    `release_statistics`, scenario_content, texts (every finished text with every TextScore
    field, held-out ones included and marked: public pages filter them), counts, agreement and
    calibration (spot-check module, or None), gate (figures, thresholds, override reason) and
    method. Every name a public page shows is in here, taken from the frozen configuration:
    renaming a model in the registry later changes no published page.

    The statistics (`_statistics`):

    - leaderboards: {measure: board}, one entry per measure the stage set measures, listed in
      `method.measures` (honesty, persuasion and misleading always). A board is
      {higher_is_better, rule, label, what, direction, rows, pairs}; a row is {model, rank
      (the release's rule; null without data), point, abs_low, abs_high, cmp_low, cmp_high,
      n_texts, coverage (share of the measure's cells scored), scenarios (with a score),
      refusal_rate (whole refusals on the same cells)}; pairs as `PAIRS_NOTE` says.
    - per_condition, per_task: {C0.. / T1..: {honesty|persuasion|misleading: rows}}, rows
      as above on that condition's or task's cells; per_task is the class table per text type
      when the rule is "classes".
    - refusal_rates: [{model, point, low, high (whole refusals), partial_point, partial_low,
      partial_high, coverage (share of cells with a refusal verdict)}].
    - anchors: [{scenario, stimulus (control | human | none), key ("" or H1/H2), label, task,
      author, persuasion, misleading, readers}] per scenario (public pages drop held-out
      ones); anchors_overall: [{stimulus, label, persuasion, misleading, scenarios}],
      scenario-weighted.
    - control, versus_control(_overall), baseline_without_text(_overall), c1_minus_c3,
      c2_vs_c0 as before.

    scenario_content: {slug: the pinned version's content without confidential facts and
    canary} (public pages drop held-out ones). method adds, besides seed, resamples, level,
    rule, weights and the scoring version: task_version, condition_version, tasks and
    conditions ([{code, name, brief | overlay, purpose}], word for word what the writers got),
    measures ([{key, label, link, what, direction, higher_is_better, stage, task}] in page
    order), stages, and small_sample (the interval correction's simulated figures).
    """
    config = release.parsed_config()
    rows = _text_rows(release)
    contents = _pinned_contents(release)
    snapshot: dict[str, Any] = {
        "release": {"code": release.code, "language": release.language,
                    "title": release.title, "config": release.config,
                    "config_hash": release.config_hash},
        "models": [{"id": spec.id, "name": spec.name, "family": spec.family}
                   for writer in config.writers
                   for spec in config.models if spec.id == writer],
        "jurors": _jurors(config),
        "scenarios": _scenario_entries(release, config),
        **_statistics(config, rows, _reference_readings(release), contents),
        "scenario_content": {slug: _public_content(content)
                             for slug, content in contents.items()},
        "texts": _texts(rows, _visibility(release)),
        "counts": release_counts(release),
        "agreement": _agreement(release),
        "calibration": _calibration(release),
        "reader_trial": trial_for_reader(config.reader, release.language),
        "gate": {**(gate or release_gate(release)).as_dict(), "override_reason": override_reason},
        "method": {"seed": config.bootstrap.seed, "resamples": config.bootstrap.resamples,
                   "level": config.bootstrap.level, "rule": config.ranking_rule,
                   "weights": config.weights.model_dump(), "pairs": PAIRS_NOTE,
                   "control": CONTROL_NOTE, **_scoring_method(config),
                   **_method_in_words(config)},
    }
    return snapshot


def _method_in_words(config: ReleaseConfig) -> dict[str, Any]:
    """What the method section says, frozen with the figures: the task briefs and condition
    overlays word for word in the release's language and pinned versions (what every writer
    was given), what each published measure means, and the small-sample correction's figures."""
    tasks = {task.code: task for task in Task.objects.filter(
        language=config.language, version=config.task_version, code__in=config.tasks)}
    conditions = {condition.code: condition for condition in Condition.objects.filter(
        language=config.language, version=config.condition_version,
        code__in=config.conditions)}
    return {
        "task_version": config.task_version, "condition_version": config.condition_version,
        "tasks": [{"code": code, "name": tasks[code].name if code in tasks else "",
                   "brief": tasks[code].brief if code in tasks else "",
                   "purpose": TASK_PURPOSES.get(code, "")} for code in config.tasks],
        "conditions": [{"code": code, "name": conditions[code].name if code in conditions else "",
                        "overlay": conditions[code].overlay if code in conditions else "",
                        "purpose": CONDITION_PURPOSES.get(code, "")}
                       for code in config.conditions],
        "measures": [measure.as_dict()
                     for measure in release_measures(config.stages, config.tasks)],
        "stages": list(config.stages),
        "small_sample": SMALL_SAMPLE,
    }


def _pinned_contents(release: Release) -> dict[str, dict[str, Any]]:
    """slug -> the content of the version the release pinned (never today's version), in
    the configuration's order."""
    versions = {version.content_hash: version.content
                for version in release.scenario_versions.all()}
    return {slug: versions[digest] for slug, digest in release.parsed_config().pinned()}


# What a reader of a published release may see of a scenario (DESIGN section 8): everything
# but the confidential facts and the canary. The fact labels and the instruments are part of
# the published method (the jury and the panel used them); the writer never saw them.
PUBLIC_CONTENT_KEYS = ("title", "language", "organisation", "situation", "facts",
                       "uncertainties", "journalist_questions", "attitude_questions",
                       "knowledge_questions", "control_text", "human_baselines")


def _public_content(content: dict[str, Any]) -> dict[str, Any]:
    return {key: content[key] for key in PUBLIC_CONTENT_KEYS if key in content}


def _scoring_method(config: ReleaseConfig) -> dict[str, str]:
    """The scoring version the release pinned (name and hash), and the language of the
    jury's instructions (jurors read every text in the release's own language)."""
    name, digest = split_pin(config.scoring_version)
    texts = ScoringVersion.texts_for_pin(config.scoring_version)
    return {"scoring_version": name, "scoring_hash": digest,
            "juror_instruction_language": texts.jury.instruction_language}


def _jurors(config: ReleaseConfig) -> list[dict[str, Any]]:
    """The jury pool as the frozen config names it; `key` is the registry row that a verdict
    points to, so a text page can name its jurors without reading the registry."""
    keys = dict(LlmModel.objects.filter(openrouter_id__in=config.jurors)
                .values_list("openrouter_id", "pk"))
    specs = {spec.id: spec for spec in config.models}
    return [{"key": keys.get(juror), "id": juror, "name": specs[juror].name,
             "family": specs[juror].family} for juror in config.jurors]


def _scenario_entries(release: Release, config: ReleaseConfig) -> list[dict[str, Any]]:
    """From the pinned versions' content, in config order (a later edit changes nothing)."""
    versions = {version.content_hash: version for version in release.scenario_versions.all()}
    entries = []
    for slug, digest in config.pinned():
        content = versions[digest].content
        entries.append({"slug": slug, "title": content["title"],
                        "visibility": content["visibility"], "version_hash": digest,
                        "organisation": content["organisation"]["name"]})
    return entries


def _visibility(release: Release) -> dict[str, str]:
    return {version.scenario.slug: version.content["visibility"]
            for version in release.scenario_versions.select_related("scenario")}


def _texts(rows: list[dict[str, Any]], visibility: dict[str, str]) -> list[dict[str, Any]]:
    """Every finished text with all its scores; held-out ones too, marked (staff need them)."""
    return [
        {"id": row["id"], "model": row["model_id_text"], "scenario": row["scenario"],
         "task": row["task"], "condition": row["condition"], "variant": row["variant"],
         "visibility": visibility.get(row["scenario"], ""), "scored": row["score_id"] is not None,
         **{name: _json_safe(row[f"score_{name}"]) for name in SCORE_FIELDS}}
        for row in rows
    ]


