"""The reader's path through the test client: consent, profile, baseline, text, answers,
completion; platform ids; quotas under concurrent participants; exclusions."""

from __future__ import annotations

import html
import random
import re

import numpy as np
from django.db.models import F
from django.test import Client

from audits_app.calibration.studies import selectors, services
from audits_app.calibration.studies.simulation import walk
from audits_app.calibration.studies.tests.conftest import P06, PUBLIC, study_approve
from audits_app.models import (
    Exclusion,
    ReadingStudy,
    StudyParticipant,
    StudyQuota,
    StudyReading,
)
from runs_app.traits import Traits


class TextsDrawn(random.Random):
    """A seeded draw that gives the reader a text in every scenario that has one: the tests
    that need a text reading must not depend on the luck of the draw (a reader is as likely
    to be given the control text or no text; the draw itself is tested above and in
    test_setup.py)."""

    def choice(self, seq):
        texts = [option for option in seq if getattr(option, "kind", None) == "text"]
        return super().choice(texts or seq)


class SomethingToReadDrawn(random.Random):
    """A seeded draw that gives the reader a text or a control text wherever the draw
    allows one: reading too fast is about a text shown, and a reader drawn no text in every
    scenario has nothing to read too fast."""

    def choice(self, seq):
        shown = [option for option in seq if getattr(option, "kind", None) != "none"]
        return super().choice(shown or seq)


def person(study, client=None, pid="", traits=P06, seed=1):
    return walk(study, traits, np.random.default_rng(seed), {}, 0, platform_id=pid,
                client=client or Client(), simulated=False)


def test_consent_is_required_before_anything_else(open_study, client):
    response = client.post(f"/studies/{open_study.pk}/consent/", {})
    assert response.status_code == 400
    assert "Please tick the box" in response.content.decode()
    assert not StudyParticipant.objects.exists()
    assert client.get(f"/studies/{open_study.pk}/go/").url == f"/studies/{open_study.pk}/"


def test_opening_the_consent_address_leads_to_the_studys_start(open_study, client):
    opened = client.get(f"/studies/{open_study.pk}/consent/")
    assert (opened.status_code, opened["Location"]) == (303, f"/studies/{open_study.pk}/")
    assert not StudyParticipant.objects.exists()


def test_a_person_reads_one_stimulus_per_scenario_and_gets_a_code(open_study, client):
    page = client.get(f"/studies/{open_study.pk}/").content.decode()
    assert '<html lang="en">' in page and "fixture/" not in page
    walked = person(open_study, client)
    participant = StudyParticipant.objects.get()
    assert walked.completed and walked.code == participant.completion_code
    assert participant.position == "P06" and not participant.simulated
    readings = list(participant.readings.all())
    assert len(readings) == len(PUBLIC)
    assert len({r.scenario_version_id for r in readings}) == len(PUBLIC)
    for reading in readings:
        assert len(reading.baseline) == 3 and len(reading.knowledge) == 4
        if reading.stimulus.kind != "none":
            assert reading.seconds_on_text is not None and reading.seconds_on_text >= 30
    assert participant.attention_passed is True and participant.included


def test_page_titles_name_the_study_once_and_the_page_before_it(open_study, client):
    consent_page = client.get(f"/studies/{open_study.pk}/").content.decode()
    assert "<title>Reading study</title>" in consent_page
    recording = RecordingClient()
    person(open_study, recording)
    titles = {found.group(1) for page in recording.pages  # redirects have no page
              if (found := re.search(r"<title>(.*?)</title>", page))}
    assert "About you · Reading study" in titles and "Thank you: you are done · Reading study" \
        in titles
    assert all(title.count("Reading study") == 1 for title in titles), titles


class RecordingClient(Client):
    """A test client that keeps every page it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.pages: list[str] = []

    def get(self, *args, **kwargs):
        response = super().get(*args, **kwargs)
        self.pages.append(response.content.decode())
        return response


def test_no_page_names_a_writer(open_study):
    # Every page of the path as the reader got it (a completed session's answers cannot be
    # reset to see them again).
    client = RecordingClient()
    assert person(open_study, client).completed
    assert len(client.pages) > 2 * len(PUBLIC)
    for shown in client.pages:
        assert "fixture/" not in shown and "candid" not in shown.lower()


def test_the_placement_follows_the_panel_definitions(study):
    from runs_app.readers import load_panel

    panel = load_panel("v1", "en")
    for position in panel.positions:
        assert services.position_for(panel, position.traits) == position.id
    # Another education and news habit: trust and age band still decide.
    assert services.position_for(panel, Traits(**(P06 | {"education": "university",
                                                           "news_habits": "radio"}))) == "P06"


def test_one_platform_id_takes_part_once_and_is_stored_only_as_a_keyed_hash(open_study):
    first = person(open_study, pid="5f1c0ffee0a1b2c3d4e5f601")
    again = person(open_study, pid="5f1c0ffee0a1b2c3d4e5f601", seed=2)
    assert first.completed and not again.completed
    duplicate = StudyParticipant.objects.get(duplicate_of__isnull=False)
    assert duplicate.exclusions == [Exclusion.DUPLICATE] and not duplicate.readings.exists()
    original = StudyParticipant.objects.get(duplicate_of__isnull=True)
    assert len(original.platform_id_hash) == 64
    for row in StudyParticipant.objects.values():
        assert "5f1c0ffee0a1b2c3d4e5f601" not in str(row)
    progress = selectors.study_progress(open_study, simulated=False)
    assert progress["reasons"][Exclusion.DUPLICATE] == 1


def test_a_duplicate_sees_that_they_took_part(open_study):
    person(open_study, pid="ABC")
    client = Client()
    client.post(f"/studies/{open_study.pk}/consent/", {"agree": "on", "PROLIFIC_PID": "ABC"})
    assert "taken part in this study already" in client.get(
        f"/studies/{open_study.pk}/go/").content.decode()


def test_consenting_twice_in_one_browser_goes_on_with_the_same_session(open_study, client):
    ids = {"PROLIFIC_PID": "p2", "STUDY_ID": "y", "SESSION_ID": "z"}
    client.get(f"/studies/{open_study.pk}/", ids)
    for _ in range(2):  # two tabs, or the form sent again
        client.post(f"/studies/{open_study.pk}/consent/", {"agree": "on", **ids})
    page = client.get(f"/studies/{open_study.pk}/go/").content.decode()
    assert "taken part in this study already" not in page and 'name="step"' in page
    participant = StudyParticipant.objects.get()
    assert participant.duplicate_of_id is None and not participant.exclusions
    # Another browser with the same platform id is still someone taking part twice.
    other = Client()
    other.post(f"/studies/{open_study.pk}/consent/", {"agree": "on", **ids})
    assert "taken part in this study already" in other.get(
        f"/studies/{open_study.pk}/go/").content.decode()
    assert StudyParticipant.objects.get(duplicate_of=participant).exclusions == [
        Exclusion.DUPLICATE]


def test_placing_a_placed_participant_again_takes_no_second_place(open_study):
    """A repeated request, or a call retried after its commit, finds the place it holds: a
    second place would turn away someone the quota has room for."""
    participant = services.participant_consent(study=open_study, ids={})
    assert services.participant_place(participant=participant, traits=Traits(**P06))
    readings = StudyReading.objects.filter(participant=participant).count()
    assert services.participant_place(participant=participant, traits=Traits(**P06))
    quota = StudyQuota.objects.get(study=open_study, position=participant.position)
    assert quota.assigned == 1
    assert StudyReading.objects.filter(participant=participant).count() == readings
    other = services.participant_consent(study=open_study, ids={})
    assert services.participant_place(participant=other, traits=Traits(**P06))


def turned_away_page(study, pid: str) -> str:
    """What someone placed in P06 reads once its two places are taken."""
    for _ in range(2):
        services.participant_place(participant=services.participant_consent(
            study=study, ids={}), traits=Traits(**P06))
    client = Client()
    client.post(f"/studies/{study.pk}/consent/",
                {"agree": "on"} | ({"PROLIFIC_PID": pid} if pid else {}))
    participant = StudyParticipant.objects.order_by("-pk").first()
    assert not services.participant_place(participant=participant, traits=Traits(**P06))
    return client.get(f"/studies/{study.pk}/go/").content.decode()


def test_a_platform_participant_turned_away_is_told_to_return_the_study(open_study):
    page = turned_away_page(open_study, "p9")
    assert "enough readers like you" in page and "Return submission" in page
    assert "nothing more to do" not in page


def test_someone_turned_away_without_a_platform_has_nothing_more_to_do(open_study):
    page = turned_away_page(open_study, "")
    assert "enough readers like you" in page and "nothing more to do" in page
    assert "Return submission" not in page


def test_a_study_with_a_screened_out_link_sends_the_turned_away_there(open_study):
    url = "https://app.prolific.example/submissions/complete?cc=NOCODE"
    ReadingStudy.objects.filter(pk=open_study.pk).update(screened_out_url=url)
    page = turned_away_page(open_study, "p9")
    assert f'href="{url}"' in page and "enough readers" in page


def test_a_dutch_platform_participant_turned_away_is_told_to_return_the_study(open_study):
    ReadingStudy.objects.filter(pk=open_study.pk).update(language="nl")
    page = turned_away_page(open_study, "p9")
    assert "genoeg lezers" in page and "geef dit onderzoek daar terug" in page


def test_a_platform_id_that_is_not_an_id_is_refused_by_name(open_study, client):
    response = client.get(f"/studies/{open_study.pk}/", {"PROLIFIC_PID": "x" * 300})
    assert response.status_code == 400 and "PROLIFIC_PID: not an id" in response.content.decode()


def test_too_fast_and_inattentive_readers_are_kept_counted_and_left_out(open_study, client,
                                                                       monkeypatch):
    from audits_app.calibration.studies import simulation

    # The pages place readers with an unseeded draw; here each is given something to read
    # (the second reader of P06 was once drawn no text in every scenario, in CI).
    place = services.participant_place
    draws = iter(range(100))
    monkeypatch.setattr(services, "participant_place", lambda **kwargs: place(
        **kwargs, rng=SomethingToReadDrawn(next(draws))))
    person(open_study, seed=3)
    original = simulation.TOO_FAST_SHARE
    simulation.TOO_FAST_SHARE = 1.0
    try:
        person(open_study, seed=4)
    finally:
        simulation.TOO_FAST_SHARE = original
    simulation.INATTENTIVE_SHARE, saved = 1.0, simulation.INATTENTIVE_SHARE
    try:
        person(open_study, seed=5, traits=P06 | {"trust_in_media": "low"})  # P03
    finally:
        simulation.INATTENTIVE_SHARE = saved
    Client().post(f"/studies/{open_study.pk}/consent/", {"agree": "on"})  # never goes on
    hurried = StudyParticipant.objects.order_by("pk")[1]
    assert hurried.readings.exclude(stimulus__kind="none").exists()
    reasons = selectors.study_progress(open_study, simulated=False)["reasons"]
    assert reasons[Exclusion.TOO_FAST] >= 1 and reasons[Exclusion.ATTENTION] >= 1
    assert reasons[Exclusion.INCOMPLETE] == 1
    assert StudyParticipant.objects.count() == 4
    readers = {row["reader"] for row in selectors.study_responses(open_study, simulated=False)}
    assert len(readers) == 1  # only the careful one is in what figures read


def test_a_closed_study_takes_no_one_and_a_draft_is_not_found(study, publisher, client):
    assert client.get(f"/studies/{study.pk}/").status_code == 404
    study_approve(study, publisher)
    services.study_open(study=study, user=publisher)
    services.study_close(study=study, user=publisher, reason="Done.")
    response = client.post(f"/studies/{study.pk}/consent/", {"agree": "on"})
    assert response.status_code == 403 and not StudyParticipant.objects.exists()
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert "not taking participants" in page and "Staff view" not in page


def test_a_dutch_release_gets_dutch_pages(open_study, client):
    type(open_study).objects.filter(pk=open_study.pk).update(language="nl")
    html = client.get(f"/studies/{open_study.pk}/").content.decode()
    assert '<html lang="nl">' in html and "Ik heb het bovenstaande gelezen" in html


def test_an_abandoned_session_gives_its_place_back_after_a_while(open_study):
    from datetime import timedelta

    from django.utils import timezone

    traits = Traits(**P06)
    leavers = [services.participant_consent(study=open_study, ids={}) for _ in range(2)]
    for leaver in leavers:  # P06 holds two places: both taken, neither finished
        assert services.participant_place(participant=leaver, traits=traits)
    late = services.participant_consent(study=open_study, ids={})
    assert not services.participant_place(participant=late, traits=traits)
    StudyParticipant.objects.filter(pk=leavers[0].pk).update(
        placed_at=timezone.now() - services.PLACE_HELD - timedelta(minutes=1))
    later = services.participant_consent(study=open_study, ids={})
    assert services.participant_place(participant=later, traits=traits)
    assert StudyQuota.objects.get(study=open_study, position="P06").assigned == 2
    leavers[0].refresh_from_db()
    assert selectors.participant_step(leavers[0]).kind == "expired"
    assert Exclusion.INCOMPLETE in selectors.participant_exclusions(leavers[0])


def careless(study, seed: int, *, too_fast: bool = False, inattentive: bool = False):
    from audits_app.calibration.studies import simulation

    saved = simulation.TOO_FAST_SHARE, simulation.INATTENTIVE_SHARE
    simulation.TOO_FAST_SHARE = 1.0 if too_fast else 0.0
    simulation.INATTENTIVE_SHARE = 1.0 if inattentive else 0.0
    try:
        return person(study, seed=seed)
    finally:
        simulation.TOO_FAST_SHARE, simulation.INATTENTIVE_SHARE = saved


def test_a_session_that_ends_excluded_gives_its_place_back(open_study):
    # P06 wants two readers: the two careless ones do not count towards them.
    assert careless(open_study, 1, too_fast=True).completed
    assert careless(open_study, 2, inattentive=True).completed
    assert StudyQuota.objects.get(study=open_study, position="P06").assigned == 0
    assert person(open_study, seed=3).completed and person(open_study, seed=4).completed
    assert not person(open_study, seed=5).completed  # now P06 is full
    row = next(row for row in selectors.study_progress(open_study, simulated=False)[
        "positions"] if row["position"] == "P06")
    assert (row["target"], row["assigned"], row["completed"], row["excluded"],
            row["included"], row["given_back"]) == (2, 2, 4, 2, 2, 2)


def test_a_place_given_back_after_a_while_is_not_given_back_again_on_completion(open_study):
    from datetime import timedelta

    from django.utils import timezone

    client = Client()
    client.post(f"/studies/{open_study.pk}/consent/", {"agree": "on"})
    slow = StudyParticipant.objects.get()
    assert services.participant_place(participant=slow, traits=Traits(**P06))
    StudyParticipant.objects.filter(pk=slow.pk).update(
        placed_at=timezone.now() - services.PLACE_HELD - timedelta(minutes=1))
    assert person(open_study, seed=2).completed  # its placement gives the slow one's back
    for reading in slow.readings.all():  # the slow one answers after all, too fast
        services.reading_baseline(reading=reading, attitude=[4, 4, 4])
        services.reading_read(reading=reading)
        services.reading_answer(reading=reading, attitude=[4, 4, 4],
                                knowledge=[None] * 4, attention=2)
    slow.refresh_from_db()
    assert slow.completed_at is not None and Exclusion.TOO_FAST in slow.exclusions
    assert StudyQuota.objects.get(study=open_study, position="P06").assigned == 1


def test_simulated_readers_do_not_use_up_peoples_places(open_study):
    traits = Traits(**P06)
    for _ in range(2):  # the simulated crowd fills P06's two places for simulated readers
        bot = services.participant_consent(study=open_study, ids={}, simulated=True)
        assert services.participant_place(participant=bot, traits=traits)
    extra = services.participant_consent(study=open_study, ids={}, simulated=True)
    assert not services.participant_place(participant=extra, traits=traits)
    assert person(open_study, seed=1).completed and person(open_study, seed=2).completed
    assert not person(open_study, seed=3).completed  # people's two places are taken now
    quota = StudyQuota.objects.get(study=open_study, position="P06")
    assert (quota.assigned, quota.simulated_assigned) == (2, 2)
    rows = {simulated: next(row for row in selectors.study_progress(
        open_study, simulated=simulated)["positions"] if row["position"] == "P06")
        for simulated in (False, True)}
    assert rows[False]["assigned"] == 2 and rows[True]["assigned"] == 2


def test_the_studys_page_says_before_consent_when_every_place_is_taken(open_study, client):
    StudyQuota.objects.filter(study=open_study).update(simulated_assigned=F("target"))
    page = client.get(f"/studies/{open_study.pk}/").content.decode()
    assert 'name="agree"' in page and "Every place" not in page  # simulated: nobody's place
    assert "Places are full for some" not in page
    StudyQuota.objects.filter(study=open_study, position="P06").update(assigned=F("target"))
    page = client.get(f"/studies/{open_study.pk}/").content.decode()
    assert 'name="agree"' in page and "Places are full for some kinds of reader" in page
    StudyQuota.objects.filter(study=open_study).update(assigned=F("target"))
    page = client.get(f"/studies/{open_study.pk}/?PROLIFIC_PID=abc").content.decode()
    assert "Every place in this study is taken" in page and 'name="agree"' not in page
    assert "Return submission" in page


def test_the_step_counter_counts_the_steps_this_reader_goes_through(open_study):
    participant = services.participant_consent(study=open_study, ids={})
    assert services.participant_place(participant=participant, traits=Traits(**P06))
    arms = {reading.stimulus.kind for reading in participant.readings.all()}
    if "none" not in arms:  # give the first scenario the no-text arm
        first = participant.readings.order_by("order").first()
        none = open_study.stimuli.get(scenario_version=first.scenario_version_id, kind="none")
        StudyReading.objects.filter(pk=first.pk).update(stimulus=none)
    readings = list(participant.readings.order_by("order"))
    expected_total = 1 + sum(2 if r.stimulus.kind == "none" else 3 for r in readings)
    seen = []
    while (step := selectors.participant_step(participant)).kind != "done":
        seen.append((step.number, step.total))
        reading = step.reading
        if step.kind == "baseline":
            services.reading_baseline(reading=reading, attitude=[4, 4, 4])
        elif step.kind == "read":
            services.reading_show(reading=reading)
            services.reading_read(reading=reading)
        else:
            services.reading_answer(reading=reading, attitude=[4, 4, 4],
                                    knowledge=[None] * 4, attention=2)
        participant.refresh_from_db()
    assert seen == [(number, expected_total) for number in range(2, expected_total + 1)]


def test_the_migration_moves_places_the_simulated_crowd_holds_out_of_peoples_count(open_study):
    import importlib

    from django.apps import apps

    migration = importlib.import_module(
        "audits_app.migrations.0018_study_quota_simulated_places")
    traits = Traits(**P06)
    bot = services.participant_consent(study=open_study, ids={}, simulated=True)
    assert services.participant_place(participant=bot, traits=traits)
    assert person(open_study, seed=1).completed
    # As a database from before the split counted them: both places as people's.
    StudyQuota.objects.filter(study=open_study, position="P06").update(
        assigned=2, simulated_assigned=0)
    migration.simulated_places_apart(apps, None)
    quota = StudyQuota.objects.get(study=open_study, position="P06")
    assert (quota.assigned, quota.simulated_assigned) == (1, 1)


class Published:
    """Stands for `same_words.public_elsewhere`'s index: these bodies are public elsewhere."""

    def __init__(self, bodies: set[str]) -> None:
        self.bodies = bodies

    def finds(self, scenario: str, body: str) -> bool:
        return body in self.bodies


def test_a_text_whose_words_became_public_since_the_draw_is_given_to_no_reader(
        open_study, client, monkeypatch):
    """A release published after the study was made may show one of its texts' words with
    the writer (the re-check's rc.0 did). From then on no reader is given it: not a reader
    placed later, nor one placed before who has not been shown it yet (they get another
    blind text of that scenario, or its control text); a text already shown stays."""
    from audits_app.models import StudyStimulus

    earlier = services.participant_consent(study=open_study, ids={})
    assert services.participant_place(participant=earlier, traits=Traits(**P06),
                                      rng=TextsDrawn(3))
    drawn = {reading.stimulus_id for reading in earlier.readings.all()}
    texts = StudyStimulus.objects.filter(study=open_study, kind=StudyStimulus.Kind.TEXT)
    exposed = set(texts.filter(pk__in=drawn).values_list("generation_id", flat=True))
    exposed |= set(texts.values_list("generation_id", flat=True)[:len(texts) // 2])
    assert exposed
    bodies = {text for text in texts.filter(generation_id__in=exposed)
              .values_list("generation__text", flat=True)}
    monkeypatch.setattr(services, "public_elsewhere", lambda code, scenarios: Published(bodies))
    # By their words: a text with the same words as an exposed one is exposed with it.
    exposed_stimuli = {pk for pk, text in texts.values_list("pk", "generation__text")
                       if text in bodies}
    assert services.stimuli_findable(open_study.pk) == exposed_stimuli

    later = services.participant_consent(study=open_study, ids={})
    assert services.participant_place(participant=later, traits=Traits(**P06))
    assert not {r.stimulus_id for r in later.readings.all()} & exposed_stimuli

    # The earlier reader, at their first text's page, is shown another one.
    from django.core import signing

    from audits_app.calibration.studies.views import COOKIE, COOKIE_SALT, _stimulus_text

    readings = list(earlier.readings.select_related("stimulus").order_by("order"))
    first = next(reading for reading in readings if reading.stimulus.kind == "text")
    for before in readings[:readings.index(first)]:  # answered, as the reader went on
        services.reading_baseline(reading=before, attitude=[4, 4, 4])
        services.reading_show(reading=before)
        services.reading_answer(reading=before, attitude=[4, 4, 4], knowledge=[0, 0, 0, 0],
                                attention=1 if before.order == 0 else None)
    services.reading_baseline(reading=first, attitude=[4, 4, 4])
    name = COOKIE.format(open_study.pk)
    client.cookies[name] = signing.get_cookie_signer(salt=name + COOKIE_SALT).sign(earlier.key)
    def opening(text: str) -> str:  # as the page writes it: paragraphs, escaped
        return html.escape(text.strip().splitlines()[0])

    page = client.get(f"/studies/{open_study.pk}/go/").content.decode()
    first.refresh_from_db()
    assert first.shown_at is not None and first.stimulus_id not in exposed_stimuli
    assert opening(_stimulus_text(first)) in page
    for stimulus in StudyStimulus.objects.filter(pk__in=exposed_stimuli, kind="text"):
        assert opening(stimulus.generation.text) not in page
    for reading in earlier.readings.select_related("stimulus"):
        kind = reading.stimulus.kind
        swapped = services.reading_stimulus_blind(reading=reading)
        assert swapped.stimulus_id not in exposed_stimuli
        assert swapped.scenario_version_id == reading.scenario_version_id
        assert (swapped.stimulus.kind == "none") == (kind == "none")


def test_a_text_already_shown_stays_the_readings_text(open_study, monkeypatch):
    from django.utils import timezone

    from audits_app.models import StudyStimulus

    participant = services.participant_consent(study=open_study, ids={})
    assert services.participant_place(participant=participant, traits=Traits(**P06),
                                      rng=TextsDrawn(3))
    reading = participant.readings.filter(stimulus__kind=StudyStimulus.Kind.TEXT).first()
    assert reading is not None
    StudyReading.objects.filter(pk=reading.pk).update(shown_at=timezone.now())
    reading.refresh_from_db()
    monkeypatch.setattr(services, "public_elsewhere",
                        lambda code, scenarios: Published({reading.stimulus.generation.text}))
    assert services.reading_stimulus_blind(reading=reading).stimulus_id == reading.stimulus_id
