"""`manage.py reading_study_reveal`: the admin's reveal (`study_texts_reveal`) from the command
line, with the same refusals and a clear error for each thing that is wrong."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from audits_app.arena.tests.conftest import staff_user
from audits_app.calibration.studies import services
from audits_app.calibration.studies.tests.conftest import published_study_release
from audits_app.models import StudyTextsReveal


def reveal(*args: str) -> str:
    out = io.StringIO()
    call_command("reading_study_reveal", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_command_reveals_once_with_who_and_why(release, publisher, study):
    with pytest.raises(CommandError, match="no release 'nope.0'"):
        reveal("nope.0", "--user", "pat")
    with pytest.raises(CommandError, match="no user 'nobody'"):
        reveal("arena.0", "--user", "nobody")
    staff_user("sam", "auditor")
    with pytest.raises(CommandError, match="user 'sam' may not reveal study texts"):
        reveal("arena.0", "--user", "sam")
    assert not StudyTextsReveal.objects.exists()

    said = reveal("arena.0", "--user", "pat", "--reason", "Studies over.")
    assert said.startswith("arena.0: the ") and "held for reading studies are public" in said
    record = StudyTextsReveal.objects.get(release=release)
    assert (record.by, record.reason) == (publisher, "Studies over.")
    with pytest.raises(CommandError, match="arena.0: .* public already"):
        reveal("arena.0", "--user", "pat")
    # The study can never open now: its texts can be looked up.
    with pytest.raises(services.StudyError, match="have been public since"):
        services.study_open(study=study, user=publisher)


@pytest.mark.django_db
def test_the_command_refuses_while_a_study_is_open(open_study, publisher):
    with pytest.raises(CommandError, match=f"study {open_study.pk} of arena.0 is open: "
                                           f"close it first"):
        reveal("arena.0", "--user", "pat")
    assert not StudyTextsReveal.objects.exists()
    services.study_close(study=open_study, user=publisher, reason="Enough readers.")
    said = reveal("arena.0", "--user", "pat")
    assert "public since" in said
    assert StudyTextsReveal.objects.get().reason == (
        "Revealed with manage.py reading_study_reveal by pat.")


@pytest.mark.django_db
def test_the_command_says_when_there_is_nothing_to_reveal(scenarios_imported, publisher):
    published_study_release("open.0", study_share=0.0)
    with pytest.raises(CommandError, match="open.0 holds no cells for reading studies"):
        reveal("open.0", "--user", "pat")
    assert not StudyTextsReveal.objects.exists()
