"""A study's quotas under participants placed at the same moment, each in its own thread
and database connection: a transactional test, so in a module of its own (the other path
tests run inside the kept world; tests/kept.py)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection

from audits_app.calibration.studies import services
from audits_app.calibration.studies.tests.conftest import (
    P06,
    PUBLIC,
    plan,
    published_study_release,
    study_scenarios_import,
)
from audits_app.models import StudyParticipant, StudyQuota, StudyReading
from runs_app.traits import Traits


@pytest.fixture
def release(transactional_db):
    """Published for this test: a transactional test cannot run inside a kept world."""
    study_scenarios_import()
    return published_study_release()


@pytest.mark.django_db(transaction=True)
def test_quotas_hold_under_concurrent_participants(release, publisher):
    study = services.study_create(release=release, user=publisher, plan=plan(
        readers_per_position=2))
    participants = [services.participant_consent(study=study, ids={}) for _ in range(8)]
    traits = Traits(**P06)
    barrier = threading.Barrier(len(participants))
    placed, errors = [], []

    def place(participant):
        barrier.wait()
        try:
            for _ in range(50):
                try:
                    placed.append(services.participant_place(participant=participant,
                                                             traits=traits))
                    return
                except OperationalError as error:  # SQLite: another writer holds the lock
                    if "locked" not in str(error):
                        raise
                    time.sleep(0.05)
        except Exception as error:  # noqa: BLE001  (reported below)
            errors.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=place, args=(p,)) for p in participants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert placed.count(True) == 2 and placed.count(False) == 6
    assert StudyQuota.objects.get(study=study, position="P06").assigned == 2
    assert StudyParticipant.objects.filter(position="P06", turned_away=False).count() == 2
    assert StudyReading.objects.filter(participant__study=study).count() == 2 * len(PUBLIC)
