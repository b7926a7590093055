"""Creating, opening and closing a reading study (DESIGN section 10)."""

from __future__ import annotations

import pytest

from audits_app.arena.selectors import arena_state
from audits_app.arena.tests.conftest import approve
from audits_app.calibration.studies import services
from audits_app.calibration.studies.tests.conftest import HELD_OUT, PUBLIC, plan, study_approve
from audits_app.models import EthicsReview, ReadingStudy, StudyQuota, StudyStimulus


def stimuli_of(study: ReadingStudy) -> list[tuple]:
    return sorted(StudyStimulus.objects.filter(study=study).values_list(
        "scenario_version__scenario__slug", "kind", "generation_id"), key=str)


def test_it_samples_texts_per_model_and_condition_with_the_recorded_seed(study, release,
                                                                         publisher):
    texts = StudyStimulus.objects.filter(study=study, kind=StudyStimulus.Kind.TEXT)
    cells = {(s.scenario_version_id, s.model_id, s.condition) for s in texts}
    assert len(cells) == texts.count() > 0  # one text per model x condition x scenario
    # The refuser's refused damage-control texts are never stimuli.
    assert not texts.filter(model__openrouter_id="fixture/refuser", condition="C2").exists()
    for slug in PUBLIC:
        anchors = StudyStimulus.objects.filter(study=study, scenario_version__scenario__slug=slug)
        assert set(anchors.exclude(kind="text").values_list("kind", flat=True)) == {
            "control", "none"}
    assert not StudyStimulus.objects.filter(study=study,
                                            scenario_version__scenario__slug=HELD_OUT).exists()
    again = services.study_create(release=release, user=publisher, plan=plan(title="Again"))
    assert [s[1:] for s in stimuli_of(again)] == [s[1:] for s in stimuli_of(study)]
    assert study.language == "en" and study.seed == 11
    assert StudyQuota.objects.filter(study=study, target=2).count() == 12


def test_it_refuses_a_held_out_scenario_and_names_the_field(release, publisher):
    with pytest.raises(services.StudyError,
                       match=f"scenarios: {HELD_OUT} is a held-out scenario of "):
        services.study_create(release=release, user=publisher, plan=plan(scenarios=[HELD_OUT]))
    with pytest.raises(services.StudyError, match="readers_per_position: at least 1"):
        services.study_create(release=release, user=publisher,
                              plan=plan(readers_per_position=0))


def test_it_opens_only_on_an_approved_review_of_the_study_itself(study, release, publisher):
    approve(release, publisher)  # the arena's approval does not cover the study
    with pytest.raises(services.StudyError, match="no approved ethics review"):
        services.study_open(study=study, user=publisher)
    study_approve(study, publisher, decision=EthicsReview.Decision.REVISIONS)
    with pytest.raises(services.StudyError, match="revisions requested"):
        services.study_open(study=study, user=publisher)
    review = study_approve(study, publisher, reference="ERB-2026-078")
    opened = services.study_open(study=study, user=publisher)
    assert opened.is_open and opened.review == review


def test_a_study_review_neither_opens_nor_closes_the_arena(study, release, publisher):
    study_approve(study, publisher)
    assert arena_state(release).latest_review is None


def test_a_withdrawn_approval_closes_an_open_study(open_study, publisher):
    study_approve(open_study, publisher, decision=EthicsReview.Decision.WITHDRAWN,
                  reference="ERB-2026-079")
    open_study.refresh_from_db()
    assert open_study.status == ReadingStudy.Status.CLOSED
    assert "withdrawn" in open_study.closed_reason.lower()


def test_it_closes_with_a_reason(open_study, publisher):
    with pytest.raises(services.StudyError, match="say why"):
        services.study_close(study=open_study, user=publisher, reason=" ")
    closed = services.study_close(study=open_study, user=publisher, reason="Enough readers.")
    assert closed.status == ReadingStudy.Status.CLOSED and closed.closed_at


def test_only_a_publisher_creates_a_study(release, db):
    from audits_app.calibration.studies.tests.conftest import staff_user

    with pytest.raises(services.StudyError, match="only a publisher"):
        services.study_create(release=release, user=staff_user("audrey", "auditor"),
                              plan=plan())


def test_the_admin_creates_a_study_through_the_service(client, release, publisher):
    client.force_login(publisher)
    scenario_ids = list(release.pins.filter(scenario_version__scenario__slug__in=PUBLIC)
                        .values_list("scenario_version__scenario_id", flat=True))
    form = {"release": release.pk, "title": "Admin study", "scenarios": scenario_ids,
            "texts_per_cell": 1, "seed": 5, "readers_per_position": 3,
            "min_seconds_on_text": 12, "readers_for_figure": 24, "completion_url": ""}
    bad = client.post("/admin/audits_app/readingstudy/add/", form | {"completion_url":
                                                                     "http://x.example/"})
    assert bad.status_code == 200 and "must start with https://" in bad.content.decode()
    response = client.post("/admin/audits_app/readingstudy/add/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    study = ReadingStudy.objects.get(title="Admin study")
    assert study.stimuli.filter(kind="none").count() == 2
    assert StudyQuota.objects.filter(study=study).count() == 12


def test_an_opened_studys_title_is_kept_as_its_public_page_shows_it(client, open_study,
                                                                     publisher):
    client.force_login(publisher)
    url = f"/admin/audits_app/readingstudy/{open_study.pk}/change/"
    page = client.get(url).content.decode()
    assert 'name="title"' not in page and open_study.title in page
    assert 'name="screened_out_url"' in page


def test_a_changed_studys_links_keep_the_rules_they_were_created_under(client, study,
                                                                      publisher):
    """Creation refuses a link that is not https://; a change must not let one in later."""
    client.force_login(publisher)
    url = f"/admin/audits_app/readingstudy/{study.pk}/change/"
    form = {"title": study.title, "completion_url": "http://x.example/{code}",
            "screened_out_url": ""}

    bad = client.post(url, form)

    assert bad.status_code == 200 and "must start with https://" in bad.content.decode()
    assert ReadingStudy.objects.get(pk=study.pk).completion_url == ""
    good = client.post(url, form | {"completion_url": "https://x.example/{code}"})
    assert good.status_code == 302, good.content.decode()[:2000]
    assert ReadingStudy.objects.get(pk=study.pk).completion_url == "https://x.example/{code}"
