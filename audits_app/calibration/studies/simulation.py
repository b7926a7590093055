"""A simulated crowd for a reading study (`manage.py reading_study_simulate CODE N`).

Each simulated participant goes through the real HTTP path (Django's test client against the
site's own URLs and views: consent, profile, baseline, text, answers, completion), from an
address of its own in the benchmarking range 198.18.0.0/15, so that rate limits count it as
they would count a person. It consents with a token signed by the site's key, so its rows are
marked simulated; every figure, count and CSV keeps simulated participants apart from people.

A simulated person of a reading position answers as the release's simulated public answered
the same stimulus in that position, with noise: people's figure then follows the panel's by
construction. It demonstrates the pages and the pipeline and measures nothing. A few read too
fast or miss the attention check, so exclusions show. The time on a text cannot be waited out
in a demo, so a simulated reader's text is marked as sent that many seconds earlier (as the
arena's demo voters' showings are).
"""

from __future__ import annotations

import dataclasses
import re
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.db.models import F
from django.test import Client

from audits_app.calibration.studies import views
from audits_app.calibration.studies.selectors import participant_step
from audits_app.models import ReadingStudy, StudyParticipant, StudyQuota, StudyReading
from runs_app.models import ReaderResponse, ReplyOutcome, WorkStatus
from runs_app.readers import load_panel

STEP = re.compile(r'name="step" value="([^"]*)"')
RADIO = re.compile(r'type="radio" name="([^"]+)" value="([^"]+)"')
CODE = re.compile(r'id="completion-code">([A-Z0-9]+)<')
TOO_FAST_SHARE = 0.05
INATTENTIVE_SHARE = 0.05
DONT_KNOW_SHARE = 0.1


class SimulationError(RuntimeError):
    """The path did not go as a person's would: the message says where."""


@dataclasses.dataclass(frozen=True)
class Walked:
    completed: bool
    code: str
    position: str


def simulated_crowd(study: ReadingStudy, count: int, *, seed: int | None = None,
                    platform: bool = True) -> list[Walked]:
    """`count` simulated participants, one after another; each returns how it ended."""
    rng = np.random.default_rng(study.seed if seed is None else seed)
    config = study.release.parsed_config()
    positions = load_panel(config.panel, config.language).positions
    panel = _panel_answers(study)
    start = StudyParticipant.objects.filter(study=study, simulated=True).count()
    walked = []
    for index in range(start, start + count):
        # A crowd recruited to the quotas: a position with room, while any has room.
        room = set(StudyQuota.objects.filter(study=study,
                                             simulated_assigned__lt=F("target"))
                   .values_list("position", flat=True))
        open_positions = [p for p in positions if p.id in room] or positions
        position = open_positions[int(rng.integers(len(open_positions)))]
        walked.append(walk(study, position.traits.model_dump(), rng, panel, index,
                           platform_id=f"SIM-{study.pk}-{index}" if platform else ""))
    return walked


def _client(index: int) -> Client:
    host = next((h for h in settings.ALLOWED_HOSTS if h not in ("*", "")), "localhost")
    address = f"198.18.{index // 250 % 250}.{index % 250 + 1}"
    return Client(HTTP_HOST=host.lstrip("."), REMOTE_ADDR=address,
                  HTTP_X_FORWARDED_FOR=address)


def walk(study: ReadingStudy, traits: dict, rng: np.random.Generator, panel: dict,
         index: int, platform_id: str = "", client: Client | None = None,
         simulated: bool = True) -> Walked:
    """One participant through the pages, answering as `_answer` decides (tests walk as
    people, `simulated=False`)."""
    client = client or _client(index)
    first = settings.STUDY_PLATFORM_PARAMETERS[0]
    ids = {first: platform_id} if platform_id else {}
    token = views.simulated_token(study) if simulated else ""
    response = client.post(f"/studies/{study.pk}/consent/", {"agree": "on", "simulated": token,
                                                             **ids})
    if response.status_code != 302:
        raise SimulationError(f"consent answered {response.status_code}")
    too_fast = rng.random() < TOO_FAST_SHARE
    attentive = rng.random() >= INATTENTIVE_SHARE
    for _ in range(40):
        response = client.get(f"/studies/{study.pk}/go/")
        if response.status_code == 302:
            break
        html = response.content.decode()
        step = STEP.search(html)
        if step is None:  # full, or a duplicate: nothing more to do
            return Walked(False, "", "")
        cookie = client.cookies[views.COOKIE.format(study.pk)].value
        data = {"step": step.group(1)}
        participant = StudyParticipant.objects.get(key=cookie.split(":")[0])
        data |= _answer(step.group(1), html, participant, traits, rng, panel, too_fast,
                        attentive)
        client.post(f"/studies/{study.pk}/go/", data)
    done = client.get(f"/studies/{study.pk}/done/")
    code = CODE.search(done.content.decode())
    return Walked(code is not None, code.group(1) if code else "", participant.position)


def _answer(step: str, html: str, participant: StudyParticipant, traits: dict,
            rng: np.random.Generator, panel: dict, too_fast: bool, attentive: bool) -> dict:
    kind = step.split("-")[0]
    if kind == "profile":
        return dict(traits)
    reading = participant_step(participant).reading
    if kind == "read":
        seconds = rng.uniform(1, 4) if too_fast else rng.uniform(30, 150)
        StudyReading.objects.filter(pk=reading.pk).update(
            shown_at=F("shown_at") - timedelta(seconds=float(seconds)))
        return {}
    fields = list(dict.fromkeys(name for name, _ in RADIO.findall(html)))
    key = "none" if kind == "baseline" else reading.stimulus.import_key
    attitude, knowledge = panel.get((reading.scenario_version_id, key, participant.position),
                                    ([4, 4, 4], [None] * 4))
    answers = {}
    for name in fields:
        if name.startswith("A"):
            mean = attitude[int(name[1:]) - 1] if int(name[1:]) <= len(attitude) else 4
            answers[name] = str(int(np.clip(round(mean + rng.normal(0, 0.8)), 1, 7)))
        elif name.startswith("K"):
            given = knowledge[int(name[1:]) - 1] if int(name[1:]) <= len(knowledge) else None
            answers[name] = ("dk" if given is None or rng.random() < DONT_KNOW_SHARE
                             else str(given))
        elif name == "attention":
            answers[name] = "2" if attentive else "5"
    missing = [name for name in fields if name not in answers]
    if missing:
        raise SimulationError(f"no simulated answer for {', '.join(missing)} at step {step}")
    return answers


def _panel_answers(study: ReadingStudy) -> dict:
    """(scenario version, stimulus key, position) -> the panel's scored attitude and
    knowledge answers, for the stimuli of the study."""
    rows = ReaderResponse.objects.filter(
        release=study.release, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
        scenario_version__in=study.stimuli.values("scenario_version")).values_list(
        "scenario_version_id", "stimulus", "stimulus_key", "generation_id", "position",
        "attitude", "knowledge")
    answers = {}
    for version, stimulus, key, generation, position, attitude, knowledge in rows:
        name = str(generation) if generation else (key or stimulus)
        answers[(version, name, position)] = (attitude, knowledge)
    return answers
