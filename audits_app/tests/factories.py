"""A published release with a hand-made, realistic snapshot (issue 5).

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

import yaml
from django.conf import settings
from django.utils import timezone

from runs_app.models import (
    Claim,
    Generation,
    JurorVerdict,
    LlmModel,
    Release,
    ReleaseScenario,
    ReleaseStatus,
)
from runs_app.scoring_versions import LEGACY_PIN
from scenarios_app.models import Scenario, ScenarioVersion
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
    raw = yaml.safe_load(Path(settings.SCENARIOS_DIR, f"{slug}.yaml").read_text())
    raw["visibility"] = visibility
    return ScenarioFile.model_validate(raw)


def model_specs(count: int) -> list[tuple[str, str, str]]:
    extra = [(f"fixture/extra-{i}", f"Extra model {i}", f"extra-{i}") for i in range(count)]
    return (BASE_MODELS + extra)[:count]


def _interval(rng: random.Random, point: float, width: float) -> tuple[float, float]:
    half = width * (0.5 + rng.random())
    return round(point - half, 4), round(point + half, 4)


def leaderboard(rng: random.Random, model_ids: list[str], *, metric: str) -> dict[str, Any]:
    """Rows and pairs for one metric; honesty falls and persuasion rises down the model list."""
    count = len(model_ids)
    rows = []
    for index, model_id in enumerate(model_ids):
        if metric == "honesty":
            point = 0.92 - 0.5 * index / max(count - 1, 1)
        elif metric == "persuasion":
            point = 3.6 + 1.8 * index / max(count - 1, 1)
        else:
            point = 0.08 + 0.5 * index / max(count - 1, 1)
        width = 0.05 if metric != "persuasion" else 0.3
        abs_low, abs_high = _interval(rng, point, width)
        cmp_low, cmp_high = _interval(rng, point, width * 0.7)
        rows.append({"model": model_id, "rank": 0, "point": round(point, 4),
                     "abs_low": abs_low, "abs_high": abs_high,
                     "cmp_low": cmp_low, "cmp_high": cmp_high, "n_texts": 16})
    higher = metric != "misleading"
    ordered = sorted(rows, key=lambda row: -row["point"] if higher else row["point"])
    for place, row in enumerate(ordered):
        row["rank"] = 1 + place if place % 3 != 2 else ordered[place - 1]["rank"]
    pairs = []
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            diff = round(a["point"] - b["point"], 4)
            low, high = diff - 0.1, diff + 0.1
            pairs.append({"a": a["model"], "b": b["model"], "diff": diff, "low": round(low, 4),
                          "high": round(high, 4), "significant": low > 0 or high < 0})
    return {"higher_is_better": higher, "rule": "paired", "rows": ordered, "pairs": pairs}


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
        "confidential_disclosed": 0.0, "steadfastness": None,
    }


def snapshot_build(*, release: Release, models: list[LlmModel],
                   versions: list[ScenarioVersion], texts: list[dict[str, Any]],
                   seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    model_ids = [model.openrouter_id for model in models]
    scenarios = [
        {"slug": v.scenario.slug, "title": v.scenario.title,
         "visibility": v.scenario.visibility, "version_hash": v.content_hash,
         "organisation": v.scenario.organisation_name}
        for v in versions
    ]
    per_condition = {
        condition: {metric: leaderboard(rng, model_ids, metric=metric)["rows"]
                    for metric in METRICS}
        for condition in CONDITIONS
    }
    return {
        "release": {"code": release.code, "language": release.language, "title": release.title,
                    "config": release.config, "config_hash": release.config_hash},
        "models": [{"id": m.openrouter_id, "name": m.display_name, "family": m.family}
                   for m in models],
        # The factory's one verdict is given by the last model (juror_verdict_create).
        "jurors": [{"key": models[-1].pk, "id": models[-1].openrouter_id,
                    "name": models[-1].display_name, "family": models[-1].family}],
        "scenarios": scenarios,
        "leaderboards": {metric: leaderboard(rng, model_ids, metric=metric)
                         for metric in METRICS},
        "control": {"persuasion": 4.1, "misleading": 0.12},
        "per_condition": per_condition,
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
        "versus_control": [{"model": m, "scenario": s["slug"], "diff": round(rng.uniform(-1, 1), 3)}
                           for m in model_ids for s in scenarios],
        "versus_control_overall": [{"model": m, "point": 0.2, "low": -0.1, "high": 0.5,
                                    "share_above": 0.5} for m in model_ids],
        "baseline_without_text": [{"scenario": s["slug"], "model": m,
                                   "gain": round(rng.uniform(-0.5, 1.5), 3)}
                                  for s in scenarios for m in model_ids],
        "refusal_rates": [{"model": m, "point": 0.25 if m == "fixture/refuser" else 0.0,
                           "low": 0.0, "high": 0.4} for m in model_ids],
        "texts": texts,
        "counts": {"texts": len(texts), "scored": len(texts), "refused": 0},
        "agreement": None,
        "method": {"seed": 20261129, "resamples": 2000, "level": 0.95, "rule": "paired",
                   "weights": {"claims": 0.5, "omission": 0.3, "knowledge_harm": 0.2},
                   "scoring_version": "v1", "scoring_hash": LEGACY_PIN.split("@")[1],
                   "juror_instruction_language": "en"},
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
              "tasks": TASKS,
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


def snapshot_hash(snapshot: dict[str, Any]) -> str:
    encoded = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


def publication_create(*, release: Release, snapshot: dict[str, Any]):
    from audits_app.models import Publication

    return Publication.objects.create(
        release=release, published_at=timezone.now(), config_hash=release.config_hash,
        snapshot=snapshot, snapshot_hash=snapshot_hash(snapshot), gate_override_reason="",
    )
