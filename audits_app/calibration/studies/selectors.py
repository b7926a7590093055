"""Reads of reading studies: where a participant is on their path, staff progress per reading
position and arm, and the responses as the human-reader CSV has them.

Excluded participants (failed attention check, too fast, duplicate, unfinished, turned away
by a full quota) are kept and counted here, and left out of `study_responses(included=True)`,
which is all the figures read. Simulated participants are kept apart the same way: a caller
asks for one kind or the other, never both.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import timedelta

from django.utils import timezone

from audits_app.models import (
    Exclusion,
    ReadingStudy,
    StudyParticipant,
    StudyQuota,
    StudyReading,
    StudyStimulus,
)

# A session unfinished this long after placement gives its place back to the quota, so that
# people who leave halfway do not keep others out; the session is kept and counted.
PLACE_HELD = timedelta(hours=2)


@dataclasses.dataclass(frozen=True)
class Step:
    """What a participant does next: `already` (a duplicate), `profile`, `full`, `expired`
    (left unfinished too long: the place went to someone else), `baseline`, `read`,
    `answers` or `done`; with the reading it is about and its place in the path."""

    kind: str
    reading: StudyReading | None = None
    number: int = 0
    total: int = 0


def participant_step(participant: StudyParticipant) -> Step:
    if participant.duplicate_of_id:
        return Step("already")
    if participant.turned_away:
        return Step("full")
    if not participant.position:
        return Step("profile", number=1, total=0)
    if participant.completed_at:
        return Step("done")
    if participant.place_released_at:
        return Step("expired")
    readings = list(participant.readings.select_related(
        "stimulus__generation", "scenario_version").order_by("order"))
    # The steps this reader goes through: the profile, then per scenario the baseline, the
    # text (none in the no-text arm) and the answers.
    path = [(kind, reading) for reading in readings
            for kind in ("baseline", "read", "answers")
            if kind != "read" or reading.stimulus.kind != StudyStimulus.Kind.NONE]
    total = 1 + len(path)
    for number, (kind, reading) in enumerate(path, start=2):
        if kind == "baseline" and reading.baseline is None \
                or kind == "read" and reading.read_at is None \
                or kind == "answers" and reading.answered_at is None:
            return Step(kind, reading, number, total)
    return Step("done")


def participant_exclusions(participant: StudyParticipant) -> list[str]:
    """Every reason the participant's answers stay out of figures (none: included)."""
    reasons = list(participant.exclusions)
    if participant.completed_at is None and not participant.turned_away \
            and Exclusion.DUPLICATE not in reasons:
        reasons.append(Exclusion.INCOMPLETE)
    return reasons


def positions_full(study: ReadingStudy) -> tuple[int, int]:
    """(positions whose places for people are all taken, positions): a person's position is
    known only from their profile answers, so the study's page can say before consent that
    every place is taken, or that some readers may find theirs full. A place held past
    `PLACE_HELD` counts as free: the next placement there gives it back."""
    stale = Counter(StudyParticipant.objects.filter(
        study=study, simulated=False, turned_away=False, completed_at__isnull=True,
        place_released_at__isnull=True, placed_at__lt=timezone.now() - PLACE_HELD)
        .values_list("position", flat=True))
    quotas = list(StudyQuota.objects.filter(study=study))
    full = sum(quota.assigned - stale[quota.position] >= quota.target for quota in quotas)
    return full, len(quotas)


def study_progress(study: ReadingStudy, *, simulated: bool) -> dict:
    """Per reading position and per arm: started, completed and excluded (with reasons),
    against the quota; and the counts of everyone turned away or duplicated."""
    participants = list(StudyParticipant.objects.filter(study=study, simulated=simulated))
    quotas = {q.position: q for q in StudyQuota.objects.filter(study=study)}
    positions = {position: Counter() for position in quotas}
    arms: dict[str, Counter] = {}
    reasons: Counter = Counter()
    arm_of = _arms_by_participant(study, simulated)
    for participant in participants:
        excluded = participant_exclusions(participant)
        reasons.update(excluded)
        if participant.turned_away:
            reasons["turned_away"] += 1
            continue
        if not participant.position:
            continue
        row = positions.setdefault(participant.position, Counter())
        _tally(row, participant, excluded)
        for arm in arm_of.get(participant.pk, []):
            _tally(arms.setdefault(arm, Counter()), participant, excluded)
    return {
        "positions": [{"position": position, "target": quotas[position].target,
                       "assigned": getattr(quotas[position],
                                           StudyQuota.places_field(simulated)), **counts}
                      for position, counts in sorted(positions.items()) if position in quotas],
        "arms": [{"arm": arm, **counts} for arm, counts in sorted(arms.items())],
        "participants": len(participants),
        "included": sum(1 for p in participants if p.included),
        "reasons": dict(reasons),
    }


def _tally(row: Counter, participant: StudyParticipant, excluded: list[str]) -> None:
    """A session that ends excluded, or is left unfinished too long, gives its place back
    (`services._complete`, `services._places_release`): places taken are then the sessions
    still holding one, the included and those under way."""
    row["started"] += 1
    row["completed"] += participant.completed_at is not None
    row["excluded"] += bool(excluded)
    row["included"] += participant.included
    row["given_back"] += participant.place_released_at is not None


def _arms_by_participant(study: ReadingStudy, simulated: bool) -> dict[int, list[str]]:
    arms: dict[int, list[str]] = {}
    for participant_id, kind, model in StudyReading.objects.filter(
            participant__study=study, participant__simulated=simulated).values_list(
            "participant_id", "stimulus__kind", "stimulus__model__openrouter_id"):
        arms.setdefault(participant_id, []).append(model if kind == "text" else kind)
    return arms


def study_responses(study: ReadingStudy, *, simulated: bool,
                    included: bool = True) -> list[dict]:
    """One row per reader and stimulus, as the human-reader CSV has them: every reader's
    no-text row (the attitude they gave knowing only the organisation; for the no-text arm
    also their knowledge answers, given without a text), and their text or control row.
    Readers are numbered within the study (`S<study>-R<n>`, `SIM-S<study>-R<n>` for the
    simulated crowd): no key, hash or id of theirs."""
    participants = StudyParticipant.objects.filter(
        study=study, simulated=simulated, completed_at__isnull=False).order_by("pk")
    if included:
        participants = participants.filter(exclusions=[], turned_away=False)
    numbers = {pk: n for n, pk in enumerate(participants.values_list("pk", flat=True), 1)}
    rows = []
    readings = StudyReading.objects.filter(participant__in=numbers).select_related(
        "stimulus", "scenario_version__scenario").order_by("participant_id", "order")
    for reading in readings:
        reader = f"{'SIM-' if simulated else ''}S{study.pk}-R{numbers[reading.participant_id]}"
        slug = reading.scenario_version.scenario.slug
        no_text = reading.stimulus.kind == StudyStimulus.Kind.NONE
        rows.append({"scenario": slug, "stimulus": "none", "reader": reader,
                     "generation_id": None, "attitude": list(reading.baseline),
                     "knowledge": list(reading.knowledge) if no_text else [None] * 4})
        if not no_text:
            rows.append({"scenario": slug, "stimulus": reading.stimulus.import_key,
                         "reader": reader, "generation_id": reading.stimulus.generation_id,
                         "attitude": list(reading.attitude),
                         "knowledge": list(reading.knowledge)})
    return rows
