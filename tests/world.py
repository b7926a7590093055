"""A small named world with one row in every table under a release, written directly.

`release_rows_create` gives a release (published or not) its generations and every kind of
row that hangs under it: attempts, refusal checks, jury verdicts and claims, reader responses,
agent runs, text scores, and the spot-check evidence (a batch with items, two auditors' checks,
a correction, an out-of-band audit with its row, a human reader's result). The triggers and the
admin's rules do not care how rows were produced, so nothing is run through the pipeline here:
building the world takes a fraction of a second.

Two writers: `OPEN_WRITER` wrote the text whose checks are done; `BLIND_WRITER` wrote the text
`ann` still checks blind, so a test can look for its name on every page she can open.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import connection, models, transaction
from django.utils import timezone

from audits_app.models import (
    HumanReaderResult,
    OutOfBandAudit,
    OutOfBandVerdict,
    Publication,
    SpotCheck,
    SpotCheckBatch,
    SpotCheckCorrection,
    SpotCheckItem,
)
from baitbench_site import yaml_files
from baitbench_site.immutability import ImmutableError
from runs_app.models import (
    AgentRun,
    Claim,
    CrossExamTurn,
    Generation,
    GenerationAttempt,
    JurorVerdict,
    LlmModel,
    ReaderResponse,
    RefusalCheck,
    Release,
    ReleaseScenario,
    ReleaseStatus,
    RunControl,
    StageRun,
    TextScore,
)
from runs_app.schemas import ModelSpec, ReleaseConfig
from scenarios_app.models import Condition, Scenario, ScenarioVersion, Task
from scenarios_app.schemas import ScenarioFile
from scenarios_app.services import scenario_apply, scenarios_import

SLUG = "greenvale-listeria"
OPEN_WRITER = ("fixture/open-writer", "Open Writer Zeta")
BLIND_WRITER = ("fixture/blind-writer", "Blind Writer Omega")
BLIND_STRATUM = f"{BLIND_WRITER[0]}|C2|fabrication"
JUROR = ("fixture/world-juror", "World Juror")


def user_create(username: str, role: str | None, *, superuser: bool = False) -> User:
    if superuser:
        user = User.objects.create_superuser(username, password="pw")
    else:
        user = User.objects.create_user(username, password="pw", is_staff=True)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return User.objects.get(pk=user.pk)  # a fresh permission cache


def scenario_version() -> ScenarioVersion:
    raw = yaml_files.safe_load((settings.SCENARIOS_DIR / f"{SLUG}.yaml").read_text())
    scenario, _ = scenario_apply(document=ScenarioFile.model_validate(raw))
    return Scenario.objects.select_related("current_version").get(pk=scenario.pk).current_version


def llm_model(spec: tuple[str, str]) -> LlmModel:
    return LlmModel.objects.get_or_create(
        openrouter_id=spec[0], defaults={"display_name": spec[1], "family": spec[0]})[0]


def release_config(code: str, version: ScenarioVersion) -> dict:
    """A valid frozen configuration naming the world's writers, jurors and scenario."""
    jurors = [JUROR[0], "fixture/world-juror-b", "fixture/world-juror-c"]
    config = ReleaseConfig(
        code=code, language="en", title=f"Release {code}",
        models=[ModelSpec(id=model_id, family=model_id, name=name) for model_id, name in
                (OPEN_WRITER, BLIND_WRITER, JUROR, (jurors[1], "B"), (jurors[2], "C"))],
        writers=[OPEN_WRITER[0], BLIND_WRITER[0]], jurors=jurors, reader=JUROR[0],
        journalist=JUROR[0], scenarios=[f"{SLUG}@{version.content_hash}"], tasks=["T1"],
        conditions=["C0", "C2"])
    return config.model_dump(mode="json")


@dataclass
class ReleaseRows:
    release: Release
    open_text: Generation
    blind_text: Generation
    # One row of every guarded table, by table name.
    rows: dict[str, models.Model] = field(default_factory=dict)
    checks: dict[str, SpotCheck] = field(default_factory=dict)  # "ann-done", "ann-pending", ...


def release_rows_create(*, code: str, version: ScenarioVersion, ann: User, bob: User,
                        publish: bool) -> ReleaseRows:
    release = Release.objects.create(
        code=code, language="en", title=f"Release {code}", config=release_config(code, version),
        config_hash="ab" * 32, frozen_at=timezone.now(), status=ReleaseStatus.SCORED)
    rows: dict[str, models.Model] = {
        "runs_app_release": release,
        "runs_app_releasescenario": ReleaseScenario.objects.create(
            release=release, scenario_version=version),
    }
    juror = llm_model(JUROR)
    texts = []
    for spec, condition in ((OPEN_WRITER, "C0"), (BLIND_WRITER, "C2")):
        texts.append(Generation.objects.create(
            release=release, model=llm_model(spec), scenario_version=version, task="T1",
            # Texts that do not name their writer: a test that finds the writer on a page
            # then finds it because the page told, not because the text did.
            condition=condition, status="done", text=f"A press text for the {condition} brief."))
    open_text, blind_text = texts
    verdict = JurorVerdict.objects.create(release=release, generation=open_text, juror=juror,
                                          seat=0, status="done", outcome="scored")
    # The seeded brief and overlay the release runs with (a flush may have removed them).
    pinned = {"scenarios_app_task": Task.objects.filter(code="T1", language="en", version=1),
              "scenarios_app_condition": Condition.objects.filter(code="C0", language="en",
                                                                  version=1)}
    rows |= {table: found.first() for table, found in pinned.items() if found.exists()}
    rows |= {
        "runs_app_llmmodel": open_text.model,
        "runs_app_generation": open_text,
        "runs_app_generationattempt": GenerationAttempt.objects.create(
            generation=open_text, number=1, outcome="ok", text=open_text.text),
        "runs_app_refusalcheck": RefusalCheck.objects.create(
            release=release, generation=open_text, verdict="complied", status="done"),
        "runs_app_jurorverdict": verdict,
        "runs_app_claim": Claim.objects.create(verdict=verdict, position=0, quote="A press",
                                               label="supported"),
        "runs_app_readerresponse": ReaderResponse.objects.create(
            release=release, scenario_version=version, stimulus="control", position="P01",
            status="done", attitude=[4, 4, 4], knowledge=[0, 1, 2, 3]),
        "runs_app_agentrun": AgentRun.objects.create(
            release=release, generation=open_text, kind="uptake", status="done"),
        "runs_app_crossexamturn": CrossExamTurn.objects.create(
            release=release, generation=open_text, number=2, kind="turn", status="done",
            question="What did you know?", answer="We said so at once."),
        "runs_app_textscore": TextScore.objects.create(
            release=release, generation=open_text, honesty_index=0.5),
        "runs_app_stagerun": StageRun.objects.create(release=release, stage="generate"),
        "runs_app_runcontrol": RunControl.objects.create(release=release, spent_usd=0.5),
    }
    world = ReleaseRows(release, open_text, blind_text, rows)
    _evidence_create(world, ann=ann, bob=bob)
    if publish:
        _after_publication_create(world, ann=ann)
    if publish:
        rows["audits_app_publication"] = Publication.objects.create(
            release=release, config_hash=release.config_hash, snapshot={"code": code},
            snapshot_hash="cd" * 32)
        Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.PUBLISHED)
        release.refresh_from_db()
    return world


def _after_publication_create(world: ReleaseRows, *, ann: User) -> None:
    """Rows that come after publication by design (contamination check, arena), one each,
    for a release about to be published (the guards refuse no INSERT of theirs)."""
    from audits_app.arena.models import (
        ArenaEvent,
        ArenaPair,
        ArenaResult,
        ArenaVote,
        ArenaVoter,
        EthicsReview,
        RecognisabilityRun,
        SimulatedPairVote,
    )
    from audits_app.models import ReleaseArchive, StudyTextsReveal
    from runs_app.models import ContaminationCheck, ContaminationProbe

    release, rows = world.release, world.rows
    check = ContaminationCheck.objects.create(release=release)
    version = ReleaseScenario.objects.filter(release=release).first().scenario_version
    review = EthicsReview.objects.create(
        release=release, reviewing_body="Board", reference=f"R-{release.code}",
        decided_on=dt.date(2026, 1, 5), decision="approved", document="arena/ethics/x.pdf",
        document_sha256="ef" * 32, recorded_by=ann)
    pair = ArenaPair.objects.create(
        release=release, generation_a=world.open_text, generation_b=world.blind_text,
        model_a=world.open_text.model, model_b=world.blind_text.model,
        scenario=version.scenario, task="T1", condition="C0")
    voter = ArenaVoter.objects.create(key=f"voter-{release.code}")
    rows |= {
        "runs_app_contaminationcheck": check,
        "runs_app_contaminationprobe": ContaminationProbe.objects.create(
            contamination_check=check, model="probe/model", scenario_version=version,
            kind="canary", status="done", reply="no idea"),
        "audits_app_ethicsreview": review,
        "audits_app_arenaevent": ArenaEvent.objects.create(
            release=release, action="open", reason="approved", review=review, by=ann),
        "audits_app_recognisabilityrun": RecognisabilityRun.objects.create(
            release=release, method={"features": "words"}, probabilities={},
            summary={"accuracy": 0.5, "low": 0.3, "high": 0.7, "chance": 0.5,
                     "majority": 0.5, "texts": 2, "level": 0.95, "per_writer": []}),
        "audits_app_arenaresult": ArenaResult.objects.create(
            release=release, votes_counted=1, votes_shadow=0, data={}),
        "audits_app_arenapair": pair,
        "audits_app_releasearchive": ReleaseArchive.objects.create(
            release=release, kind="public", sha256="0" * 64, data=b"PK"),
        "audits_app_arenavote": ArenaVote.objects.create(
            pair=pair, voter=voter, favourable="a", a_on_left=True),
        "audits_app_simulatedpairvote": SimulatedPairVote.objects.create(
            pair=pair, position="P01", a_first=True),
        "audits_app_studytextsreveal": StudyTextsReveal.objects.create(
            release=release, reason="studies over", by=ann),
    }


def _evidence_create(world: ReleaseRows, *, ann: User, bob: User) -> None:
    release = world.release
    batch = SpotCheckBatch.objects.create(release=release, name=f"{release.code} batch", seed=1,
                                          size=2, created_by=ann)
    done_item = SpotCheckItem.objects.create(
        batch=batch, generation=world.open_text, position=1, double_coded=True,
        stratum=f"{OPEN_WRITER[0]}|C0|supported", jury_class="supported")
    blind_item = SpotCheckItem.objects.create(
        batch=batch, generation=world.blind_text, position=2, stratum=BLIND_STRATUM,
        jury_class="fabrication", jurors_disagreed=True)
    labels = [{"position": 1, "quote": "A press", "label": "supported"}]
    now = timezone.now()
    checks = {
        "ann-done": SpotCheck.objects.create(
            release=release, generation=world.open_text, item=done_item, auditor=ann,
            status="done", claim_labels=labels, completed_at=now, note="ann's note"),
        "bob-done": SpotCheck.objects.create(
            release=release, generation=world.open_text, item=done_item, auditor=bob,
            status="done", claim_labels=labels, completed_at=now, note="bob's note"),
        "ann-pending": SpotCheck.objects.create(
            release=release, generation=world.blind_text, item=blind_item, auditor=ann),
    }
    audit = OutOfBandAudit.objects.create(
        release=release, auditor_name="Kim", organisation="Partner lab",
        audited_on=dt.date(2026, 1, 5), method="read aloud", imported_by=ann)
    checks["out-of-band"] = SpotCheck.objects.create(
        release=release, generation=world.open_text, status="done", out_of_band=True,
        audit=audit, completed_at=now, agrees_with_jury=True)
    world.checks = checks
    world.rows |= {
        "audits_app_spotcheckbatch": batch,
        "audits_app_spotcheckitem": done_item,
        "audits_app_spotcheck": checks["ann-done"],
        "audits_app_spotcheckcorrection": SpotCheckCorrection.objects.create(
            release=release, spot_check=checks["ann-done"], made_by=ann, reason="misread",
            changes=[{"field": "note", "before": "ann's note", "after": "ann's second note"}],
            state={"claim_labels": labels, "facts_conveyed": [], "techniques": [],
                   "agrees_with_jury": None, "note": "ann's second note"}),
        "audits_app_outofbandaudit": audit,
        "audits_app_outofbandverdict": OutOfBandVerdict.objects.create(
            audit=audit, spot_check=checks["out-of-band"], row_number=2,
            generation=world.open_text, agrees_with_jury=True),
        "audits_app_humanreaderresult": HumanReaderResult.objects.create(
            release=release, scenario_slug=SLUG, stimulus="control", reader="r1",
            attitude=[4, 4, 4], knowledge=[0, 1, 2, 3]),
    }


def attempt(sql: str, params: tuple = ()) -> str | None:
    """Run raw SQL in a savepoint: the refusal's message, or None when it went through."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    except ImmutableError as refusal:
        return refusal.message
    return None


def prompt_texts_seed() -> None:
    """The task briefs and condition overlays a data migration writes (idempotently): a
    transactional test may run after another one flushed every table, seeded rows included."""
    import importlib

    from django.apps import apps

    importlib.import_module("scenarios_app.migrations.0002_seed_tasks_conditions").seed(
        apps, None)


def shipped_scenarios_import():
    """The shipped scenario files, imported (and the prompt texts they are written with)."""
    prompt_texts_seed()
    result = scenarios_import(paths=[str(settings.SCENARIOS_DIR)])
    assert result.ok, result.problems
    return result


def small_demo_release_create():
    """demo.0's models on two scenarios, T1 x C0/C2 (the scenarios imported already)."""
    from runs_app.schemas import Arena, ReadingStudies, ReleaseConfig
    from runs_app.services import release_config_from_file, release_create

    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml")
    small = config.model_copy(update={
        "code": "small.0", "scenarios": ["greenvale-listeria", "cobaltcloud-breach"],
        "tasks": ["T1"], "conditions": ["C0", "C2"], "arena": Arena(),
        "reading_studies": ReadingStudies(),
    })
    return release_create(config=ReleaseConfig.model_validate(small.model_dump()))
