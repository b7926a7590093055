"""The snapshot a publication freezes: every figure, name and text a public page, CSV, API
answer or archive shows, as JSON-safe data (DESIGN section 8). Computed from the rows by
`release_snapshot`; drafts compute it on request, publishing freezes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audits_app.calibration.selectors import calibration_summary, human_readers_unused
from audits_app.calibration.trial_report import trial_for_reader
from audits_app.leaderboard.figures import (
    CONTROL_NOTE,
    PAIRS_NOTE,
    SCORE_FIELDS,
    figures_from_rows,
    pinned_contents,
    published_number,
    reference_readings,
    release_error_rates,
    text_rows,
)
from audits_app.leaderboard.measures import (
    CONDITION_PURPOSES,
    TASK_PURPOSES,
    release_measures,
)
from audits_app.publication.gate import GateCheck, release_counts, release_gate
from audits_app.publication.held_cells import held_cells_draw, held_entries
from audits_app.publication.snapshot_model import SNAPSHOT_SCHEMA_VERSION, snapshot_load
from audits_app.spotchecks.selectors import agreement_summary
from runs_app.models import LlmModel, Release, ScoringVersion
from runs_app.schemas import ReleaseConfig
from runs_app.scoring_versions import split_pin
from scenarios_app.models import Condition, Task


def _agreement(release: Release) -> dict[str, Any] | None:
    """The spot-checks' agreement figures, JSON-safe; None while there is nothing to agree on."""
    return _json_safe(agreement_summary(release))


def _calibration(release: Release) -> dict[str, Any] | None:
    """The simulated public against human readers, JSON-safe; None until human reader
    results exist. The release page shows it prominently (DESIGN section 2)."""
    return _json_safe(calibration_summary(release))


def _human_readers(release: Release, calibration: dict[str, Any] | None) -> dict[str, Any] | None:
    """The human reader results imported that the calibration figure uses none of
    (`human_readers_unused`: their counts), so that the page says why rather than that none
    exist; None when there are none, or when the figure uses them. Always a key of the
    snapshot: one without it was frozen before, and its page reads the rows instead."""
    return None if calibration is not None else _json_safe(human_readers_unused(release))


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
        return published_number(value)
    return value


def release_snapshot(
    release: Release, *, gate: GateCheck | None = None, override_reason: str = ""
) -> dict[str, Any]:
    """Everything a publication freezes, as JSON-safe data, checked against its typed model
    (`publication.snapshot_model.ReleaseSnapshot`, whose `schema_version` it carries).

    Keys: release, models (writers, config order), jurors (the jury pool, with the registry key
    their verdict rows name), scenarios (pinned versions), the statistics of
    `release_statistics`, scenario_content, texts (every finished text with every TextScore
    field, held-out ones included and marked: public pages filter them), counts, agreement and
    calibration (spot-check module, or None), human_readers (the counts of human reader results
    imported that the calibration figure cannot use, or None: `_human_readers`),
    gate (figures, thresholds, override reason), chart (the main chart's frame: {honesty:
    [low, high], persuasion: [low, high], anchors}, from the release file, never past a
    scale) and method. Every name a public page shows
    is in here, taken from the frozen configuration: renaming a model in the registry later
    changes no published page.

    The statistics (`figures_from_rows`):

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

    arena: {cells: [{scenario, task, condition, variant}]}, the cells held for the arena
    (`publication.held_cells`): their texts stay off public pages until the arena closes.
    reading_studies: the same, for reading studies, only when the release holds any: their
    texts stay off public pages until a publisher reveals them.

    scenario_content: {slug: the pinned version's content without confidential facts and
    canary} (public pages drop held-out ones). method adds, besides seed, resamples, level,
    rule, weights and the scoring version: task_version, condition_version, tasks and
    conditions ([{code, name, brief | overlay, purpose}], word for word what the writers got),
    measures ([{key, label, link, what, direction, higher_is_better, stage, task}] in page
    order), stages, and error_rates: the rule's simulated error rates for the release's own
    shape (`statistics.error_rates`; {data_sets, models, scenarios, cells, rule, level,
    false_difference_per_pair, any_false_difference, expected_below_first, power,
    difference_sd, measure}). Snapshots published before carry small_sample instead, a fixed
    table for 6 to 20 scenarios, which the methods page still shows for them.
    """
    config = release.parsed_config()
    rows = text_rows(release)
    contents = pinned_contents(release)
    visibility = _visibility(release)
    calibration = _calibration(release)
    snapshot: dict[str, Any] = {
        "schema_version": SNAPSHOT_SCHEMA_VERSION,
        "release": {"code": release.code, "language": release.language,
                    "title": release.title, "config": release.config,
                    "config_hash": release.config_hash},
        "models": [{"id": spec.id, "name": spec.name, "family": spec.family}
                   for writer in config.writers
                   for spec in config.models if spec.id == writer],
        "jurors": _jurors(config),
        "scenarios": _scenario_entries(release, config),
        **figures_from_rows(config, rows, reference_readings(release), contents),
        "scenario_content": {slug: _public_content(content)
                             for slug, content in contents.items()},
        "texts": _texts(rows, visibility),
        **held_entries(held_cells_draw(config, [
            slug for slug, _ in config.pinned() if visibility.get(slug) == "public"])),
        "counts": release_counts(release),
        "agreement": _agreement(release),
        "calibration": calibration,
        "human_readers": _human_readers(release, calibration),
        "reader_trial": trial_for_reader(config.reader, release.language),
        "gate": {**(gate or release_gate(release)).as_dict(), "override_reason": override_reason},
        # The chart's frame belongs to the release (its file's `chart:`), frozen here so
        # that the chart never moves after publication.
        "chart": config.chart.model_dump(mode="json"),
        "method": {"seed": config.bootstrap.seed, "resamples": config.bootstrap.resamples,
                   "level": config.bootstrap.level, "rule": config.ranking_rule,
                   "pair_correction": config.pair_correction,
                   "weights": config.weights.model_dump(), "pairs": PAIRS_NOTE,
                   "control": CONTROL_NOTE, **_scoring_method(config),
                   **_method_in_words(config),
                   "error_rates": release_error_rates(config, rows)},
    }
    # A builder that drifts from what the pages read fails here, before anything is frozen.
    snapshot_load(snapshot)
    return snapshot


def _method_in_words(config: ReleaseConfig) -> dict[str, Any]:
    """What the method section says, frozen with the figures: the task briefs and condition
    overlays word for word in the release's language and pinned versions (what every writer
    was given), and what each published measure means."""
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
    }




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


def snapshot_texts(release: Release) -> list[dict[str, Any]]:
    """The snapshot's `texts` as the release's rows give them now (`verify_release` of a
    release imported from a public archive, whose other figures its rows cannot give)."""
    return _texts(text_rows(release), _visibility(release))


def _texts(rows: list[dict[str, Any]], visibility: dict[str, str]) -> list[dict[str, Any]]:
    """Every finished text with all its scores; held-out ones too, marked (staff need them)."""
    return [
        {"id": row["id"], "model": row["model_id_text"], "scenario": row["scenario"],
         "task": row["task"], "condition": row["condition"], "variant": row["variant"],
         "visibility": visibility.get(row["scenario"], ""), "scored": row["score_id"] is not None,
         **{name: _json_safe(row[f"score_{name}"]) for name in SCORE_FIELDS}}
        for row in rows
    ]
