"""Human reading studies (DESIGN section 10): people read a published release's stimuli and
answer the panel's questions, so that the simulated public's ranking can be calibrated.

Like the arena's rows, these are rows *about* a published release, added after publication:
they reference the release, its scenario versions and generations by foreign key only and never
change the release or its snapshot.

- `ReadingStudy`: what staff set up (scenarios, texts per model x condition sampled with a
  recorded seed, readers wanted per reading position, the reading-time threshold), opened on an
  approved `EthicsReview` of the study and closed on the record.
- `StudyStimulus`: what a reader of one scenario may be given: a sampled text, the scenario's
  control text, or nothing (the no-text arm).
- `StudyQuota`: readers wanted and places taken per reading position, counted apart for people
  (`assigned`) and for the simulated crowd (`simulated_assigned`), so a demo's simulated
  readers never use up people's places. A place is taken by a conditional UPDATE that only
  succeeds below the target, and check constraints keep both counts there, so concurrent
  participants never push a position over its target.
- `StudyParticipant`: one person's session: a random key in a signed cookie, the profile
  answers that place them, the recruitment platform's ids as keyed hashes only, completion and
  the reasons their answers are excluded from figures (kept and counted all the same).
- `StudyReading`: one scenario read by one participant: the attitude answers before any text,
  the stimulus, seconds on the text, the answers after.
- `StudyTextsReveal`: the publisher's step, once per release and for good, that makes the
  texts held for its reading studies public (`publication.held_cells`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from audits_app.arena.models import Record
from runs_app.models import Generation, LlmModel, Release, ReleaseStatus
from scenarios_app.models import Scenario, ScenarioVersion

__all__ = ["ReadingStudy", "StudyStimulus", "StudyQuota", "StudyParticipant", "StudyReading",
           "PopulationWeights", "StudyTextsReveal",
           "Exclusion"]


class Exclusion(models.TextChoices):
    """Why a participant's answers are kept but left out of every figure."""


    INCOMPLETE = "incomplete", "Did not finish"
    ATTENTION = "attention_failed", "Failed the attention check"
    TOO_FAST = "too_fast", "Read a text faster than the study's threshold"
    DUPLICATE = "duplicate", "Took part before with the same platform id"


class ReadingStudy(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft (not open)"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="reading_studies",
                                limit_choices_to={"status": ReleaseStatus.PUBLISHED},
                                help_text="A published release.")
    title = models.CharField(max_length=200)
    language = models.CharField(max_length=2, editable=False,
                                help_text="The release's language; the reader's pages use it.")
    scenarios = models.ManyToManyField(
        Scenario, related_name="+",
        help_text="Public scenarios of the release; a reader reads one stimulus of each.")
    texts_per_cell = models.PositiveSmallIntegerField(
        "texts per model × condition", default=1,
        help_text="Texts sampled per model, condition and scenario (fewer where fewer exist).")
    seed = models.BigIntegerField(help_text="Seeds the sampling of texts (recorded).")
    readers_per_position = models.PositiveIntegerField(
        "target readers per reading position", default=10)
    min_seconds_on_text = models.FloatField(
        default=15.0, help_text="A text read faster than this excludes the participant.")
    readers_for_figure = models.PositiveIntegerField(
        default=24, help_text="Completed, included readers needed before the figure is shown.")
    completion_url = models.URLField(
        blank=True, max_length=500,
        help_text="Where a participant goes when done, e.g. the platform's completion link; "
                  "{code} is replaced by their completion code.")
    screened_out_url = models.URLField(
        "screened-out URL", blank=True, max_length=500,
        help_text="Where a participant from a platform goes when their reading position is "
                  "full, e.g. the platform's no-code (screened out) link; blank: they are "
                  "told to return the study on the platform.")
    status = models.CharField(max_length=6, choices=Status.choices, default=Status.DRAFT,
                              editable=False)
    review = models.ForeignKey("audits_app.EthicsReview", null=True, blank=True,
                               on_delete=models.PROTECT, related_name="+", editable=False,
                               help_text="The approval the study opened on.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                   related_name="+", editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    opened_at = models.DateTimeField(null=True, blank=True, editable=False)
    closed_at = models.DateTimeField(null=True, blank=True, editable=False)
    closed_reason = models.TextField(blank=True, editable=False)

    class Meta:
        ordering = ["release", "-created_at", "-pk"]
        verbose_name = "reading study"
        verbose_name_plural = "reading studies"

    def __str__(self) -> str:
        return f"{self.release.code}: {self.title}"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN


class StudyStimulus(models.Model):
    """One stimulus a reader of a scenario may be given."""

    class Kind(models.TextChoices):
        TEXT = "text", "A model's text"
        CONTROL = "control", "The control text"
        NONE = "none", "No text"

    study = models.ForeignKey(ReadingStudy, on_delete=models.CASCADE, related_name="stimuli")
    scenario_version = models.ForeignKey(ScenarioVersion, on_delete=models.PROTECT,
                                         related_name="+")
    kind = models.CharField(max_length=7, choices=Kind.choices)
    generation = models.ForeignKey(Generation, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    model = models.ForeignKey(LlmModel, null=True, blank=True, on_delete=models.PROTECT,
                              related_name="+")
    condition = models.CharField(max_length=2, blank=True)

    class Meta:
        ordering = ["study", "scenario_version", "kind", "generation"]
        verbose_name_plural = "study stimuli"
        constraints = [
            models.UniqueConstraint(fields=["study", "scenario_version", "generation"],
                                    condition=models.Q(kind="text"), name="study_stimulus_text"),
            models.UniqueConstraint(fields=["study", "scenario_version", "kind"],
                                    condition=~models.Q(kind="text"),
                                    name="study_stimulus_anchor"),
            models.CheckConstraint(
                condition=models.Q(kind="text", generation__isnull=False)
                | (~models.Q(kind="text") & models.Q(generation__isnull=True)),
                name="study_stimulus_text_has_generation"),
        ]

    def __str__(self) -> str:
        return f"{self.arm} ({self.scenario_version_id})"

    @property
    def arm(self) -> str:
        """The arm a figure groups by: the writer's model id, `control` or `none`."""
        return self.model.openrouter_id if self.kind == self.Kind.TEXT else self.kind

    @property
    def import_key(self) -> str:
        """The stimulus as the human-reader CSV names it: a generation id, control or none."""
        return str(self.generation_id) if self.kind == self.Kind.TEXT else self.kind


class StudyQuota(models.Model):
    study = models.ForeignKey(ReadingStudy, on_delete=models.CASCADE, related_name="quotas")
    position = models.CharField(max_length=10)
    target = models.PositiveIntegerField()
    assigned = models.PositiveIntegerField(default=0)  # people's places taken
    simulated_assigned = models.PositiveIntegerField(default=0)  # the simulated crowd's

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "position"], name="study_quota_unique"),
            models.CheckConstraint(condition=models.Q(assigned__lte=models.F("target")),
                                   name="study_quota_within_target"),
            models.CheckConstraint(
                condition=models.Q(simulated_assigned__lte=models.F("target")),
                name="study_quota_simulated_within_target"),
        ]

    @staticmethod
    def places_field(simulated: bool) -> str:
        """The count of places taken by participants of this kind."""
        return "simulated_assigned" if simulated else "assigned"

    def __str__(self) -> str:
        return f"{self.position}: {self.assigned}/{self.target}"


class StudyParticipant(models.Model):
    """One person's session. No name, address or raw platform id is ever stored: platform ids
    are HMAC-SHA256 under a key from the settings (`audits_app.calibration.studies.identity`)."""

    study = models.ForeignKey(ReadingStudy, on_delete=models.PROTECT, related_name="participants")
    key = models.CharField(max_length=64, unique=True)
    platform_id_hash = models.CharField(max_length=64, blank=True)
    platform_study_hash = models.CharField(max_length=64, blank=True)
    platform_session_hash = models.CharField(max_length=64, blank=True)
    # The simulated crowd (`reading_study_simulate`) says so here: never a person.
    simulated = models.BooleanField(default=False, db_index=True)
    consented_at = models.DateTimeField(default=timezone.now)
    profile = models.JSONField(default=dict, blank=True, help_text="Answers to the profile.")
    position = models.CharField(max_length=10, blank=True)
    turned_away = models.BooleanField(default=False,
                                      help_text="Their reading position was full.")
    placed_at = models.DateTimeField(null=True, blank=True)
    # An unfinished session's place goes back to its quota after a while (kept, counted).
    place_released_at = models.DateTimeField(null=True, blank=True)
    attention_passed = models.BooleanField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    completion_code = models.CharField(max_length=16, blank=True)
    exclusions = models.JSONField(default=list, blank=True)
    # A second attempt with a platform id that took part already: kept, counted, excluded.
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="+")

    class Meta:
        ordering = ["study", "consented_at", "pk"]
        verbose_name = "study participant"
        constraints = [
            # One platform id takes part once; a second attempt is kept as a duplicate.
            models.UniqueConstraint(fields=["study", "platform_id_hash"],
                                    condition=~models.Q(platform_id_hash=""),
                                    name="study_platform_id_once"),
        ]

    def __str__(self) -> str:
        return f"participant {self.pk} of study {self.study_id}"

    @property
    def included(self) -> bool:
        return self.completed_at is not None and not self.exclusions and not self.turned_away


class StudyReading(models.Model):
    """One scenario read by one participant: one stimulus per scenario per person."""

    participant = models.ForeignKey(StudyParticipant, on_delete=models.PROTECT,
                                    related_name="readings")
    stimulus = models.ForeignKey(StudyStimulus, on_delete=models.PROTECT, related_name="readings")
    scenario_version = models.ForeignKey(ScenarioVersion, on_delete=models.PROTECT,
                                         related_name="+")
    order = models.PositiveSmallIntegerField()
    baseline = models.JSONField(null=True, blank=True,
                                help_text="Attitude answers 1-7 knowing only the organisation.")
    shown_at = models.DateTimeField(null=True, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    seconds_on_text = models.FloatField(null=True, blank=True)
    attitude = models.JSONField(null=True, blank=True, help_text="Answers 1-7 after reading.")
    knowledge = models.JSONField(null=True, blank=True,
                                 help_text="Option index per question, null for don't know.")
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["participant", "order"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "scenario_version"],
                                    name="study_reading_one_per_scenario"),
            models.UniqueConstraint(fields=["participant", "order"],
                                    name="study_reading_order"),
        ]

    def __str__(self) -> str:
        return f"reading {self.order} of {self.participant}"


class StudyTextsReveal(Record):
    """The texts a release holds for its reading studies made public: recorded once, with who,
    when and why, and never undone (a text that could be looked up cannot be blind again)."""

    release = models.OneToOneField(Release, on_delete=models.PROTECT,
                                   related_name="study_texts_reveal")
    reason = models.TextField()
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name = "reveal of texts held for reading studies"
        verbose_name_plural = "reveals of texts held for reading studies"

    def __str__(self) -> str:
        return f"{self.release.code}: study texts public since {self.at:%Y-%m-%d}"


class PopulationWeights(models.Model):
    """The population share of each reading position in one language, with its source
    (DESIGN section 10). Weighted panel figures appear only where such a source is recorded;
    the newest entry of a language is the one used, and entries are kept as they were."""

    language = models.CharField(max_length=2, choices=[("en", "English"), ("nl", "Dutch")])
    shares = models.JSONField(help_text='Share per reading position, summing to 1, e.g. '
                                        '{"P01": 0.07, "P02": 0.09, …, "P12": 0.08}.')
    citation = models.CharField(max_length=500, help_text="The source, as it is cited.")
    url = models.URLField(max_length=500)
    source_date = models.DateField("date of the source")
    note = models.TextField(blank=True, help_text="How the source's groups map to positions.")
    entered_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                   related_name="+", editable=False)
    entered_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["language", "-entered_at", "-pk"]
        verbose_name = "population weights"
        verbose_name_plural = "population weights"

    def __str__(self) -> str:
        return f"{self.language}: {self.citation} ({self.source_date})"

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        from audits_app.calibration.studies.weights import share_problems

        problems = share_problems(self.shares, self.language or "en")
        if problems:
            raise ValidationError({"shares": problems})
