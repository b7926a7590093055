"""The study's calibration figure on the release page: absent with too few readers (the page
says how many there are and are needed), present once enough finish, the simulated crowd's
marked and apart from people's, and nothing that identifies a participant. While the study's
texts are read blind, only publishers see its per-model figures: a reader who looked before
and after finishing would learn which model wrote the text they read."""

from __future__ import annotations

import re

import numpy as np
from django.test import Client

from audits_app.calibration.studies import services
from audits_app.calibration.studies.calibration import study_calibration
from audits_app.calibration.studies.figures import attitude_effects, two_stage_means
from audits_app.calibration.studies.simulation import simulated_crowd, walk
from audits_app.models import StudyParticipant
from runs_app.readers import load_panel


def release_page(client) -> str:
    response = client.get("/releases/arena.0/")
    assert response.status_code == 200
    return response.content.decode()


def publishers_page(publisher) -> str:
    client = Client()
    client.force_login(publisher)
    return release_page(client)


PEOPLE_TRAITS = {"trust_in_media": "low", "age_band": "18-29", "education": "secondary",
                 "view_of_business": "neutral", "view_of_government": "sceptical",
                 "news_habits": "social_media"}


def test_the_figure_appears_once_enough_simulated_readers_finish(open_study, publisher):
    simulated_crowd(open_study, 3, seed=4)
    page = publishers_page(publisher)
    assert 'class="warning study-pending"' in page
    included = study_calibration(open_study, simulated=True)["readers"]
    assert f"{included} included simulated reader" in page and "the figure needs 6" in page
    simulated_crowd(open_study, 10, seed=5)
    page = publishers_page(publisher)
    assert "SIMULATED readers, not people" in page
    assert page.count('class="chart calibration-figure"') == 1
    figure = study_calibration(open_study, simulated=True)
    assert figure["summary"] is not None and figure["readers"] >= 6
    rows = figure["summary"]["measures"]["persuasion"]["models"]
    assert all(row["people_n"] >= 1 and row["people_low"] <= row["people"] <= row["people_high"]
               for row in rows)
    # No people took part: their side says so, with the crowd's never counted for them.
    assert study_calibration(open_study, simulated=False)["readers"] == 0


def test_the_attitude_effects_list_the_models_as_the_other_tables_do(open_study, publisher):
    simulated_crowd(open_study, 13, seed=5)
    page = publishers_page(publisher)

    def first_cells(table_class: str) -> list[str]:
        table = page.split(f'class="{table_class}"')[1].split("</table>")[0]
        return re.findall(r"<tr><td>([^<]+)</td>", table)

    tables = [first_cells(f'study-calibration-models" data-measure="{measure}')
              for measure in ("persuasion", "misleading")]
    effects = first_cells("study-attitude-effects")
    assert len(effects) >= 2 and tables[0] == tables[1] == effects
    assert effects != sorted(effects)  # the writers' order, which is not the names' own


def study_section(page: str, simulated: bool) -> str:
    marker = f'data-simulated="{int(simulated)}"'
    return page.split(marker)[1].split("</section>")[0]


def test_while_its_texts_are_held_a_study_s_figures_are_the_publishers_alone(
    open_study, publisher, client
):
    config = open_study.release.parsed_config()
    positions = load_panel(config.panel, config.language).positions
    for index, position in enumerate(positions[:8]):  # a position has room for two readers
        walk(open_study, position.traits.model_dump(), np.random.default_rng(index), {},
             index, platform_id=f"PERSON{index}", client=Client(), simulated=False)
    simulated_crowd(open_study, 13, seed=5)
    people = study_calibration(open_study, simulated=False)
    assert people["readers"] >= open_study.readers_for_figure and people["summary"] is not None
    # The publisher sees the figures with the readers behind each model.
    section = study_section(publishers_page(publisher), simulated=False)
    assert 'class="study-calibration-models"' in section
    writers = set(re.findall(r"<tr><td>([^<]+)</td>", section))
    assert len(writers) >= 2

    # Anyone else, before the reveal: how many readers, and why no more; no model at all.
    page = release_page(client)
    for simulated in (False, True):
        section = study_section(page, simulated)
        readers = study_calibration(open_study, simulated=simulated)["readers"]
        assert f"{readers} included {'simulated ' if simulated else ''}readers so far" in section
        assert "held until its texts are revealed" in section
        assert "<table" not in section and "<svg" not in section
        assert not [name for name in writers if name in section]

    services.study_close(study=open_study, user=publisher, reason="enough readers")
    services.study_texts_reveal(release=open_study.release, user=publisher,
                                reason="the study is over")
    section = study_section(release_page(Client()), simulated=False)
    assert 'class="study-calibration-models"' in section and "study-held" not in section
    assert all(name in section for name in writers)


def test_no_participant_key_hash_or_platform_id_in_public_output(open_study, client):
    walk(open_study, {"trust_in_media": "low", "age_band": "18-29", "education": "secondary",
                      "view_of_business": "neutral", "view_of_government": "sceptical",
                      "news_habits": "social_media"}, np.random.default_rng(1), {}, 0,
         platform_id="PIDSECRET99", client=Client(), simulated=False)
    simulated_crowd(open_study, 8, seed=6)
    participant = StudyParticipant.objects.filter(simulated=False).get()
    public = [release_page(client),
              client.get(f"/studies/{open_study.pk}/").content.decode(),
              client.get("/api/v1/releases/arena.0/").content.decode(),
              client.get("/releases/arena.0/archive.zip").content.decode("latin-1")]
    secrets = [participant.key, participant.platform_id_hash, participant.platform_study_hash,
               "PIDSECRET99", participant.completion_code]
    secrets += list(StudyParticipant.objects.filter(simulated=True)
                    .values_list("platform_id_hash", flat=True))
    for text in public:
        for secret in filter(None, secrets):
            assert secret not in text


def test_two_stage_means_weigh_scenarios_and_participants():
    values = np.array([1.0, 3.0, 5.0, 7.0])
    models = np.array([0, 0, 0, 0])
    scenarios = np.array([0, 0, 1, 1])
    participants = np.array([0, 1, 2, 3])
    counts = np.array([[1, 1], [2, 0], [0, 2]])
    means = two_stage_means(values, models, scenarios, participants, 1, counts, seed=1)
    assert means.shape == (3, 1)
    assert 1.0 <= means[1, 0] <= 3.0 and 5.0 <= means[2, 0] <= 7.0  # one scenario each


def test_attitude_effects_subtract_the_control_text_and_no_text_per_scenario():
    rows = [{"kind": "text", "model": "m", "scenario": "s", "reader": "r1", "attitude": 5.0},
            {"kind": "control", "model": "", "scenario": "s", "reader": "r2", "attitude": 4.0},
            {"kind": "none", "model": "", "scenario": "s", "reader": "r1", "attitude": 3.0}]
    assert attitude_effects(rows) == [{"model": "m", "readers": 1, "versus_control": 1.0,
                                       "versus_none": 2.0}]
