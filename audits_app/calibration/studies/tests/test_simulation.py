"""The simulated crowd (`reading_study_simulate`): through the pages, marked simulated, never
counted with people."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from audits_app.calibration.studies import selectors
from audits_app.models import StudyParticipant


def test_the_command_fills_the_open_study_with_simulated_readers(open_study):
    out = StringIO()
    call_command("reading_study_simulate", "arena.0", "6", "--seed", "3", stdout=out)
    report = out.getvalue()
    assert report.startswith("SIMULATED: 6 simulated participants")
    assert "SIMULATED readers (not people)" in report
    assert StudyParticipant.objects.filter(simulated=True).count() == 6
    assert not StudyParticipant.objects.filter(simulated=False).exists()
    assert selectors.study_responses(open_study, simulated=False) == []
    simulated = selectors.study_responses(open_study, simulated=True)
    assert simulated
    assert all(row["reader"].startswith(f"SIM-S{open_study.pk}-R") for row in simulated)
    assert selectors.study_progress(open_study, simulated=False)["participants"] == 0


def test_a_visitor_cannot_mark_themselves_simulated(open_study, client):
    client.post(f"/studies/{open_study.pk}/consent/", {"agree": "on", "simulated": "1"})
    assert StudyParticipant.objects.get().simulated is False


def test_the_command_needs_an_open_study(study):
    with pytest.raises(CommandError, match="arena.0: no open reading study"):
        call_command("reading_study_simulate", "arena.0", "3")
