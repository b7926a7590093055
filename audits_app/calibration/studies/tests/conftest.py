"""Reading studies' small named world: the arena's release (two public scenarios, one
held-out, four fixture writers, T1 under C0-C3), with the simulated public's answers to every
text in every position (leaning with the writer's persuasion, so the panel orders models),
published; and a draft study on its public scenarios.
"""

from __future__ import annotations

import copy

import pytest
from django.conf import settings
from django.core.files.base import ContentFile

from audits_app.arena.demo import demo_letter
from audits_app.arena.services import ethics_review_record
from audits_app.arena.tests.conftest import (  # noqa: F401  (fixtures)
    HELD_OUT,
    PUBLIC,
    WRITERS,
    fresh_cache,
    publisher,
    staff_user,
)
from audits_app.calibration.studies import services
from audits_app.models import EthicsReview, ReadingStudy
from audits_app.publication.services import release_publish
from audits_app.tests.factories import scenario_document
from audits_app.tests.stats_world import build_world
from runs_app.models import Release, ReleaseStatus
from tests.kept import world_kept

# Panel v1's P06: medium trust in news media, 30-44.
P06 = {"trust_in_media": "medium", "age_band": "30-44", "education": "vocational",
       "view_of_business": "neutral", "view_of_government": "neutral", "news_habits": "tv"}


def panel_answers(release) -> None:
    """Each of the twelve positions answers each text: attitude leaning with the writer's
    place in the release, knowledge right but for one question."""
    from runs_app.models import Generation, ReaderResponse, ReplyOutcome, Stimulus, WorkStatus

    rows = []
    for generation in Generation.objects.filter(release=release).select_related(
            "model", "scenario_version"):
        lean = 2 + WRITERS.index(generation.model.openrouter_id)
        correct = [q["correct"] for q in generation.scenario_version.content[
            "knowledge_questions"]]
        for number in range(1, 13):
            rows.append(ReaderResponse(
                release=release, scenario_version=generation.scenario_version,
                stimulus=Stimulus.GENERATION, stimulus_key=str(generation.pk),
                generation=generation, position=f"P{number:02d}", status=WorkStatus.DONE,
                outcome=ReplyOutcome.SCORED, attitude=[lean, lean, min(7, lean + 1)],
                knowledge=[correct[0], (correct[1] + 1) % 4, correct[2], correct[3]]))
    ReaderResponse.objects.bulk_create(rows)


def published_study_release(code: str = "arena.0", *, study_share: float = 1.0) -> Release:
    """The named world's release, published, with `study_share` of each public scenario's
    cells held for reading studies (every cell unless a test says otherwise, so a study may
    sample any text) and none for the arena."""
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create

    data = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    data.update(code=code, scenarios=[*PUBLIC, HELD_OUT], tasks=["T1"],
                conditions=["C0", "C1", "C2", "C3"],
                bootstrap={"seed": 7, "resamples": 200, "level": 0.95},
                arena={"held_share": 0.0}, reading_studies={"held_share": study_share})
    release = release_create(config=ReleaseConfig.model_validate(data))
    build_world(release)
    panel_answers(release)
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.SCORED)
    release.refresh_from_db()
    release_publish(release=release)
    return Release.objects.get(pk=release.pk)


def study_scenarios_import() -> None:
    """The three scenarios of the world, the held-out one marked so (and the seeded task
    briefs, there even after a flush)."""
    from scenarios_app.services import scenario_apply, scenarios_import
    from tests.world import prompt_texts_seed

    prompt_texts_seed()
    imported = scenarios_import(paths=[str(settings.SCENARIOS_DIR / f"{slug}.yaml")
                                       for slug in [*PUBLIC, HELD_OUT]])
    assert imported.ok, imported.problems
    scenario_apply(document=scenario_document(HELD_OUT, visibility="held-out"))


@pytest.fixture
def scenarios_imported(db, prompt_texts):
    study_scenarios_import()


@pytest.fixture(scope="module")
def kept_study_release(request, django_db_setup, django_db_blocker):
    """Kept (tests/kept.py): published once for a module's tests, each seeing it as built."""
    def build() -> Release:
        study_scenarios_import()
        return published_study_release()

    yield from world_kept(request, django_db_blocker, build)


@pytest.fixture
def release(kept_study_release, db):
    """A live-server or concurrent test's module defines it anew (`transactional_db`)."""
    return copy.deepcopy(kept_study_release)


def study_approve(study: ReadingStudy, user, decision: str = EthicsReview.Decision.APPROVED,
                  reference: str = "ERB-2026-077") -> EthicsReview:
    return ethics_review_record(
        release=study.release, user=user, reviewing_body="University Ethics Board",
        reference=reference, decided_on=study.release.publication.published_at.date(),
        decision=decision, document=ContentFile(demo_letter(), name="approval.pdf"),
        study=study)


def plan(**changes) -> services.StudyPlan:
    values = {"title": "Pilot reading study", "scenarios": list(PUBLIC), "seed": 11,
              "readers_per_position": 2, "min_seconds_on_text": 10.0, "readers_for_figure": 6}
    return services.StudyPlan(**(values | changes))


@pytest.fixture
def study(release, publisher) -> ReadingStudy:  # noqa: F811  (the fixtures above)
    return services.study_create(release=release, user=publisher, plan=plan())


@pytest.fixture
def open_study(study, publisher) -> ReadingStudy:  # noqa: F811
    study_approve(study, publisher)
    return services.study_open(study=study, user=publisher)
