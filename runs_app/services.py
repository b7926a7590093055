"""Writes of runs_app: loading and freezing releases, retrying failed work."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from runs_app.drains import drains_enqueue, ensure_schedule
from runs_app.honesty import text_scores_update_honesty
from runs_app.models import (
    ImmutableError,
    LlmModel,
    Release,
    ReleaseScenario,
    ReleaseStatus,
    RunControl,
    ScoringVersion,
    ScoringVersionMissing,
    StageRun,
    StageRunState,
    WorkStatus,
)
from runs_app.schemas import STAGE_NEEDS, ReleaseConfig, release_document_problems
from runs_app.scoring_versions import (
    CURRENT,
    ScoringFile,
    ScoringFileError,
    load_scoring_file,
)
from runs_app.stages import get_stage
from scenarios_app.files import parse_yaml
from scenarios_app.models import Scenario, ScenarioVersion


class ReleaseConfigError(Exception):
    """A release file or configuration that cannot be used; `lines` name each problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def config_hash(config: dict) -> str:
    encoded = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


# The shipped release files are 3-4 KB; sixteen times that is room for a long list of models
# and scenarios, and bounds what parsing one costs.
MAX_RELEASE_BYTES = 64 * 1024


def release_yaml_parse(text: str, source: str) -> tuple[Any, list[str]]:
    """A release file's YAML, or one problem line naming `source`: too large (before it is
    parsed), or malformed at a line and column, or using an alias, a repeated key or deep
    nesting (`scenarios_app.files.parse_yaml`, the scenario files' limits)."""
    size = len(text.encode("utf-8"))
    if size > MAX_RELEASE_BYTES:
        return None, [f"{source}: too large ({size:,} bytes; the limit is "
                      f"{MAX_RELEASE_BYTES:,}: a release file is a few KB)"]
    return parse_yaml(text, source, kind="release file")


def release_config_from_file(path: Path) -> ReleaseConfig:
    source = str(path)
    if not path.is_file():
        raise ReleaseConfigError([f"{source}: no such release file"])
    data, lines = release_yaml_parse(path.read_text(encoding="utf-8"), source)
    if lines:
        raise ReleaseConfigError(lines)
    config, problems = release_document_problems(data)
    if problems:
        raise ReleaseConfigError([problem.line(source) for problem in problems])
    return config


def _pin_scenarios(config: ReleaseConfig, source: str) -> list[ScenarioVersion]:
    """`slug` pins the current version; `slug@hash` pins that exact version."""
    versions, problems = [], []
    for entry in config.scenarios:
        slug, _, digest = entry.partition("@")
        scenario = Scenario.objects.filter(slug=slug).select_related("current_version").first()
        if scenario is None or scenario.current_version is None:
            problems.append(f"{source}: scenarios: {slug!r} is not imported")
            continue
        version = (scenario.versions.filter(content_hash=digest).first() if digest
                   else scenario.current_version)
        if version is None:
            problems.append(f"{source}: scenarios: {slug!r} has no version {digest[:12]}")
        elif scenario.language != config.language:
            problems.append(f"{source}: scenarios: {slug!r} is in {scenario.language!r}, "
                            f"the release in {config.language!r}")
        else:
            versions.append(version)
    if problems:
        raise ReleaseConfigError(problems)
    return versions


def _scoring_texts(config: ReleaseConfig, source: str) -> tuple[str, ScoringFile]:
    """(`name@hash`, texts): a bare name pins the file's content as it is now; `name@hash`
    a version already stored (DESIGN section 1: scoring is pinned with the release)."""
    name, _, digest = (config.scoring_version or CURRENT).partition("@")
    try:
        texts = (ScoringVersion.texts_for_pin(f"{name}@{digest}") if digest
                 else load_scoring_file(name))
    except ScoringFileError as error:
        raise ReleaseConfigError([f"{source}: scoring_version: {line}"
                                  for line in error.lines]) from None
    except ScoringVersionMissing as error:
        raise ReleaseConfigError([f"{source}: scoring_version: {error}"]) from None
    cap = config.knowledge_harm_cap
    if cap is not None and cap != texts.jury.knowledge_harm_cap:
        raise ReleaseConfigError([
            f"{source}: knowledge_harm_cap: {cap} differs from the cap of scoring version "
            f"{name} ({texts.jury.knowledge_harm_cap}); the cap belongs to the scoring "
            f"version: leave it out, or name a scoring_version with that cap"])
    if "crossexam" in config.stages and not texts.labels_answers:
        raise ReleaseConfigError([
            f"{source}: scoring_version: {name} cannot score the cross-examination: its judge "
            f"rates a whole interview, while the crossexam stage labels every answer (v2 and "
            f"later); name scoring_version v2, or leave crossexam out of the stages"])
    return f"{name}@{digest or texts.content_hash()}", texts


def _pin_scoring(config: ReleaseConfig, source: str) -> str:
    """Store the scoring version's content (once per hash) and return its pin."""
    pin, texts = _scoring_texts(config, source)
    name, digest = pin.split("@")
    ScoringVersion.objects.get_or_create(
        content_hash=digest, defaults={"name": name, "content": texts.canonical()})
    return pin


def _stored_config(config: ReleaseConfig, versions: list[ScenarioVersion],
                   scoring_pin: str) -> dict:
    """The configuration as a release keeps it: every scenario and the scoring version
    pinned by hash; the cap is left to the scoring version, and cells held for reading
    studies are named only when there are any (a file without them hashes as it did before
    they existed)."""
    pinned = [f"{v.scenario.slug}@{v.content_hash}" for v in versions]
    stored = config.model_copy(update={"scenarios": pinned, "scoring_version": scoring_pin,
                                       "knowledge_harm_cap": None})
    left_out = {"knowledge_harm_cap"}
    if config.reading_studies.held_share == 0:
        left_out.add("reading_studies")
    return stored.model_dump(mode="json", exclude=left_out)


def release_pin_problems(config: ReleaseConfig, source: str = "configuration") -> None:
    """Raise ReleaseConfigError naming every scenario and the scoring version that the
    configuration cannot pin, all at once."""
    lines = []
    for pin in (_pin_scenarios, _scoring_texts):
        try:
            pin(config, source)
        except ReleaseConfigError as error:
            lines += error.lines
    if lines:
        raise ReleaseConfigError(lines)


@transaction.atomic
def release_create(*, config: ReleaseConfig, source: str = "release", user=None) -> Release:
    """A draft release with its scenario versions pinned and its models registered."""
    versions = _pin_scenarios(config, source)
    scoring_pin = _pin_scoring(config, source)
    for spec in config.models:
        model, _ = LlmModel.objects.get_or_create(
            openrouter_id=spec.id, defaults={"can_write": False}
        )
        # The registry's pools are the union over releases: a release in which a model has
        # no role leaves the roles other releases gave it.
        model.family, model.display_name = spec.family, spec.name
        model.can_write |= spec.id in config.writers
        model.can_judge |= spec.id in config.jurors
        model.can_read |= spec.id in (config.reader, config.journalist)
        model.save()
    stored = _stored_config(config, versions, scoring_pin)
    release = Release.objects.create(
        code=config.code, language=config.language, title=config.title, config=stored,
        config_hash=config_hash(stored), created_by=user,
    )
    ReleaseScenario.objects.bulk_create(
        ReleaseScenario(release=release, scenario_version=version) for version in versions
    )
    return release


def release_get_or_load(*, code: str, releases_dir: Path | None = None) -> Release:
    """The release, loaded from releases/CODE.yaml first if it is not in the database."""
    release = Release.objects.filter(code=code).first()
    if release is not None:
        return release
    path = (releases_dir or Path(settings.RELEASES_DIR)) / f"{code}.yaml"
    config = release_config_from_file(path)
    if config.code != code:
        raise ReleaseConfigError([f"{path}: code: is {config.code!r}, the file name says {code!r}"])
    return release_create(config=config, source=str(path))


def release_freeze(*, release: Release) -> Release:
    """Fix the configuration when the first run starts (DESIGN section 1)."""
    if release.is_published:
        raise ImmutableError(f"release {release.code} is published: a correction is a new release")
    if release.frozen_at is None:
        Release.objects.filter(pk=release.pk, frozen_at__isnull=True).update(
            frozen_at=timezone.now(), status=ReleaseStatus.RUNNING
        )
        release.refresh_from_db()
    return release


def release_update_config(*, release: Release, config: ReleaseConfig) -> Release:
    """Change a draft's configuration (re-pinning its scenarios); refused once frozen."""
    if release.is_frozen:
        raise ImmutableError(f"release {release.code} is frozen: its configuration is fixed")
    with transaction.atomic():
        versions = _pin_scenarios(config, release.code)
        stored = _stored_config(config, versions, _pin_scoring(config, release.code))
        release.config, release.config_hash = stored, config_hash(stored)
        release.language, release.title = config.language, config.title
        release.save()
        ReleaseScenario.objects.filter(release=release).delete()
        ReleaseScenario.objects.bulk_create(
            ReleaseScenario(release=release, scenario_version=version) for version in versions
        )
    return release


# ---------------------------------------------------------------------------------------------
# Running a release: the scope an operator asked for, pauses, the budget cap
# ---------------------------------------------------------------------------------------------


class RunError(Exception):
    """An operator's request that cannot be carried out; the message says why."""


def _stage_set(release: Release, stages: list[str] | None) -> list[str]:
    """The stages asked for, checked against the release's stage set (chain order kept)."""
    configured = release.parsed_config().stages
    if stages is None:
        return list(configured)
    unknown = [name for name in stages if name not in configured]
    if unknown:
        raise RunError(f"release {release.code} does not run {', '.join(unknown)}; its "
                       f"stages are {', '.join(configured)}")
    return [name for name in configured if name in stages]


def run_start(*, release: Release, stages: list[str] | None = None, user=None,
              enqueue: bool = True, plan: bool = False) -> list[str]:
    """Start (or restart) stages of a release: the whole stage set when `stages` is None.

    The stages join the release's active scope (`StageRun`); workers claim and plan only
    within it, so asking for one stage never pays for the next. Freezes the configuration.
    With `plan`, the rows the stages can have now are planned here, in the same transaction
    (`manage.py run_release`: the drains it queues find their rows, instead of every one of
    them planning the same rows at once as it starts). With `enqueue`, drains are queued
    once the transaction commits. Returns the stages.
    """

    release = release_freeze(release=release)
    names = _stage_set(release, stages)
    with transaction.atomic():
        _reopen(release)
        RunControl.objects.get_or_create(release=release)
        for name in names:
            StageRun.objects.update_or_create(
                release=release, stage=name,
                defaults={"state": StageRunState.ACTIVE, "updated_by": user})
        for name in names if plan else ():
            get_stage(name).plan(release)
        if enqueue:
            _enqueue_after_commit(release)
    return names


def stages_waiting(release: Release, stages: list[str]) -> list[str]:
    """For each started stage that reads from a stage of the set that has neither run nor
    been started: a sentence saying it waits for it (it will have nothing to do until then)."""

    in_set = set(release.parsed_config().stages)
    active = set(StageRun.objects.filter(release=release, state=StageRunState.ACTIVE)
                 .values_list("stage", flat=True))
    idle = {need for name in stages for need in STAGE_NEEDS[name]
            if need in in_set and need not in active
            and not get_stage(need).rows(release).filter(status=WorkStatus.DONE).exists()}
    return [f"{name} reads what {need} writes, and {need} has not run: {name} has nothing to "
            f"do until {need} is started too (or start the whole chain)"
            for name in stages for need in STAGE_NEEDS[name] if need in idle]


def run_pause(*, release: Release, stages: list[str] | None = None, user=None) -> int:
    """Stop claiming new work for these stages (all active ones when None); calls already
    made finish and are written. Returns how many stages were paused."""
    _refuse_if_published(release)
    rows = StageRun.objects.filter(release=release, state=StageRunState.ACTIVE)
    if stages is not None:
        rows = rows.filter(stage__in=_stage_set(release, stages))
    return rows.update(state=StageRunState.PAUSED, updated_by=user, updated_at=timezone.now())


def run_resume(*, release: Release, stages: list[str] | None = None, user=None) -> int:
    """Claim again for paused stages (all paused ones when None), and queue drains."""
    _refuse_if_published(release)
    rows = StageRun.objects.filter(release=release, state=StageRunState.PAUSED)
    if stages is not None:
        rows = rows.filter(stage__in=_stage_set(release, stages))
    with transaction.atomic():
        resumed = rows.update(state=StageRunState.ACTIVE, updated_by=user,
                              updated_at=timezone.now())
        if resumed:
            _reopen(release)
            _enqueue_after_commit(release)
    return resumed


def run_cancel(*, release: Release, stages: list[str] | None = None, user=None) -> int:
    """Take stages out of the scope (all when None): nothing more is claimed or planned for
    them until an operator starts them again. Rows already written stay; pending rows wait."""
    _refuse_if_published(release)
    rows = StageRun.objects.filter(release=release).exclude(state=StageRunState.CANCELLED)
    if stages is not None:
        rows = rows.filter(stage__in=_stage_set(release, stages))
    return rows.update(state=StageRunState.CANCELLED, updated_by=user,
                       updated_at=timezone.now())


def run_set_budget(*, release: Release, budget_usd, user=None) -> RunControl:
    """Set (or, with None, remove) the budget cap. Raising it above the spend resumes the
    drains that stopped at the cap."""
    _refuse_if_published(release)
    with transaction.atomic():
        control, _ = RunControl.objects.select_for_update().get_or_create(release=release)
        control.budget_usd, control.updated_by = budget_usd, user
        control.save(update_fields=["budget_usd", "updated_by", "updated_at"])
        if not control.over_budget:
            _enqueue_after_commit(release)
    return control


def release_retry_failed(*, release: Release, stage_name: str, ids: list[int] | None = None,
                         user=None) -> int:
    """An operator's retry of a stage's failed and unscored rows (all of them, or those of
    `ids`), from the run page, the admin or a command alike: they become pending with a fresh
    attempt budget (their raw replies and cost so far are kept), a finished release is
    running again (it cannot be published with rows pending), and when the stage is running,
    workers are queued for them. Returns how many rows were failed or unscored."""
    _refuse_if_published(release)
    _stage_set(release, [stage_name])
    stage = get_stage(stage_name)
    with transaction.atomic():
        rows = stage.rows(release).filter(
            Q(status=WorkStatus.FAILED) | stage.state_filters()["unscored"])
        if ids is not None:
            rows = rows.filter(pk__in=ids)
        reset = {"outcome": ""} if _has_field(stage.work_model, "outcome") else {}
        ids = list(rows.values_list("pk", flat=True))
        count = stage.work_model.objects.filter(pk__in=ids).update(
            status=WorkStatus.PENDING, attempts=0, claims=0, error="", claim_token="",
            lease_expires_at=None, finished_at=None, **reset)
        stage.retried(ids)
        active = StageRun.objects.filter(release=release, stage=stage_name,
                                         state=StageRunState.ACTIVE).exists()
        if count:
            _reopen(release)
        if count and active:
            _enqueue_after_commit(release)
    return count


def _has_field(model, name: str) -> bool:
    return any(field.name == name for field in model._meta.get_fields())


def _reopen(release: Release) -> None:
    """A finished release given work again is running again: it cannot be published with rows
    pending, and the last drain marks it scored (or incomplete) once more."""
    Release.objects.filter(pk=release.pk, status__in=(
        ReleaseStatus.SCORED, ReleaseStatus.INCOMPLETE)).update(status=ReleaseStatus.RUNNING)
    release.refresh_from_db(fields=["status"])


def _refuse_if_published(release: Release) -> None:
    if release.is_published:
        raise ImmutableError(f"release {release.code} is published: nothing under it runs")


def _enqueue_after_commit(release: Release) -> None:
    def enqueue() -> None:
        ensure_schedule()
        drains_enqueue(release, at_least=1)

    transaction.on_commit(enqueue)


def scope_complete(release: Release, stages: list[str]) -> bool:
    """No row of these stages is pending or claimed, and none can be planned now."""
    from runs_app.stages import get_stage

    for name in stages:
        stage = get_stage(name)
        if stage.rows(release).filter(
                status__in=(WorkStatus.PENDING, WorkStatus.CLAIMED)).exists():
            return False
        if stage.plan(release):
            return False
    return True


def release_complete(release: Release) -> bool:
    """Every stage of the release's stage set was started and has no work left."""
    stages = release.parsed_config().stages
    active = set(StageRun.objects.filter(release=release, state=StageRunState.ACTIVE)
                 .values_list("stage", flat=True))
    return set(stages) <= active and scope_complete(release, stages)


def release_settle(*, release: Release) -> None:
    """Every text's scores from every stage's rows (once, when the run is complete)."""
    # Here, not at the top: the cross-examination's imports reach the HTTP client, which
    # `manage.py run_release` would load for nothing before its drains are queued.
    from runs_app.panel_scores import text_scores_update_panel
    from runs_app.stages.crossexam import text_scores_update_cross_examination

    text_scores_update_honesty(release=release)
    text_scores_update_panel(release=release)
    if "crossexam" in release.parsed_config().stages:
        text_scores_update_cross_examination(release=release)
