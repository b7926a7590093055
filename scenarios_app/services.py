"""Writes of scenarios_app: import, export, applying a document, recording versions."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Max

from baitbench_site.files import write_whole
from baitbench_site.immutability import ImmutableError
from scenarios_app.files import LoadReport, dump_scenario, load_scenario_files
from scenarios_app.models import (
    AttitudeQuestion,
    Condition,
    ConfidentialFact,
    Fact,
    HumanBaseline,
    JournalistQuestion,
    KnowledgeQuestion,
    Scenario,
    ScenarioVersion,
    Task,
    Uncertainty,
)
from scenarios_app.schemas import ScenarioFile

PART_MODELS = (
    Fact, Uncertainty, ConfidentialFact, JournalistQuestion, AttitudeQuestion,
    KnowledgeQuestion, HumanBaseline,
)


@dataclasses.dataclass
class ImportResult:
    problems: list[str]
    created: list[str] = dataclasses.field(default_factory=list)
    updated: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)
    # keep_edited: scenarios whose current version differs from the file, left as they are.
    kept: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """The file document of a scenario's working copy (rows -> plain data)."""
    return {
        "format": "baitbench.scenario/1",
        "slug": scenario.slug,
        "language": scenario.language,
        "visibility": scenario.visibility,
        "title": scenario.title,
        "canary": scenario.canary,
        "organisation": {
            "name": scenario.organisation_name,
            "description": scenario.organisation_description,
        },
        "situation": scenario.situation,
        "facts": [
            {"id": f"F{f.position}", "label": f.label, "text": f.text}
            for f in scenario.facts.all()
        ],
        "uncertainties": [
            {"id": u.code, "strength": u.strength, "text": u.text, "note": u.note}
            for u in scenario.uncertainties.all()
        ],
        "confidential": [{"id": c.code, "text": c.text} for c in scenario.confidential.all()],
        "journalist_questions": [q.text for q in scenario.journalist_questions.all()],
        "attitude_questions": [
            {"id": a.code, "text": a.text, "low": a.low, "high": a.high}
            for a in scenario.attitude_questions.all()
        ],
        "knowledge_questions": [
            {"id": k.code, "text": k.text, "options": list(k.options), "correct": k.correct,
             "facts": list(k.facts)}
            for k in scenario.knowledge_questions.all()
        ],
        "control_text": scenario.control_text,
        "human_baselines": [
            {"id": h.code, "task": h.task, "author": h.author, "text": h.text}
            for h in scenario.human_baselines.all()
        ],
    }


def scenario_pinning_releases(scenario: Scenario) -> list[str]:
    """Codes of the releases that pin a version of this scenario."""
    if scenario.pk is None:
        return []
    # Reached through the reverse relation, so this app does not import runs_app, which
    # depends on it.
    return sorted(set(ScenarioVersion.objects.filter(
        scenario_id=scenario.pk, releasescenario__isnull=False,
    ).values_list("releasescenario__release__code", flat=True)))


def scenario_slug_change_refusal(*, scenario: Scenario, slug: str) -> str:
    """Why this scenario may not be renamed to `slug`, or "" when it may.

    Releases pin a scenario as slug@hash (DESIGN section 3) and their figures, CSVs, archives
    and verification find its rows by that slug, so a pinned scenario keeps its slug for good.
    """
    # The row may already carry the new slug (the admin saves it before the version): the
    # slug that counts is the one its pinned versions were written under.
    pinned_slugs = set(ScenarioVersion.objects.filter(
        scenario_id=scenario.pk, releasescenario__isnull=False,
    ).values_list("content__slug", flat=True)) if scenario.pk else set()
    if not pinned_slugs - {slug}:
        return ""
    return (f"scenario {sorted(pinned_slugs)[0]!r} keeps its slug: releases "
            f"{', '.join(scenario_pinning_releases(scenario))} pin it by that slug, and their "
            f"figures, files and archives find it by that name, so it cannot become {slug!r}. "
            "Add a new scenario under the new slug instead.")


def scenario_record_version(*, scenario: Scenario, document: ScenarioFile, user=None) -> bool:
    """Keep the document as a version unless that exact content is already kept.

    Returns True when a new version was written. Re-saving an earlier content makes that
    earlier version current again rather than storing a duplicate. A document that renames a
    scenario some release pins is refused (`scenario_slug_change_refusal`).
    """
    refusal = scenario_slug_change_refusal(scenario=scenario, slug=document.slug)
    if refusal:
        raise ImmutableError(refusal)
    digest = document.content_hash()
    version = ScenarioVersion.objects.filter(scenario=scenario, content_hash=digest).first()
    created = version is None
    if created:
        last = scenario.versions.order_by("-number").values_list("number", flat=True).first()
        version = ScenarioVersion.objects.create(
            scenario=scenario, number=(last or 0) + 1, content_hash=digest,
            content=document.canonical(), created_by=user,
        )
    if scenario.current_version_id != version.pk:
        Scenario.objects.filter(pk=scenario.pk).update(current_version=version)
        scenario.current_version = version
    return created


@transaction.atomic
def scenario_apply(*, document: ScenarioFile, user=None) -> tuple[Scenario, str]:
    """Make the rows of a scenario equal to a validated document; returns (scenario, outcome)."""
    scenario = Scenario.objects.filter(slug=document.slug).first()
    if scenario is not None and scenario.current_version_id:
        if scenario.current_version.content_hash == document.content_hash():
            return scenario, "unchanged"
    outcome = "created" if scenario is None else "updated"
    scenario = scenario or Scenario(slug=document.slug)
    _set_scalar_fields(scenario, document)
    scenario.save()
    for model in PART_MODELS:
        model.objects.filter(scenario=scenario).delete()
    _create_parts(scenario, document)
    scenario_record_version(scenario=scenario, document=document, user=user)
    return scenario, outcome


def _set_scalar_fields(scenario: Scenario, document: ScenarioFile) -> None:
    scenario.language = document.language
    scenario.visibility = document.visibility
    scenario.title = document.title
    scenario.canary = document.canary
    scenario.organisation_name = document.organisation.name
    scenario.organisation_description = document.organisation.description
    scenario.situation = document.situation
    scenario.control_text = document.control_text


def _create_parts(scenario: Scenario, d: ScenarioFile) -> None:
    Fact.objects.bulk_create(
        Fact(scenario=scenario, position=i, label=f.label, text=f.text)
        for i, f in enumerate(d.facts, 1)
    )
    Uncertainty.objects.bulk_create(
        Uncertainty(scenario=scenario, position=i, code=u.id, strength=u.strength, text=u.text,
                    note=u.note)
        for i, u in enumerate(d.uncertainties, 1)
    )
    ConfidentialFact.objects.bulk_create(
        ConfidentialFact(scenario=scenario, position=i, code=c.id, text=c.text)
        for i, c in enumerate(d.confidential, 1)
    )
    JournalistQuestion.objects.bulk_create(
        JournalistQuestion(scenario=scenario, position=i, text=text)
        for i, text in enumerate(d.journalist_questions, 1)
    )
    AttitudeQuestion.objects.bulk_create(
        AttitudeQuestion(scenario=scenario, position=i, code=a.id, text=a.text, low=a.low,
                         high=a.high)
        for i, a in enumerate(d.attitude_questions, 1)
    )
    KnowledgeQuestion.objects.bulk_create(
        KnowledgeQuestion(scenario=scenario, position=i, code=k.id, text=k.text,
                          options=list(k.options), correct=k.correct, facts=list(k.facts))
        for i, k in enumerate(d.knowledge_questions, 1)
    )
    HumanBaseline.objects.bulk_create(
        HumanBaseline(scenario=scenario, position=i, code=h.id, task=h.task, author=h.author,
                      text=h.text)
        for i, h in enumerate(d.human_baselines, 1)
    )


CANARY_CONFIRMATION = (
    "--confirm-canary-change; in the admin upload, tick 'Confirm canary changes'"
)


def database_conflicts(report: LoadReport, *, confirm_canary_change: bool = False,
                       kept: set[str] = frozenset()) -> list[str]:
    """What the files cannot do to the scenarios already in the database.

    A canary names one scenario: one already used by another slug is a conflict. A scenario's
    canary is also the key by which contamination is traced (DESIGN section 6): a file that
    would replace the canary of an existing slug is refused unless the curator confirms it.
    """
    by_canary = {item.scenario.canary: item for item in report.files}
    taken = Scenario.objects.filter(canary__in=by_canary).values_list("canary", "slug")
    problems = [
        f"{by_canary[canary].path}: canary: {canary!r} is already used by scenario {slug!r}"
        for canary, slug in taken
        if slug != by_canary[canary].scenario.slug
    ]
    if confirm_canary_change:
        return problems
    by_slug = {item.scenario.slug: item for item in report.files}
    current = Scenario.objects.filter(slug__in=by_slug).values_list("slug", "canary")
    problems += [
        f"{by_slug[slug].path}: canary: would change the canary of scenario {slug!r} from "
        f"{old!r} to {by_slug[slug].scenario.canary!r}; the canary traces contamination, so it "
        f"changes only when confirmed ({CANARY_CONFIRMATION})"
        for slug, old in sorted(current)
        if old != by_slug[slug].scenario.canary and slug not in kept
    ]
    return problems


def scenarios_validate(*, paths: list[str]) -> list[str]:
    """Check files against the format's rules only: no database is needed or touched.

    Whether a slug or canary clashes with the database is the importer's check
    (`scenarios_import`, also with `dry_run`), which needs a database to ask."""
    return load_scenario_files(paths).problems


def scenarios_import(
    *, paths: list[str], user=None, dry_run: bool = False, confirm_canary_change: bool = False,
    keep_edited: bool = False,
) -> ImportResult:
    """Import files or folders, all or nothing (DESIGN section 8); `dry_run` checks
    everything, the database included, and writes nothing.

    `keep_edited`: a scenario whose current version is not the file's content is left as it
    is (listed in `kept`) rather than updated, so shipped files never replace people's work
    (and a kept scenario's canary is not compared with the file's).
    """
    report = load_scenario_files(paths)
    edited = _edited_slugs(report) if keep_edited and report.ok else set()
    problems = report.problems + (
        database_conflicts(report, confirm_canary_change=confirm_canary_change, kept=edited)
        if report.ok else []
    )
    result = ImportResult(problems=problems)
    if problems or dry_run:
        return result
    with transaction.atomic():
        for item in report.files:
            if item.scenario.slug in edited:
                result.kept.append(item.scenario.slug)
                continue
            scenario, outcome = scenario_apply(document=item.scenario, user=user)
            getattr(result, outcome).append(scenario.slug)
    return result


def _edited_slugs(report: LoadReport) -> set[str]:
    """Slugs whose current version exists and differs from the file's content."""
    digests = {item.scenario.slug: item.scenario.content_hash() for item in report.files}
    current = Scenario.objects.filter(slug__in=digests, current_version__isnull=False).values_list(
        "slug", "current_version__content_hash")
    return {slug for slug, digest in current if digest != digests[slug]}


def scenarios_export(*, out_dir: Path, slugs: list[str] | None = None) -> list[Path]:
    """Write each scenario's current version to OUT/<slug>.yaml. Every file is written whole
    or not at all (`write_whole`): an OSError part way through (a full disk) leaves the files
    written before it whole, and none half-written."""
    scenarios = Scenario.objects.select_related("current_version").order_by("slug")
    if slugs:
        scenarios = scenarios.filter(slug__in=slugs)
    documents = {scenario.slug: dump_scenario(scenario.current_version.document())
                 for scenario in scenarios if scenario.current_version is not None}
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for slug, document in documents.items():
        path = out_dir / f"{slug}.yaml"
        write_whole(path, document.encode("utf-8"))
        written.append(path)
    return written


def prompt_text_pinning_releases(text: Task | Condition) -> list[str]:
    """Codes of the frozen releases that run (or ran) with this version of a task brief or
    condition overlay: its language, the version their configuration names (1 unless set) and
    its code among theirs. The database refuses to change or delete such a version
    (`baitbench_site.immutability`); this says so before it is tried."""
    from django.apps import apps  # runs_app depends on this app, not the other way round

    setting, codes = (("task_version", "tasks") if isinstance(text, Task)
                      else ("condition_version", "conditions"))
    releases = apps.get_model("runs_app", "Release").objects.filter(
        frozen_at__isnull=False, language=text.language).values_list("code", "config")
    return sorted(code for code, config in releases
                  if int((config or {}).get(setting) or 1) == text.version
                  and text.code in ((config or {}).get(codes) or []))


def prompt_text_save(*, text: Task | Condition) -> str:
    """Save an edited task brief or condition overlay. A version a release ran with is not
    changed (the database refuses it: baitbench_site.immutability): the edit is saved as the
    next version instead, which a release takes by naming it (`task_version`,
    `condition_version`). Returns what happened, for the curator."""
    try:
        with transaction.atomic():
            text.save()
        return ""
    except ImmutableError:
        pinned = text.version
    model = type(text)
    newest = model.objects.filter(code=text.code, language=text.language).aggregate(
        newest=Max("version"))["newest"] or 0
    text.pk, text.version = None, newest + 1
    text.save()
    setting = "task_version" if model is Task else "condition_version"
    return (f"{text.code} {text.language} v{pinned} is what a release ran with and stays as "
            f"it was: your edit is version {text.version}. A release uses it once its "
            f"configuration says {setting}: {text.version}.")
