"""A study's people in the database itself (baitbench_site.immutability): a completed session's
answers are never changed, added to or deleted, a participant's platform hashes are never
rewritten, and no quota takes more readers than its target, however the SQL comes (run this
file with DATABASE_URL=postgres://... for PostgreSQL)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from audits_app.calibration.studies import services
from audits_app.models import StudyParticipant, StudyQuota, StudyReading
from baitbench_site.immutability import COMPLETED_SESSION
from runs_app.traits import Traits
from scenarios_app.models import ScenarioVersion
from tests.world import attempt

# Panel v1's P06.
P06 = {"trust_in_media": "medium", "age_band": "30-44", "education": "vocational",
       "view_of_business": "neutral", "view_of_government": "neutral", "news_habits": "tv"}
PARTICIPANTS = "audits_app_studyparticipant"
READINGS = "audits_app_studyreading"


def refusal(operation: str, table: str) -> str:
    return f"{operation} of {table} refused: {COMPLETED_SESSION}"


def session(study, *, platform_id: str, complete: bool) -> StudyParticipant:
    """A placed participant, every reading answered when `complete`, else none."""
    participant = services.participant_consent(study=study, ids={"PROLIFIC_PID": platform_id})
    assert services.participant_place(participant=participant, traits=Traits(**P06))
    if complete:
        for reading in participant.readings.order_by("order"):
            services.reading_baseline(reading=reading, attitude=[4, 4, 4])
            services.reading_show(reading=reading)
            services.reading_read(reading=reading)
            services.reading_answer(reading=reading, attitude=[5, 5, 5],
                                    knowledge=[0, 1, None, 2], attention=2)
    participant.refresh_from_db()
    assert (participant.completed_at is not None) == complete
    return participant


@pytest.fixture
def sessions(open_study):
    return {"done": session(open_study, platform_id="a" * 24, complete=True),
            "going": session(open_study, platform_id="b" * 24, complete=False)}


def test_raw_sql_cannot_change_or_delete_a_completed_sessions_answers(sessions):
    done, going = sessions["done"], sessions["going"]
    reading = done.readings.order_by("order").first()
    for change in ("attitude = '[7, 7, 7]'", "knowledge = '[3, 3, 3, 3]'",
                   "baseline = '[1, 1, 1]'", "seconds_on_text = 999"):
        assert attempt(f"UPDATE {READINGS} SET {change} WHERE id = %s", (reading.pk,)) \
            == refusal("UPDATE", READINGS), change
    assert attempt(f"DELETE FROM {READINGS} WHERE id = %s", (reading.pk,)) \
        == refusal("DELETE", READINGS)
    assert StudyReading.objects.get(pk=reading.pk).attitude == [5, 5, 5]
    # An unfinished session's readings still take their answers.
    unfinished = going.readings.order_by("order").first()
    assert attempt(f"UPDATE {READINGS} SET baseline = '[2, 2, 2]' WHERE id = %s",
                   (unfinished.pk,)) is None


def test_raw_sql_cannot_add_a_reading_to_a_completed_session(sessions):
    done = sessions["done"]
    stimulus = done.readings.first().stimulus_id
    # A scenario it has not read: the insert breaks no constraint of the table's own.
    version = ScenarioVersion.objects.exclude(
        pk__in=done.readings.values("scenario_version")).first().pk
    assert attempt(f"INSERT INTO {READINGS} (participant_id, stimulus_id, scenario_version_id, "
                   f"{connection.ops.quote_name('order')}) VALUES (%s, %s, %s, 99)",
                   (done.pk, stimulus, version)) == refusal("INSERT", READINGS)


def test_raw_sql_cannot_change_or_delete_a_completed_participants_answers(sessions):
    done, going = sessions["done"], sessions["going"]
    # Each change differs from what the session holds: whether it was excluded as too fast
    # depends on how long the machine took to answer, so its exclusions are replaced by a
    # list it can never hold.
    for change in ("attention_passed = NULL", "completion_code = 'OTHER'",
                   "completed_at = NULL", "exclusions = '[\"edited\"]'", "position = 'P01'"):
        assert attempt(f"UPDATE {PARTICIPANTS} SET {change} WHERE id = %s", (done.pk,)) \
            == refusal("UPDATE", PARTICIPANTS), change
    assert attempt(f"DELETE FROM {PARTICIPANTS} WHERE id = %s", (done.pk,)) \
        == refusal("DELETE", PARTICIPANTS)
    # Placing, finishing and giving a place back still happen to an unfinished session.
    assert attempt(f"UPDATE {PARTICIPANTS} SET attention_passed = %s WHERE id = %s",
                   (True, going.pk)) is None


@pytest.mark.parametrize("column", ["platform_id_hash", "platform_study_hash",
                                    "platform_session_hash"])
def test_raw_sql_cannot_rewrite_a_participants_platform_hash(sessions, column):
    for participant in sessions.values():  # completed or not
        assert attempt(f"UPDATE {PARTICIPANTS} SET {column} = %s WHERE id = %s",
                       ("f" * 64, participant.pk)) == refusal("UPDATE", PARTICIPANTS)
    hashes = StudyParticipant.objects.values_list("platform_id_hash", flat=True)
    assert "f" * 64 not in hashes and len(set(hashes)) == 2


def test_a_replayed_attention_answer_leaves_a_completed_session_as_it_was(sessions):
    done = sessions["done"]
    last = done.readings.order_by("order").last()
    services.reading_answer(reading=last, attitude=[1, 1, 1], knowledge=[None] * 4,
                            attention=0)
    done.refresh_from_db()
    last.refresh_from_db()
    assert done.attention_passed is True and last.attitude == [5, 5, 5]


def test_raw_sql_cannot_fill_a_quota_past_its_target(open_study):
    quota = StudyQuota.objects.get(study=open_study, position="P06")
    for change in ("assigned = target + 1", "target = assigned - 1"):
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
            if change.startswith("target"):
                cursor.execute("UPDATE audits_app_studyquota SET assigned = 1 WHERE id = %s",
                               (quota.pk,))
            cursor.execute(f"UPDATE audits_app_studyquota SET {change} WHERE id = %s",
                           (quota.pk,))
    quota.refresh_from_db()
    assert quota.assigned == 0 and quota.target == 2
