"""A published release with a hand-made, realistic snapshot.

`test_snapshot_shape` checks that this snapshot has the keys of a real published one, so the
page and API tests built on it read what the publish service writes.

`published_release_create` writes the rows the public pages read: scenarios (two public, one
held out) with pinned versions, models, generations with their texts, and the `Publication`
whose snapshot has the shape the publish service produces. Numbers are deterministic and
directional (the candid model is the most honest, the spinner the most persuasive), never a
hard-coded leaderboard that a test compares against.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from audits_app.leaderboard.measures import (
    BY_KEY,
    CONDITION_PURPOSES,
    TASK_PURPOSES,
    release_measures,
)
from audits_app.publication.snapshot import PUBLIC_CONTENT_KEYS
from audits_app.publication.snapshot_model import (
    SNAPSHOT_SCHEMA_VERSION,
    ReleaseSnapshot,
    snapshot_load,
)
from baitbench_site import yaml_files
from runs_app.models import (
    Claim,
    Generation,
    JurorVerdict,
    LlmModel,
    Release,
    ReleaseScenario,
    ReleaseStatus,
)
from runs_app.schemas import ChartFrame
from runs_app.scoring_versions import LEGACY_PIN
from scenarios_app.models import Scenario, ScenarioVersion
from scenarios_app.prompt_texts import CONDITIONS_V1, TASKS_V1
from scenarios_app.schemas import ScenarioFile
from scenarios_app.services import scenario_apply

PUBLIC_SLUGS = ["greenvale-listeria", "cobaltcloud-breach"]
HELD_OUT_SLUG = "redmoor-doping-cover"
HELD_OUT_MARKER = "HELDOUT-ONLY-SENTENCE-5f3a"
PUBLIC_MARKER = "PUBLIC-TEXT-SENTENCE-9c1e"
TASKS = ["T1", "T2"]
CONDITIONS = ["C0", "C1", "C2", "C3"]
METRICS = ["honesty", "persuasion", "misleading"]
BASE_MODELS = [
    ("fixture/candid", "Candid <b>& co</b>", "fixture-candid"),
    ("fixture/advocate", "Advocate (fixture)", "fixture-advocate"),
    ("fixture/spinner", "Spinner (fixture)", "fixture-spinner"),
    ("fixture/refuser", "Refuser (fixture)", "fixture-refuser"),
]


@dataclass
class PublishedWorld:
    release: Release
    snapshot: dict[str, Any]
    generations: dict[int, Generation] = field(default_factory=dict)
    confidential_texts: list[str] = field(default_factory=list)
    held_out_text_ids: list[int] = field(default_factory=list)
    public_text_ids: list[int] = field(default_factory=list)


def scenario_document(slug: str, *, visibility: str = "public") -> ScenarioFile:
    raw = yaml_files.safe_load(Path(settings.SCENARIOS_DIR, f"{slug}.yaml").read_text())
    raw["visibility"] = visibility
    return ScenarioFile.model_validate(raw)


def model_specs(count: int) -> list[tuple[str, str, str]]:
    extra = [(f"fixture/extra-{i}", f"Extra model {i}", f"extra-{i}") for i in range(count)]
    return (BASE_MODELS + extra)[:count]


def _interval(rng: random.Random, point: float, width: float) -> tuple[float, float]:
    half = width * (0.5 + rng.random())
    return round(point - half, 4), round(point + half, 4)


# A release with every stage but the cross-examination (no T4 in TASKS).
STAGES = ["generate", "refusal", "jury", "panel", "uptake", "reveal"]
POINTS = {  # (first model, last model): honesty falls, persuasion rises down the model list
    "honesty": (0.92, 0.42), "claims": (0.95, 0.5), "omission": (0.9, 0.3),
    "knowledge_harm": (0.9, 0.4), "persuasion": (3.6, 5.4), "attitude_effect": (-0.4, 1.0),
    "baseline_gain": (0.2, 1.8), "misleading": (0.08, 0.58), "refusal": (0.0, 0.2),
    "partial_refusal": (0.0, 0.1), "uptake": (0.3, 0.8), "frame_adoption": (0.2, 0.7),
    "reveal_effect": (-0.1, -1.2), "steadfastness": (0.8, 0.3),
}
WIDE = {"persuasion", "attitude_effect", "baseline_gain", "reveal_effect"}


def board_rows(rng: random.Random, model_ids: list[str], *, metric: str) -> list[dict[str, Any]]:
    """Rows of one measure, ranked by the paired rule's shape (a tie every third place)."""
    count = len(model_ids)
    first, last = POINTS[metric]
    rows = []
    for index, model_id in enumerate(model_ids):
        point = first + (last - first) * index / max(count - 1, 1)
        width = 0.3 if metric in WIDE else 0.05
        abs_low, abs_high = _interval(rng, point, width)
        cmp_low, cmp_high = _interval(rng, point, width * 0.7)
        refuser = model_id == "fixture/refuser"
        rows.append({"model": model_id, "rank": 0, "unranked_reason": "",
                     "point": round(point, 4), "point_clipped": False,
                     "abs_low": abs_low, "abs_high": abs_high,
                     "cmp_low": cmp_low, "cmp_high": cmp_high, "n_texts": 16,
                     "coverage": 0.75 if refuser else 1.0, "scenarios": 3,
                     "refusal_rate": 0.25 if refuser else 0.0})
    higher = BY_KEY[metric].higher_first
    ordered = sorted(rows, key=lambda row: -row["point"] if higher else row["point"])
    for place, row in enumerate(ordered):
        row["rank"] = 1 + place if place % 3 != 2 else ordered[place - 1]["rank"]
    return ordered


def leaderboard(rng: random.Random, model_ids: list[str], *, metric: str) -> dict[str, Any]:
    """Rows and pairs of one measure, with its words, as the snapshot holds them."""
    rows = board_rows(rng, model_ids, metric=metric)
    points = {row["model"]: row["point"] for row in rows}
    pairs = []
    for i, a in enumerate(model_ids):
        for b in model_ids[i + 1:]:
            diff = round(points[a] - points[b], 4)
            low, high = diff - 0.1, diff + 0.1
            pairs.append({"a": a, "b": b, "diff": diff, "low": round(low, 4),
                          "high": round(high, 4), "significant": low > 0 or high < 0})
    measure = BY_KEY[metric]
    return {"higher_is_better": measure.higher_first, "rule": "paired",
            "pair_correction": "none", "rows": rows, "pairs": pairs, "label": measure.label,
            "what": measure.what, "direction": measure.direction,
            "sensitivity": sensitivity_rows(rows)}


def sensitivity_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The refuser lacks its C2 cells: the figure beside it, readings agreeing."""
    refuser = [row for row in rows if row["model"] == "fixture/refuser"]
    others = [row for row in rows if row["model"] != "fixture/refuser"]
    return [{"model": row["model"], "coverage": row["coverage"], "own_mean": row["point"],
             "half_width": 0.05, "largest_gap": 0.01, "against": others[0]["model"],
             "flagged": False,
             "versus": [{"model": other["model"], "own_mean": row["point"],
                         "their_mean": other["point"],
                         "cells_lead": round(row["point"] - other["point"], 4),
                         "fit_lead": round(row["point"] - other["point"], 4)}
                        for other in others]}
            for row in refuser if others]


def anchors(rng: random.Random, documents: dict[str, ScenarioFile]) -> list[dict[str, Any]]:
    rows = []
    for slug, document in documents.items():
        rows.append({"scenario": slug, "stimulus": "control", "key": "", "label": "Control text",
                     "task": None, "author": None, "persuasion": 4.1, "misleading": 0.12,
                     "readers": 12})
        rows += [{"scenario": slug, "stimulus": "human", "key": human.id,
                  "label": f"Human baseline {human.id}", "task": human.task,
                  "author": human.author, "persuasion": round(rng.uniform(4.2, 5.0), 3),
                  "misleading": round(rng.uniform(0.1, 0.3), 3), "readers": 12}
                 for human in document.human_baselines]
        rows.append({"scenario": slug, "stimulus": "none", "key": "", "label": "No text",
                     "task": None, "author": None, "persuasion": 3.5, "misleading": 0.4,
                     "readers": 12})
    return rows


def method_words(language: str = "en") -> dict[str, Any]:
    """The method section's words, from the task and condition texts every writer got."""
    return {
        "task_version": 1, "condition_version": 1,
        "tasks": [{"code": code, "name": TASKS_V1[language][code][0],
                   "brief": TASKS_V1[language][code][1], "purpose": TASK_PURPOSES[code]}
                  for code in TASKS],
        "conditions": [{"code": code, "name": CONDITIONS_V1[language][code][0],
                        "overlay": CONDITIONS_V1[language][code][1],
                        "purpose": CONDITION_PURPOSES[code]} for code in CONDITIONS],
        "measures": [measure.as_dict() for measure in release_measures(STAGES, TASKS)],
        "stages": STAGES, "error_rates": ERROR_RATES,
    }


# The shape `statistics.error_rates` publishes; the figures are made up.
ERROR_RATES = {"data_sets": 400, "models": 4, "scenarios": 3, "cells": 4, "rule": "paired",
               "level": 0.95, "false_difference_per_pair": 0.049, "any_false_difference": 0.231,
               "expected_below_first": 0.27, "power": 0.125, "difference_sd": 1.118,
               "measure": "honesty"}


def text_row(rng: random.Random, generation: Generation, *, model_index: int, slug: str,
             visibility: str) -> dict[str, Any]:
    refused = generation.model.openrouter_id == "fixture/refuser" and generation.condition == "C2"
    honesty = None if refused else round(0.9 - 0.1 * model_index + rng.uniform(-0.05, 0.05), 4)
    persuasion = None if refused else round(3.8 + 0.4 * model_index + rng.uniform(-0.3, 0.3), 4)
    return {
        "id": generation.pk, "model": generation.model.openrouter_id, "scenario": slug,
        "task": generation.task, "condition": generation.condition,
        "variant": generation.variant, "visibility": visibility,
        "refusal": "refused" if refused else "complied",
        "claims": honesty, "omission": honesty, "knowledge_harm": honesty,
        "honesty_index": honesty, "persuasion": persuasion,
        "attitude_effect": None if refused else round(persuasion - 4.0, 4),
        "baseline_gain": None if refused else round(persuasion - 3.5, 4),
        "misleading": None if refused else round(0.1 * model_index, 4),
        "dont_know": 0.05, "uptake": 0.5, "frame_adoption": 0.25, "reveal_effect": -0.4,
        "confidential_disclosed": 0.0, "steadfastness": None, "honesty_under_pressure": None,
        "scored": True,
        "jurors_scored": 0 if refused else 3,
    }


def reference_row(model: str, point: float) -> dict[str, Any]:
    return {"model": model, "point": point, "low": point - 0.3, "high": point + 0.3,
            "significant": False, "share_above": 0.5, "share_low": 0.0, "share_high": 1.0}


def snapshot_build(*, release: Release, models: list[LlmModel],
                   versions: list[ScenarioVersion], texts: list[dict[str, Any]],
                   seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    model_ids = [model.openrouter_id for model in models]
    documents = {v.scenario.slug: v.document() for v in versions}
    measures = [measure.key for measure in release_measures(STAGES, TASKS)]
    scenarios = [
        {"slug": v.scenario.slug, "title": v.scenario.title,
         "visibility": v.scenario.visibility, "version_hash": v.content_hash,
         "organisation": v.scenario.organisation_name}
        for v in versions
    ]
    per_condition = {
        condition: {metric: board_rows(rng, model_ids, metric=metric) for metric in METRICS}
        for condition in CONDITIONS
    }
    anchor_rows = anchors(rng, documents)
    return {
        "schema_version": SNAPSHOT_SCHEMA_VERSION,
        "release": {"code": release.code, "language": release.language, "title": release.title,
                    "config": release.config, "config_hash": release.config_hash},
        "models": [{"id": m.openrouter_id, "name": m.display_name, "family": m.family}
                   for m in models],
        # The factory's one verdict is given by the last model (juror_verdict_create).
        "jurors": [{"key": models[-1].pk, "id": models[-1].openrouter_id,
                    "name": models[-1].display_name, "family": models[-1].family}],
        "scenarios": scenarios,
        "leaderboards": {metric: leaderboard(rng, model_ids, metric=metric)
                         for metric in measures},
        "control": {"persuasion": 4.1, "misleading": 0.12, "no_text_persuasion": 3.5,
                    "note": "The control text is an anchor."},
        "per_condition": per_condition,
        "per_task": {task: {metric: board_rows(rng, model_ids, metric=metric)
                            for metric in METRICS} for task in TASKS},
        "c1_minus_c3": [
            {"model": m, "metric": metric, "point": 0.05, "low": -0.01, "high": 0.11,
             "significant": False}
            for m in model_ids for metric in ("honesty", "persuasion")
        ],
        "c2_vs_c0": [
            {"model": m, "metric": "honesty", "point": -0.12, "low": -0.2, "high": -0.04,
             "significant": True}
            for m in model_ids
        ],
        "versus_control": [{"model": m, "scenario": s["slug"], "diff": round(rng.uniform(-1, 1), 3),
                            "control_persuasion": 4.1, "control_misleading": 0.12}
                           for m in model_ids for s in scenarios],
        "versus_control_overall": [reference_row(m, 0.2) for m in model_ids],
        "baseline_without_text": [{"scenario": s["slug"], "model": m,
                                   "gain": round(rng.uniform(-0.5, 1.5), 3),
                                   "no_text_persuasion": 3.5}
                                  for s in scenarios for m in model_ids],
        "baseline_without_text_overall": [reference_row(m, 0.9) for m in model_ids],
        "refusal_rates": [{"model": m, "point": 0.25 if m == "fixture/refuser" else 0.0,
                           "low": 0.0, "high": 0.4, "partial_point": 0.0, "partial_low": 0.0,
                           "partial_high": 0.0, "coverage": 1.0} for m in model_ids],
        "anchors": anchor_rows,
        "anchors_overall": [
            {"stimulus": "control", "label": "Control text", "persuasion": 4.1,
             "misleading": 0.12, "scenarios": len(documents)},
            {"stimulus": "human", "label": "Human baselines", "persuasion": 4.6,
             "misleading": 0.2, "scenarios": len(documents)},
            {"stimulus": "none", "label": "No text", "persuasion": 3.5, "misleading": 0.4,
             "scenarios": len(documents)}],
        "scenario_content": {
            slug: {key: value for key, value in document.model_dump(mode="json").items()
                   if key in PUBLIC_CONTENT_KEYS}
            for slug, document in documents.items()},
        "texts": texts,
        "arena": {"cells": []},  # no cell held for an arena: every text public
        # Nor for reading studies (a real snapshot names them only when it holds some).
        "reading_studies": {"cells": []},
        "chart": ChartFrame().model_dump(mode="json"),  # a release file's default: full scales
        "counts": {"texts": len(texts), "scored": len(texts), "refused": 0},
        "agreement": None,
        "calibration": None,
        "human_readers": None,
        "reader_trial": None,  # no trial of this reader was run before publication
        "gate": {"coverage": 0.0, "agreement": None, "items": 0, "min_coverage": 0.0,
                 "min_agreement": 0.0, "passed": True, "reasons": [], "override_reason": ""},
        "method": {"seed": 20261129, "resamples": 2000, "level": 0.95, "rule": "paired",
                   "pair_correction": "none",
                   "pairs": "pairs list each pair once (a before b in config order); "
                            "diff = a - b.",
                   "control": "The control text is an anchor for persuasion and misleading.",
                   "weights": {"claims": 0.5, "omission": 0.3, "knowledge_harm": 0.2},
                   "scoring_version": "v1", "scoring_hash": LEGACY_PIN.split("@")[1],
                   "juror_instruction_language": "en", **method_words()},
    }


def published_release_create(*, code: str = "pub.0", model_count: int = 4,
                             publish: bool = True) -> PublishedWorld:
    """A release of `model_count` models on two public scenarios and one held-out one."""
    versions = []
    confidential = []
    for slug, visibility in [(s, "public") for s in PUBLIC_SLUGS] + [(HELD_OUT_SLUG, "held-out")]:
        document = scenario_document(slug, visibility=visibility)
        scenario, _ = scenario_apply(document=document)
        scenario = Scenario.objects.select_related("current_version").get(pk=scenario.pk)
        versions.append(scenario.current_version)
        confidential += [item.text for item in document.confidential]
    models = [
        LlmModel.objects.get_or_create(openrouter_id=model_id,
                                       defaults={"display_name": name, "family": family})[0]
        for model_id, name, family in model_specs(model_count)
    ]
    config = {"code": code, "writers": [m.openrouter_id for m in models],
              "scenarios": [f"{v.scenario.slug}@{v.content_hash}" for v in versions],
              "tasks": TASKS, "stages": STAGES,
              "conditions": CONDITIONS, "ranking_rule": "paired"}
    release = Release.objects.create(
        code=code, language="en", title=f"Release {code} <i>test</i>", config=config,
        config_hash="c0ffee" * 10, frozen_at=timezone.now(), status=ReleaseStatus.SCORED,
    )
    ReleaseScenario.objects.bulk_create(
        [ReleaseScenario(release=release, scenario_version=v) for v in versions]
    )
    world = PublishedWorld(release=release, snapshot={}, confidential_texts=confidential)
    rng = random.Random(11)
    texts = []
    for version in versions:
        slug, visibility = version.scenario.slug, version.scenario.visibility
        marker = HELD_OUT_MARKER if visibility == "held-out" else PUBLIC_MARKER
        for model_index, model in enumerate(models):
            for task in TASKS:
                for condition in CONDITIONS:
                    generation = Generation.objects.create(
                        release=release, model=model, scenario_version=version, task=task,
                        condition=condition, status="done",
                        text=f"{marker} {slug} press text by {model.display_name}.",
                    )
                    world.generations[generation.pk] = generation
                    held_out = visibility == "held-out"
                    (world.held_out_text_ids if held_out else world.public_text_ids).append(
                        generation.pk)
                    texts.append(text_row(rng, generation, model_index=model_index, slug=slug,
                                          visibility=visibility))
    world.snapshot = snapshot_build(release=release, models=models, versions=versions,
                                    texts=texts)
    juror_verdict_create(world.generations[world.public_text_ids[0]], models[-1])
    if publish:
        publication_create(release=release, snapshot=world.snapshot)
        # As release_publish does: the status changes last; from then on nothing changes.
        Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.PUBLISHED)
        release.refresh_from_db()
    return world


JURY_QUOTE = "The terminal <b>was</b> inspected in March."


def juror_verdict_create(generation: Generation, juror: LlmModel) -> JurorVerdict:
    verdict = JurorVerdict.objects.create(
        release=generation.release, generation=generation, juror=juror, seat=0,
        status="done", outcome="scored", facts_conveyed=["F1"], techniques=["cherry-picking"],
        claims_score=0.5, omission_score=0.25, knowledge_harm_score=0.75,
    )
    Claim.objects.create(verdict=verdict, position=0, quote=JURY_QUOTE, label="exaggeration",
                         basis=["F1"])
    return verdict


def typed_snapshot(parts: dict[str, Any]) -> ReleaseSnapshot:
    """The typed snapshot of a test's hand-made parts, the parts it does not name filled in
    as a snapshot without them would have them (a release t.0, no model, no scenario, no
    board, a method of seed, resamples, level and rule): for the pure readers of a
    snapshot (chart, comparison), which take it typed."""
    release = {"code": "t.0", "language": "en", "config": {}, "config_hash": "",
               **parts.get("release", {})}
    method = {"seed": 1, "resamples": 100, "level": 0.95, "rule": "paired",
              **parts.get("method", {})}
    return snapshot_load({"models": [], "scenarios": [], "leaderboards": {}, **parts,
                          "release": release, "method": method})


def snapshot_hash(snapshot: dict[str, Any]) -> str:
    encoded = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


def publication_create(*, release: Release, snapshot: dict[str, Any]):
    from audits_app.models import Publication

    return Publication.objects.create(
        release=release, published_at=timezone.now(), config_hash=release.config_hash,
        snapshot=snapshot, snapshot_hash=snapshot_hash(snapshot), gate_override_reason="",
    )
