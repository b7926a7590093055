"""Writes of the reader trial (DESIGN section 6): set it up, add candidates, read.

`reader_trial_prepare` finds or creates the trial of a set-up (language, the language's
public scenarios as they are now, panel, scoring version) and adds the candidates;
`reader_trial_read` drains its readings. What the readings show is computed in
`audits_app.calibration.reader_trial`.
"""

from __future__ import annotations

import hashlib
import json
import re

from django.db import transaction

from runs_app.models import ReaderTrial, ScoringVersion
from runs_app.providers.pool import ProviderPool
from runs_app.readers import load_panel, panel_path
from runs_app.scoring_versions import CURRENT, ScoringFileError, load_scoring_file
from runs_app.stages.base import DrainReport, drain
from runs_app.stages.trial import ReaderTrialStage
from scenarios_app.models import Language, Scenario, ScenarioStatus, ScenarioVersion, Visibility

MODEL_ID = re.compile(r"^[\w.\-:]+/[\w.\-:@]+$")  # as a release file's model ids


class TrialError(Exception):
    """A trial that cannot be set up; `lines` names every problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def trial_scenarios(language: str, slugs: list[str] | None = None) -> list[ScenarioVersion]:
    """The current versions of the language's active public scenarios (or of those named).

    Held-out scenarios stay out: a trial sends its texts to models that may never be used,
    and a held-out scenario's material goes to no model that does not need it."""
    scenarios = Scenario.objects.filter(language=language, visibility=Visibility.PUBLIC,
                                        status=ScenarioStatus.ACTIVE)
    if slugs:
        found = {s.slug: s for s in Scenario.objects.filter(slug__in=slugs)}
        problems = [f"scenario {slug!r}: not imported" for slug in slugs if slug not in found]
        problems += [f"scenario {slug!r}: is {found[slug].language}, the trial is {language}"
                     for slug in slugs if slug in found and found[slug].language != language]
        if problems:
            raise TrialError(problems)
        scenarios = Scenario.objects.filter(slug__in=slugs)
    versions = [s.current_version for s in scenarios.select_related("current_version")
                .order_by("slug") if s.current_version is not None]
    if not versions:
        raise TrialError([f"language {language}: no public scenario is imported to read"])
    return versions


def _problems(language: str, candidates: list[str], panel: str) -> list[str]:
    problems = []
    if language not in Language.values:
        problems.append(f"--language: {language!r} is not one of {', '.join(Language.values)}")
    if not candidates:
        problems.append("candidates: name at least one model id (e.g. meta-llama/llama-4-"
                        "maverick)")
    problems += [f"candidate {model!r}: not a model id of the form provider/name"
                 for model in candidates if not MODEL_ID.fullmatch(model)]
    if language in Language.values and not panel_path(panel, language).is_file():
        problems.append(f"--panel: no panel file {panel_path(panel, language).name}")
    return problems


def _scoring_pin(name: str) -> str:
    try:
        texts = load_scoring_file(name)
    except ScoringFileError as error:
        raise TrialError([f"--scoring-version: {line}" for line in error.lines]) from None
    digest = texts.content_hash()
    ScoringVersion.objects.get_or_create(content_hash=digest,
                                         defaults={"name": name, "content": texts.canonical()})
    return f"{name}@{digest}"


def setup_hash(language: str, panel: str, scoring_pin: str,
               versions: list[ScenarioVersion]) -> str:
    key = {"language": language, "panel": panel, "scoring": scoring_pin,
           "scenarios": sorted(v.content_hash for v in versions)}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def reader_trial_prepare(*, language: str, candidates: list[str], panel: str = "v1",
                         scoring_version: str = CURRENT,
                         scenarios: list[str] | None = None) -> ReaderTrial:
    """The trial of this set-up, created once, with these candidates added to it."""
    problems = _problems(language, candidates, panel)
    if problems:
        raise TrialError(problems)
    load_panel(panel, language)
    versions = trial_scenarios(language, scenarios)
    pin = _scoring_pin(scoring_version)
    digest = setup_hash(language, panel, pin, versions)
    with transaction.atomic():
        trial, created = ReaderTrial.objects.get_or_create(
            setup_hash=digest, defaults={"language": language, "panel": panel,
                                         "scoring_version": pin})
        if created:
            trial.scenario_versions.set(versions)
        trial = ReaderTrial.objects.select_for_update().get(pk=trial.pk)
        new = [model for model in dict.fromkeys(candidates) if model not in trial.candidates]
        if new:
            trial.candidates = [*trial.candidates, *new]
            trial.save(update_fields=["candidates"])
    return trial


def reader_trial_read(*, trial: ReaderTrial, providers: ProviderPool | None = None,
                      concurrency: int | None = None,
                      time_budget: float | None = None) -> DrainReport:
    """Plan and drain the trial's readings: finished readings are never asked again."""
    return drain(ReaderTrialStage(), trial, providers=providers, concurrency=concurrency,
                 time_budget=time_budget)
