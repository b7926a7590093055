"""Staff progress per reading position and arm, and the responses CSV: it reads back through
the human-reader import unchanged."""

from __future__ import annotations

import numpy as np
from django.test import Client

from audits_app.calibration.readers_import import human_readers_read
from audits_app.calibration.studies import selectors
from audits_app.calibration.studies.csv_export import responses_csv
from audits_app.calibration.studies.simulation import simulated_crowd, walk
from audits_app.calibration.studies.tests.conftest import staff_user
from audits_app.models import StudyParticipant
from audits_app.spotchecks.imports import ImportResult

P01 = {"trust_in_media": "low", "age_band": "18-29", "education": "secondary",
       "view_of_business": "neutral", "view_of_government": "sceptical",
       "news_habits": "social_media"}


def test_the_csv_round_trips_through_the_human_reader_import(open_study):
    simulated_crowd(open_study, 5, seed=2)
    text = responses_csv(open_study, simulated=True)
    result = ImportResult()
    parsed = human_readers_read(release=open_study.release, csv_text=text, result=result)
    assert result.problems == []
    expected = selectors.study_responses(open_study, simulated=True)
    assert len(parsed) == len(expected) > 0
    for entry, row in zip(parsed, expected, strict=True):
        assert (entry["scenario_slug"], entry["stimulus"], entry["reader"],
                entry["generation_id"], entry["attitude"], entry["knowledge"]) == (
            row["scenario"], row["stimulus"], row["reader"], row["generation_id"],
            row["attitude"], row["knowledge"])


def test_progress_counts_per_position_and_arm(open_study, publisher, client):
    walk(open_study, P01, np.random.default_rng(1), {}, 0, client=Client(), simulated=False)
    Client().post(f"/studies/{open_study.pk}/consent/", {"agree": "on"})
    progress = selectors.study_progress(open_study, simulated=False)
    p01 = next(row for row in progress["positions"] if row["position"] == "P01")
    assert (p01["started"], p01["completed"], p01["excluded"], p01["assigned"]) == (1, 1, 0, 1)
    assert sum(row["started"] for row in progress["arms"]) == 2  # one arm per scenario read
    assert progress["participants"] == 2 and progress["included"] == 1
    client.force_login(publisher)
    page = client.get(f"/studies/{open_study.pk}/progress/").content.decode()
    assert "SIMULATED readers" in page and "P01" in page
    csv = client.get(f"/studies/{open_study.pk}/responses.csv?simulated=0")
    assert csv["Content-Disposition"].endswith(f'study-{open_study.pk}.csv"')
    assert csv.content.decode().splitlines()[0] == "scenario,stimulus,reader,a1,a2,a3,k1,k2,k3,k4"


def test_a_simulated_value_other_than_0_or_1_is_a_plain_400_naming_it(open_study, publisher,
                                                                       client):
    client.force_login(publisher)
    refused = client.get(f"/studies/{open_study.pk}/responses.csv?simulated=yes")
    assert refused.status_code == 400 and refused["Content-Type"].startswith("text/plain")
    assert refused.content.decode() == "Simulated must be one of 0, 1; got 'yes'.\n"


def test_progress_and_responses_are_for_publishers_only(open_study, client):
    assert client.get(f"/studies/{open_study.pk}/progress/").status_code == 404
    client.force_login(staff_user("audrey", "auditor"))
    assert client.get(f"/studies/{open_study.pk}/responses.csv").status_code == 404


def test_no_participant_key_or_hash_leaves_in_a_csv(open_study):
    walk(open_study, P01, np.random.default_rng(1), {}, 0, platform_id="PID-1234",
         client=Client(), simulated=False)
    text = responses_csv(open_study, simulated=False)
    participant = StudyParticipant.objects.get()
    for secret in (participant.key, participant.platform_id_hash, "PID-1234"):
        assert secret not in text


def test_an_anonymous_reader_sees_a_study_close_after_publication(open_study, publisher, client):
    from audits_app.calibration.studies import services

    url = f"/releases/{open_study.release.code}/"
    before = client.get(url)
    assert "(open)" in before.content.decode()
    services.study_close(study=open_study, user=publisher, reason="enough readers")
    after = client.get(url)
    assert after["ETag"] != before["ETag"] and "(closed)" in after.content.decode()
