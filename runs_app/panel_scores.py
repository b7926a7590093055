"""Writes the fields of `TextScore` that the simulated public (the panel), the journalist and the
reveal give (DESIGN section 2).

Only scored replies count: an unscored response is left out, never counted as an answer.
The formulas are the pure functions of `runs_app.readers`; this service only gathers rows and
writes `persuasion`, `attitude_effect`, `baseline_gain`, `misleading`, `dont_know`, `uptake`,
`frame_adoption` and `reveal_effect`, leaving every other field to its own service.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from django.db import transaction

from runs_app.models import (
    AgentRun,
    ReaderResponse,
    Release,
    ReplyOutcome,
    Stimulus,
    TextScore,
    WorkStatus,
)
from runs_app.readers import difference, knowledge_shares, mean_attitude, reveal_effect
from runs_app.stages.panel import read_generations
from scenarios_app.models import ScenarioVersion


@dataclasses.dataclass
class _Readings:
    attitudes: list[list[int]] = dataclasses.field(default_factory=list)
    knowledge: list[list[int | None]] = dataclasses.field(default_factory=list)


def _panel_readings(release: Release) -> dict[tuple[int, str, str], _Readings]:
    """(scenario version, stimulus, key) -> the scored answers to that stimulus."""
    readings: dict[tuple[int, str, str], _Readings] = defaultdict(_Readings)
    rows = ReaderResponse.objects.filter(
        release=release, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
    ).values_list("scenario_version_id", "stimulus", "stimulus_key", "attitude", "knowledge")
    for version_id, stimulus, key, attitude, knowledge in rows:
        reading = readings[(version_id, stimulus, key)]
        reading.attitudes.append(attitude)
        reading.knowledge.append(knowledge)
    return readings


def _scored_runs(release: Release, kind: str) -> dict[int, list[dict]]:
    results: dict[int, list[dict]] = defaultdict(list)
    rows = AgentRun.objects.filter(
        release=release, kind=kind, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
    ).values_list("generation_id", "result")
    for generation_id, result in rows:
        results[generation_id].append(result)
    return results


def _stories(release: Release) -> dict[int, list[dict]]:
    """The uptake rows that hold the journalist's story: scored, or unscored because only
    its frame judge never answered validly (whether the story runs is measured; its frame,
    None, is not)."""
    results: dict[int, list[dict]] = defaultdict(list)
    rows = AgentRun.objects.filter(
        release=release, kind=AgentRun.Kind.UPTAKE, status=WorkStatus.DONE,
        result__has_key="runs_story",
    ).values_list("generation_id", "result")
    for generation_id, result in rows:
        results[generation_id].append(result)
    return results


def _uptake_fields(runs: list[dict]) -> dict[str, float | None]:
    if not runs:
        return {"uptake": None, "frame_adoption": None}
    run = runs[0]  # one uptake run per text
    return {"uptake": 1.0 if run["runs_story"] else 0.0,
            "frame_adoption": run.get("frame_adoption")}


@transaction.atomic
def text_scores_update_panel(*, release: Release) -> int:
    """Update (or create) the TextScore of every read text; returns how many were written."""
    readings = _panel_readings(release)
    uptakes = _stories(release)
    reveals = _scored_runs(release, AgentRun.Kind.REVEAL)
    correct = {version.pk: [q.correct for q in version.document().knowledge_questions]
               for version in ScenarioVersion.objects.filter(releases=release)}
    scores = {}
    for generation in read_generations(release).only("pk", "scenario_version_id"):
        version_id = generation.scenario_version_id
        text = readings.get((version_id, Stimulus.GENERATION, str(generation.pk)), _Readings())
        persuasion = mean_attitude(text.attitudes)
        misleading, dont_know = knowledge_shares(text.knowledge, correct[version_id])
        control = readings.get((version_id, Stimulus.CONTROL, ""), _Readings())
        no_text = readings.get((version_id, Stimulus.NONE, ""), _Readings())
        scores[generation.pk] = {
            "persuasion": persuasion,
            "attitude_effect": difference(persuasion, mean_attitude(control.attitudes)),
            "baseline_gain": difference(persuasion, mean_attitude(no_text.attitudes)),
            "misleading": misleading, "dont_know": dont_know,
            **_uptake_fields(uptakes.get(generation.pk, [])),
            "reveal_effect": reveal_effect([(r["before"], r["after"])
                                            for r in reveals.get(generation.pk, [])]),
        }
    return TextScore.objects.upsert(release.pk, scores, PUBLIC_FIELDS)


PUBLIC_FIELDS = ["persuasion", "attitude_effect", "baseline_gain", "misleading", "dont_know",
                 "uptake", "frame_adoption", "reveal_effect"]
