"""Writes of reading studies (DESIGN section 10): creating one on a published release with its
sampled stimuli and quotas, opening it on an approved ethics review and closing it, and a
participant's path: consent, placement in a reading position, one stimulus per scenario
assigned within the quotas, answers, and completion with the reasons for any exclusion.
"""

from __future__ import annotations

import dataclasses
import random
import secrets
from collections import defaultdict
from datetime import datetime

import numpy as np
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from audits_app.arena.selectors import arena_texts
from audits_app.arena.services import ArenaError, can_manage
from audits_app.calibration.studies import identity
from audits_app.calibration.studies.selectors import PLACE_HELD
from audits_app.models import (
    EthicsReview,
    Exclusion,
    Publication,
    ReadingStudy,
    StudyParticipant,
    StudyQuota,
    StudyReading,
    StudyStimulus,
    StudyTextsReveal,
)
from audits_app.pages.viewer import load_snapshot, public_scenario_slugs, revealed_key
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from audits_app.publication.same_words import findable_elsewhere, public_elsewhere
from audits_app.publication.snapshot_model import ReleaseSnapshot, TextEntry
from runs_app.models import Generation, Release
from runs_app.readers import PanelFile, load_panel
from runs_app.traits import Traits
from scenarios_app.models import Scenario

# A completion code is short enough to type, from letters that are not mistaken for digits.
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
ATTENTION_ANSWER = 2  # the attention check asks for this answer (words.PAGE "attention")


class StudyError(ArenaError):
    """Refused: the message says what is wrong and where."""


# ---------------------------------------------------------------------------------------------
# Staff: create, open, close
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StudyPlan:
    title: str
    scenarios: list[str]  # slugs
    seed: int
    texts_per_cell: int = 1
    readers_per_position: int = 10
    min_seconds_on_text: float = 15.0
    readers_for_figure: int = 24
    completion_url: str = ""
    screened_out_url: str = ""


def study_create(*, release: Release, user, plan: StudyPlan) -> ReadingStudy:
    """A draft study on a published release: texts per model x condition of each chosen public
    scenario sampled with the plan's seed, the control text and the no-text arm of each, and a
    quota per reading position of the release's panel."""
    _require_manager(user)
    problems = study_plan_problems(release=release, plan=plan)
    if problems:
        raise StudyError("; ".join(problems))
    texts = study_texts(load_snapshot(release.publication))
    config = release.parsed_config()
    with transaction.atomic():
        study = ReadingStudy.objects.create(
            release=release, title=plan.title.strip(), language=config.language,
            texts_per_cell=plan.texts_per_cell, seed=plan.seed,
            readers_per_position=plan.readers_per_position,
            min_seconds_on_text=plan.min_seconds_on_text,
            readers_for_figure=plan.readers_for_figure, completion_url=plan.completion_url,
            screened_out_url=plan.screened_out_url,
            created_by=user)
        study.scenarios.set(Scenario.objects.filter(slug__in=plan.scenarios))
        _stimuli_create(study, [text for text in texts if text.scenario in plan.scenarios])
        StudyQuota.objects.bulk_create([
            StudyQuota(study=study, position=position.id, target=plan.readers_per_position)
            for position in load_panel(config.panel, config.language).positions])
    return study


def study_plan_problems(*, release: Release | None, plan: StudyPlan) -> list[str]:
    """What is wrong with a plan, one `field: message` each (the admin form shows them)."""
    problems = []
    publication = (Publication.objects.filter(release=release).first()
                   if release is not None else None)
    if publication is None:
        problems.append("release: choose a published release: a reading study reads one")
    if not plan.title.strip():
        problems.append("title: required")
    blind = _blind_problem(publication) if publication is not None else ""
    if blind:
        problems.append(f"release: {blind}")
    if not plan.scenarios:
        problems.append("scenarios: choose at least one")
    elif publication is not None and not blind:
        snapshot = load_snapshot(publication)
        held = {text.scenario for text in study_texts(snapshot)}
        problems += [f"scenarios: {slug} {_not_readable(snapshot, slug)}"
                     for slug in plan.scenarios if slug not in held]
    if plan.texts_per_cell < 1:
        problems.append("texts_per_cell: at least 1")
    if plan.readers_per_position < 1:
        problems.append("readers_per_position: at least 1")
    if plan.min_seconds_on_text < 0:
        problems.append("min_seconds_on_text: must not be negative")
    if plan.completion_url and not plan.completion_url.startswith("https://"):
        problems.append("completion_url: must start with https://")
    if plan.screened_out_url and not plan.screened_out_url.startswith("https://"):
        problems.append("screened_out_url: must start with https://")
    return problems


def _not_readable(snapshot: ReleaseSnapshot, slug: str) -> str:
    """Why a study of this release can give no text of scenario `slug` to read, in words
    that follow its name: not a scenario of the release, held out, no cell held for reading
    studies, no complied and scored text in them, or every such text findable by its words."""
    code = snapshot.release.code
    visibility = {entry.slug: entry.visibility for entry in snapshot.scenarios}
    if slug not in visibility:
        return f"is not a scenario of {code}"
    if slug not in public_scenario_slugs(snapshot):
        return (f"is a held-out scenario of {code}: its texts are never shown, so no study "
                f"gives them to read")
    cells = {cell for cell in held_cells(snapshot, Holder.READING_STUDIES) if cell[0] == slug}
    if not cells:
        return (f"holds no cells for reading studies: {code}'s `reading_studies.held_share` "
                f"drew other scenarios at publication, and only held texts may be read")
    texts = [text for text in _held_texts(snapshot) if text.scenario == slug]
    if not texts:
        return (f"has no text in its {len(cells)} cells held for reading studies that complied "
                f"and was scored")
    return (f"is held for reading studies, but every one of its {len(texts)} held "
            f"text{'s' if len(texts) != 1 else ''} has words that a public text outside "
            f"those cells also has (here or in another published release): a reader could "
            f"find its writer by searching for them, so no study gives "
            f"{'them' if len(texts) != 1 else 'it'} to read")


def study_texts(snapshot: ReleaseSnapshot) -> list[TextEntry]:
    """The texts a study may give to read: those the arena could show (a public scenario,
    complied, scored) in the cells the release holds for reading studies, which no public
    page, answer or archive shows until they are revealed (`publication.held_cells`), save
    those whose words a text outside these cells has (`study_texts_left_out`)."""
    findable = findable_elsewhere(snapshot, Holder.READING_STUDIES)
    return [text for text in _held_texts(snapshot) if text.id not in findable]


def study_texts_left_out(snapshot: ReleaseSnapshot, scenarios: list[str] | None = None) -> int:
    """How many texts of the cells held for reading studies (of `scenarios`, or all) no study
    gives to read because a text outside those cells has the same words, so that a reader
    could find its writer by searching for them (`publication.same_words`)."""
    findable = findable_elsewhere(snapshot, Holder.READING_STUDIES)
    return sum(1 for text in _held_texts(snapshot) if text.id in findable
               and (scenarios is None or text.scenario in scenarios))


def _held_texts(snapshot: ReleaseSnapshot) -> list[TextEntry]:
    held = held_cells(snapshot, Holder.READING_STUDIES)
    return [text for text in arena_texts(snapshot) if text_cell(text) in held]


def _blind_problem(publication: Publication) -> str:
    """Why a study of this release would not be blind ("" when it would be): a reader must
    not be able to find the text they read with its writer's name (DESIGN section 10)."""
    release = publication.release
    reveal = StudyTextsReveal.objects.filter(release=release).first()
    if reveal is not None:
        return (f"the texts {release.code} held for reading studies have been public since "
                f"{reveal.at:%Y-%m-%d}: a reader could look up who wrote what they read")
    if not held_cells(load_snapshot(publication), Holder.READING_STUDIES):
        return (f"{release.code} holds no cells for reading studies "
                f"(`reading_studies.held_share` is 0 in its file): every text of it is "
                f"public with its writer's name, so no reader of it would read blind")
    return ""


def _stimuli_create(study: ReadingStudy, texts: list[TextEntry]) -> None:
    """Per scenario, model and condition, `texts_per_cell` texts drawn with the study's seed
    (texts in id order first, so the same seed always draws the same texts)."""
    rng = np.random.default_rng(study.seed)
    cells: dict[tuple, list[int]] = defaultdict(list)
    for text in sorted(texts, key=lambda t: t.id):
        cells[(text.scenario, text.model, text.condition)].append(text.id)
    chosen = []
    for key in sorted(cells):
        ids = cells[key]
        count = min(study.texts_per_cell, len(ids))
        chosen += [int(pk) for pk in rng.choice(ids, size=count, replace=False)]
    generations = Generation.objects.filter(pk__in=chosen).select_related("model")
    stimuli = [StudyStimulus(study=study, scenario_version_id=g.scenario_version_id,
                             kind=StudyStimulus.Kind.TEXT, generation=g, model=g.model,
                             condition=g.condition) for g in generations]
    versions = {g.scenario_version_id for g in generations}
    for version_id in sorted(versions):
        stimuli += [StudyStimulus(study=study, scenario_version_id=version_id, kind=kind)
                    for kind in (StudyStimulus.Kind.CONTROL, StudyStimulus.Kind.NONE)]
    StudyStimulus.objects.bulk_create(stimuli)


def _require_manager(user) -> None:
    if not can_manage(user):
        raise StudyError("only a publisher creates, opens or closes a reading study")


def study_latest_review(study: ReadingStudy) -> EthicsReview | None:
    return (EthicsReview.objects.filter(study=study).order_by("-recorded_at", "-pk").first())


def study_open(*, study: ReadingStudy, user) -> ReadingStudy:
    """Open a draft or closed study; needs the latest ethics review of *this study* to
    approve it (the arena's approval does not cover a study)."""
    _require_manager(user)
    if study.is_open:
        raise StudyError(f"study {study.pk} is already open")
    blind = _blind_problem(study.release.publication)
    if blind:
        raise StudyError(f"study {study.pk} cannot open: {blind}")
    review = study_latest_review(study)
    if review is None or not review.approves:
        raise StudyError(f"study {study.pk} has no approved ethics review" if review is None
                         else f"the latest ethics review of study {study.pk} "
                              f"({review.reference}) is {review.get_decision_display().lower()}")
    ReadingStudy.objects.filter(pk=study.pk).update(
        status=ReadingStudy.Status.OPEN, review=review, opened_at=timezone.now(),
        closed_at=None, closed_reason="")
    study.refresh_from_db()
    return study


def study_close(*, study: ReadingStudy, user, reason: str) -> ReadingStudy:
    _require_manager(user)
    if not reason.strip():
        raise StudyError("say why the study closes (kept on the record)")
    if not study.is_open:
        raise StudyError(f"study {study.pk} is not open")
    ReadingStudy.objects.filter(pk=study.pk).update(
        status=ReadingStudy.Status.CLOSED, closed_at=timezone.now(), closed_reason=reason.strip())
    study.refresh_from_db()
    return study


def study_texts_reveal(*, release: Release, user, reason: str) -> StudyTextsReveal:
    """Make the texts the release holds for reading studies public, for good: refused while
    any of its studies is open, since its readers could then look up what they read. A
    study that has not opened yet can then never open (`study_open`)."""
    _require_manager(user)
    if not reason.strip():
        raise StudyError("say why the texts held for reading studies become public "
                         "(kept on the record)")
    open_studies = list(ReadingStudy.objects.filter(
        release=release, status=ReadingStudy.Status.OPEN).values_list("pk", flat=True))
    if open_studies:
        raise StudyError(f"study {', '.join(map(str, open_studies))} of {release.code} is "
                         f"open: close it first, its readers must not find what they read")
    try:
        with transaction.atomic():
            reveal = StudyTextsReveal.objects.create(release=release, by=user,
                                                     reason=reason.strip())
    except IntegrityError:
        raise StudyError(f"the texts {release.code} held for reading studies are public "
                         f"already") from None
    # Now and once more after the commit, so no request caches the state before it.
    cache.delete(revealed_key(release.pk))
    transaction.on_commit(lambda: cache.delete(revealed_key(release.pk)))
    return reveal


# ---------------------------------------------------------------------------------------------
# A participant's path
# ---------------------------------------------------------------------------------------------


def participant_consent(*, study: ReadingStudy, ids: dict[str, str], simulated: bool = False,
                        current: StudyParticipant | None = None) -> StudyParticipant:
    """A new participant. A platform id that took part already makes a duplicate: kept and
    counted (excluded, `duplicate_of` the first) but given nothing to read.

    `current` is the session the consenting browser holds already (its signed cookie): a
    form sent twice, or from two tabs, goes on with that session rather than turning the
    person into a duplicate of themselves. A session is only ever continued by the browser
    that holds its key, so another browser with the same platform id is still a duplicate."""
    hashes = identity.platform_hashes(study.pk, ids)
    if current is not None and _same_person(current, hashes["platform_id_hash"]):
        return current
    first = (StudyParticipant.objects.filter(study=study,
                                             platform_id_hash=hashes["platform_id_hash"]).first()
             if hashes["platform_id_hash"] else None)
    if first is None:
        try:
            with transaction.atomic():
                return StudyParticipant.objects.create(
                    study=study, key=secrets.token_hex(32), simulated=simulated, **hashes)
        except IntegrityError:  # the same id consenting twice at once: the other one won
            first = StudyParticipant.objects.get(study=study,
                                                 platform_id_hash=hashes["platform_id_hash"])
    return StudyParticipant.objects.create(
        study=study, key=secrets.token_hex(32), simulated=simulated, duplicate_of=first,
        exclusions=[Exclusion.DUPLICATE], platform_study_hash=hashes["platform_study_hash"],
        platform_session_hash=hashes["platform_session_hash"])


def _same_person(participant: StudyParticipant, platform_id_hash: str) -> bool:
    """The session was started with this platform id (or, like it, with none); a duplicate
    session counts as the id it duplicates, and stays a duplicate."""
    if participant.duplicate_of_id is not None:
        return participant.duplicate_of.platform_id_hash == platform_id_hash
    return participant.platform_id_hash == platform_id_hash


def position_for(panel: PanelFile, traits: Traits) -> str:
    """The reading position a person with these traits belongs to: the same trust in news
    media first (the trait the panel is built around), then the same age band (the panel
    crosses the two, one position each), then the most other traits in common."""
    answers = traits.model_dump()

    def distance(position) -> tuple[bool, bool, int, str]:
        theirs = position.traits.model_dump()
        others = sum(answers[name] != theirs[name] for name in answers
                     if name not in ("trust_in_media", "age_band"))
        # Ties (none in panel v1) go to the lower id.
        return (answers["trust_in_media"] != theirs["trust_in_media"],
                answers["age_band"] != theirs["age_band"], others, position.id)

    return min(panel.positions, key=distance).id


def participant_place(*, participant: StudyParticipant, traits: Traits,
                      rng: random.Random | None = None) -> bool:
    """Place the participant in a reading position and assign one stimulus per scenario at
    random among those its readers have been given least. False when the position's quota is
    full (the participant is kept, `turned_away`). People and the simulated crowd take places
    from counts of their own (`StudyQuota.places_field`): simulated readers never fill a
    position for people.

    The place is taken by a conditional UPDATE that succeeds only below the target: on
    PostgreSQL the row stays locked until commit, so participants of one position are placed
    one after another and the counts they read are current; SQLite takes its write lock at
    the same statement. The check constraint `study_quota_within_target` is the last guard.
    """
    study = participant.study
    config = study.release.parsed_config()
    position = position_for(load_panel(config.panel, config.language), traits)
    rng = rng or random.Random(secrets.randbits(64))
    with transaction.atomic():
        # Placed already (a repeated request, or a call retried after its commit): it holds
        # its place, and must not take a second one.
        if StudyParticipant.objects.select_for_update(of=("self",)).filter(
                pk=participant.pk, placed_at__isnull=False,
                place_released_at__isnull=True).exists():
            participant.refresh_from_db()
            return True
        _places_release(study, position, participant.simulated)
        places = StudyQuota.places_field(participant.simulated)
        taken = StudyQuota.objects.filter(study=study, position=position,
                                          **{f"{places}__lt": F("target")}).update(
            **{places: F(places) + 1})
        StudyParticipant.objects.filter(pk=participant.pk).update(
            profile=traits.model_dump(), position=position, turned_away=not taken,
            placed_at=timezone.now() if taken else None)
        if taken:
            _readings_create(participant, position, rng)
    participant.refresh_from_db()
    return bool(taken)


def _places_release(study: ReadingStudy, position: str, simulated: bool) -> None:
    """Give back the places of sessions of this kind in this position left unfinished for
    `PLACE_HELD`. Each is released by a conditional UPDATE, so two placements never release
    one twice."""
    stale = StudyParticipant.objects.filter(
        study=study, position=position, simulated=simulated, turned_away=False,
        completed_at__isnull=True, place_released_at__isnull=True,
        placed_at__lt=timezone.now() - PLACE_HELD)
    released = stale.update(place_released_at=timezone.now())
    if released:
        places = StudyQuota.places_field(simulated)
        StudyQuota.objects.filter(study=study, position=position).update(
            **{places: F(places) - released})


def stimuli_findable(study_id: int) -> set[int]:
    """The study's text stimuli whose words a reader can find, with the writer, on a public
    page now: a release published after the study was made may show the same words, or
    nearly (`publication.same_words`). The study drew its texts blind; these no longer are,
    so no reader is given one from now on (`_readings_create`, `reading_stimulus_blind`)."""
    rows = list(StudyStimulus.objects.filter(study=study_id, kind=StudyStimulus.Kind.TEXT)
                .values_list("pk", "scenario_version__scenario__slug", "generation__text",
                             "study__release__code"))
    if not rows:
        return set()
    # Only other releases can have changed: words the study's own release shows outside its
    # held cells kept the texts out of the draw already (`study_texts`).
    elsewhere = public_elsewhere(rows[0][3], frozenset(slug for _, slug, _, _ in rows))
    return {pk for pk, slug, text, _ in rows if elsewhere.finds(slug, text or "")}


def _given(study_id: int, position: str) -> dict[int, int]:
    """{stimulus id: readings of it} among the position's placed participants: the study
    gives each reader the stimuli given least so far."""
    return dict(StudyReading.objects.filter(
        participant__study=study_id, participant__position=position,
        participant__turned_away=False).values_list("stimulus").annotate(n=Count("pk")))


def _readings_create(participant: StudyParticipant, position: str, rng: random.Random) -> None:
    findable = stimuli_findable(participant.study_id)
    stimuli = [stimulus for stimulus in StudyStimulus.objects.filter(
        study=participant.study_id).order_by("pk") if stimulus.pk not in findable]
    given = _given(participant.study_id, position)
    by_scenario: dict[int, list[StudyStimulus]] = defaultdict(list)
    for stimulus in stimuli:
        by_scenario[stimulus.scenario_version_id].append(stimulus)
    versions = sorted(by_scenario)
    rng.shuffle(versions)
    readings = []
    for order, version_id in enumerate(versions):
        options = by_scenario[version_id]
        fewest = min(given.get(s.pk, 0) for s in options)
        chosen = rng.choice([s for s in options if given.get(s.pk, 0) == fewest])
        readings.append(StudyReading(participant=participant, stimulus=chosen,
                                     scenario_version_id=version_id, order=order))
    StudyReading.objects.bulk_create(readings)


def reading_stimulus_blind(*, reading: StudyReading) -> StudyReading:
    """Before a text is first shown: if its words have become findable with their writer
    since the reading was drawn (`stimuli_findable`), give the reading another text of the
    scenario that is still blind, or else its control text, the one given least in the
    reader's position. A text already shown stays as it was (its answers are about it)."""
    stimulus = reading.stimulus
    if reading.shown_at is not None or stimulus.kind != StudyStimulus.Kind.TEXT:
        return reading
    findable = stimuli_findable(stimulus.study_id)
    if stimulus.pk not in findable:
        return reading
    options = [option for option in StudyStimulus.objects.filter(
        study=stimulus.study_id, scenario_version=reading.scenario_version_id,
        kind__in=[StudyStimulus.Kind.TEXT, StudyStimulus.Kind.CONTROL]).order_by("pk")
        if option.pk not in findable]
    texts = [option for option in options if option.kind == StudyStimulus.Kind.TEXT]
    given = _given(stimulus.study_id, reading.participant.position)
    chosen = min(texts or options, key=lambda option: (given.get(option.pk, 0), option.pk))
    StudyReading.objects.filter(pk=reading.pk, shown_at__isnull=True).update(stimulus=chosen)
    reading.refresh_from_db()
    return reading


def reading_baseline(*, reading: StudyReading, attitude: list[int]) -> None:
    StudyReading.objects.filter(pk=reading.pk, baseline__isnull=True).update(baseline=attitude)


def reading_show(*, reading: StudyReading, now: datetime | None = None) -> None:
    """The text was sent: the clock on it starts (once; a reload does not restart it)."""
    StudyReading.objects.filter(pk=reading.pk, shown_at__isnull=True).update(
        shown_at=now or timezone.now())


def reading_read(*, reading: StudyReading, now: datetime | None = None) -> None:
    """The reader says they have read it: seconds on the text, from the server's clock."""
    reading.refresh_from_db()
    now = now or timezone.now()
    seconds = (now - reading.shown_at).total_seconds() if reading.shown_at else None
    StudyReading.objects.filter(pk=reading.pk, read_at__isnull=True).update(
        read_at=now, seconds_on_text=seconds)


def reading_answer(*, reading: StudyReading, attitude: list[int], knowledge: list[int | None],
                   attention: int | None = None, now: datetime | None = None) -> None:
    """The answers after reading; the participant's last one completes the session."""
    now = now or timezone.now()
    with transaction.atomic():
        written = StudyReading.objects.filter(pk=reading.pk, answered_at__isnull=True).update(
            attitude=attitude, knowledge=knowledge, answered_at=now,
            read_at=F("read_at") if reading.read_at else now)
        # Only with the answers it came with: a replayed form changes nothing (and the
        # database refuses any change to a completed session, baitbench_site.immutability).
        if written and attention is not None:
            StudyParticipant.objects.filter(pk=reading.participant_id).update(
                attention_passed=attention == ATTENTION_ANSWER)
        if written and not StudyReading.objects.filter(
                participant=reading.participant_id, answered_at__isnull=True).exists():
            _complete(StudyParticipant.objects.select_for_update().get(
                pk=reading.participant_id), now)


def _complete(participant: StudyParticipant, now: datetime) -> None:
    """Completion: a code, and the reasons the answers are kept out of figures.

    An excluded session gives its place back to the quota in the same UPDATE, so a
    position's target counts readers whose answers the figures can use. `place_released_at`
    is the one column of a completed session the database guards let change
    (`baitbench_site.immutability.STUDY_GUARDS`), so a place held past `PLACE_HELD` and
    given back already is not given back twice."""
    exclusions = list(participant.exclusions)
    if participant.attention_passed is False:
        exclusions.append(Exclusion.ATTENTION)
    threshold = participant.study.min_seconds_on_text
    # A text never sent (its form posted without the page) counts as read too fast.
    if participant.readings.filter(
            Q(seconds_on_text__lt=threshold) | Q(seconds_on_text__isnull=True),
            stimulus__kind__in=[StudyStimulus.Kind.TEXT, StudyStimulus.Kind.CONTROL]).exists():
        exclusions.append(Exclusion.TOO_FAST)
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    gives_back = bool(exclusions) and participant.place_released_at is None
    completed = StudyParticipant.objects.filter(
        pk=participant.pk, completed_at__isnull=True).update(
        completed_at=now, completion_code=code, exclusions=exclusions,
        place_released_at=now if gives_back else F("place_released_at"))
    if completed and gives_back:
        places = StudyQuota.places_field(participant.simulated)
        StudyQuota.objects.filter(study=participant.study_id,
                                  position=participant.position).update(
            **{places: F(places) - 1})
