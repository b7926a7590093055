"""What models did and how it was scored (DESIGN section 4).

Every stage's unit of work is a row with a unique key and a status (`WorkItem`); background
tasks only drain pending rows (DESIGN section 5). A release's configuration is a frozen value
once its first run starts, and everything under a published release is immutable.
"""

from __future__ import annotations

import datetime as dt
import functools

from django.conf import settings
from django.db import models
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from baitbench_site.immutability import ImmutableError
from runs_app.schemas import ReleaseConfig
from runs_app.scoring_versions import (
    ScoringFileError,
    load_scoring_file,
    scoring_from_content,
    split_pin,
)
from runs_app.words import stored_words_key
from scenarios_app.models import Language, ScenarioVersion


class LlmModel(models.Model):
    """A model reachable through a provider: `openrouter_id` like `anthropic/claude-x`."""

    openrouter_id = models.CharField("model id", max_length=200, unique=True)
    family = models.CharField(
        max_length=100, help_text="Jurors never share the writer's family."
    )
    display_name = models.CharField(max_length=200)
    can_write = models.BooleanField(default=True)
    can_judge = models.BooleanField(default=False)
    can_read = models.BooleanField(default=False)

    class Meta:
        ordering = ["openrouter_id"]
        verbose_name = "model"

    def __str__(self) -> str:
        return self.openrouter_id


class ScoringVersion(models.Model):
    """The stored content of a scoring version (`runs_app.scoring_versions`), keyed by its hash.

    Written once, when a release first pins it, and never changed: a frozen release builds
    every prompt and score from this content, whatever later happens to the file.
    """

    name = models.CharField(max_length=20, help_text="The file it came from, e.g. v1.")
    content_hash = models.CharField(max_length=64, unique=True)
    content = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "created_at"]

    def __str__(self) -> str:
        return f"{self.name}@{self.content_hash[:12]}"

    @property
    def pin(self) -> str:
        return f"{self.name}@{self.content_hash}"

    def save(self, *args, **kwargs) -> None:
        if self.pk and ScoringVersion.objects.filter(pk=self.pk).exists():
            raise ImmutableError(f"scoring version {self} is stored once and never changes")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableError(f"scoring version {self} is kept: releases may have pinned it")

    def texts(self):

        return scoring_from_content(self.content)

    @classmethod
    def texts_for_pin(cls, pin: str | None):
        """The texts a release pinned (`name@hash`; None for a release stored before scoring
        versions existed). Cached by pin: a hash names its content for good."""
        return _pinned_texts(pin)


class ScoringVersionMissing(LookupError):
    """A pinned scoring version that is neither stored nor matched by its file."""


@functools.lru_cache(maxsize=32)
def _pinned_texts(pin: str | None):

    name, digest = split_pin(pin)
    stored = ScoringVersion.objects.filter(content_hash=digest).first()
    if stored is not None:
        return stored.texts()
    # Not stored (a release from before scoring versions): the file serves while its
    # content still has the pinned hash.
    try:
        texts = load_scoring_file(name)
    except ScoringFileError as error:
        raise ScoringVersionMissing(f"scoring version {name}@{digest[:12]} is not stored: "
                                    f"{error}") from None
    if texts.content_hash() != digest:
        raise ScoringVersionMissing(f"scoring version {name}@{digest[:12]} is not stored and "
                                    f"scoring/{name}.yaml no longer has that content")
    return texts


@receiver(pre_delete, sender=ScoringVersion)
def _keep_scoring_versions(sender, instance: ScoringVersion, **kwargs) -> None:
    # Also stops queryset deletes, which never call ScoringVersion.delete().
    raise ImmutableError(f"scoring version {instance} is kept: releases may have pinned it")


class ReleaseStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    RUNNING = "running", "Running"
    SCORED = "scored", "Scored"
    # Every stage has run, but some rows ended unscored or failed: not "scored", which means
    # every row has its score (DESIGN section 5); retried rows make it running again.
    INCOMPLETE = "incomplete", "Ended with unscored or failed rows"
    PUBLISHED = "published", "Published"


class Release(models.Model):
    code = models.CharField(max_length=50, unique=True)
    language = models.CharField(max_length=2, choices=Language.choices)
    title = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=10, choices=ReleaseStatus.choices, default=ReleaseStatus.DRAFT
    )
    # The configuration (runs_app.schemas.ReleaseConfig as plain data); a frozen value once
    # `frozen_at` is set. Statistics read it, never today's settings (STYLE do/don't 6).
    config = models.JSONField()
    config_hash = models.CharField(max_length=64)
    scenario_versions = models.ManyToManyField(
        ScenarioVersion, through="ReleaseScenario", related_name="releases"
    )
    frozen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # PROTECT: SET_NULL would rewrite a published release's row, which the database refuses.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )

    class Meta:
        ordering = ["-created_at"]
        permissions = [("operate_release", "Can run stages and retry failed work")]

    def __str__(self) -> str:
        return self.code

    def get_absolute_url(self) -> str:
        return f"/releases/{self.code}/"

    @property
    def is_frozen(self) -> bool:
        return self.frozen_at is not None

    @property
    def is_published(self) -> bool:
        return self.status == ReleaseStatus.PUBLISHED

    def parsed_config(self):

        return ReleaseConfig.model_validate(self.config)

    def save(self, *args, **kwargs) -> None:
        if self.pk:
            stored = Release.objects.filter(pk=self.pk).values("status", "config_hash").first()
            if stored and stored["status"] == ReleaseStatus.PUBLISHED:
                raise ImmutableError(f"release {self.code} is published and cannot change")
            if stored and self.frozen_at and stored["config_hash"] != self.config_hash:
                raise ImmutableError(f"release {self.code} is frozen: its configuration is fixed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self.is_published:
            raise ImmutableError(f"release {self.code} is published and cannot be deleted")
        return super().delete(*args, **kwargs)


class ReleaseScenario(models.Model):
    """A scenario version pinned by a release (PROTECT: a used version is never deleted)."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="pins")
    scenario_version = models.ForeignKey(ScenarioVersion, on_delete=models.PROTECT)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["release", "scenario_version"], name="release_scenario_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.release.code} pins scenario {self.scenario_version}"


class RunControl(models.Model):
    """How an operator steers a release's run: its budget cap and what it has spent so far.

    One row per release, created when its first stage is started. `spent_usd` is added to in
    the transaction that writes each result, so the cap is checked against what was really
    paid, not an estimate; workers read it before every claim.
    """

    release = models.OneToOneField(Release, on_delete=models.CASCADE, related_name="run")
    budget_usd = models.DecimalField(
        "budget cap (USD)", max_digits=12, decimal_places=2, null=True, blank=True,
        help_text="Workers stop claiming new work once the recorded spend reaches it; "
                  "empty means no cap.",
    )
    spent_usd = models.FloatField(default=0.0, help_text="Recorded cost of every call made.")
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )

    class Meta:
        verbose_name = "run control"

    def __str__(self) -> str:
        return f"run of {self.release}"

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.spent_usd >= float(self.budget_usd)


class OpenRouterModelsList(models.Model):
    """OpenRouter's models list as last fetched from one base URL (`providers.models_list`):
    ids, limits and prices that preflight checks a release against. A cache, refetched when
    older than `BAITBENCH_MODELS_LIST_HOURS` or when an operator asks."""

    source = models.CharField(max_length=500, unique=True, help_text="The URL it came from.")
    fetched_at = models.DateTimeField()
    entries = models.JSONField(help_text="One entry per model: id, limits, prices per token.")

    class Meta:
        verbose_name = "OpenRouter models list"

    def __str__(self) -> str:
        return f"models list from {self.source} ({len(self.entries)} models)"


class StageRunState(models.TextChoices):
    ACTIVE = "active", "Running"
    PAUSED = "paused", "Paused"
    CANCELLED = "cancelled", "Cancelled"


class StageRun(models.Model):
    """A stage an operator asked to run for a release: the scope the workers keep to.

    Workers claim work only from active stages, and plan a text's next stage only when that
    stage is active too, so `run_release CODE --stage generate` pays for generation alone,
    however often the schedule resumes it (DESIGN section 8).
    """

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="stage_runs")
    stage = models.CharField(max_length=20)
    state = models.CharField(max_length=10, choices=StageRunState.choices,
                             default=StageRunState.ACTIVE)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )

    class Meta:
        ordering = ["release", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["release", "stage"], name="stage_run_unique")
        ]

    def __str__(self) -> str:
        return f"{self.release} {self.stage}: {self.get_state_display().lower()}"


class DrainState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"


# A running drain beats at least every BAITBENCH_DRAIN_HEARTBEAT_SECONDS; one silent for this
# long has lost its worker, and its rows are released at once rather than after their lease.
DRAIN_DEAD_AFTER = dt.timedelta(seconds=6 * settings.BAITBENCH_DRAIN_HEARTBEAT_SECONDS)


class Drain(models.Model):
    """One queued drain task of a release: lets the release keep one drain per free worker.

    The queue delivers at least once and may lose a task; a worker's cluster may also hold a
    task it has fetched while its workers are busy. A ticket tells how many drains are queued
    or running, so more are enqueued only when they could help, and a second delivery of the
    same task finds its ticket taken and stops at once.
    """

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="drains")
    state = models.CharField(max_length=10, choices=DrainState.choices,
                             default=DrainState.QUEUED)
    worker = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    finished = models.PositiveIntegerField(default=0, help_text="Rows it wrote.")
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["release", "state"], name="drain_release_state")]

    def __str__(self) -> str:
        return f"drain {self.pk} of {self.release}: {self.state}"


class WorkStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    CLAIMED = "claimed", "Claimed"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class PublishedGuard(models.Model):
    """Rows under a published release refuse to change (DESIGN section 8)."""

    class Meta:
        abstract = True

    def owning_release_id(self) -> int:
        return self.release_id  # type: ignore[attr-defined]

    def save(self, *args, **kwargs) -> None:
        # Creating a row counts too: nothing is added under a published release.
        if Release.objects.filter(
            pk=self.owning_release_id(), status=ReleaseStatus.PUBLISHED
        ).exists():
            raise ImmutableError(f"{self._meta.verbose_name} belongs to a published release")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if Release.objects.filter(
            pk=self.owning_release_id(), status=ReleaseStatus.PUBLISHED
        ).exists():
            raise ImmutableError(f"{self._meta.verbose_name} belongs to a published release")
        return super().delete(*args, **kwargs)


class WorkItem(PublishedGuard):
    """One unit of a stage's work: claimed with a lease, finished once (DESIGN section 5)."""

    status = models.CharField(
        max_length=10, choices=WorkStatus.choices, default=WorkStatus.PENDING, db_index=True
    )
    claim_token = models.CharField(max_length=36, blank=True, db_index=True)
    claimed_by = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    claims = models.PositiveIntegerField(
        default=0, help_text="Claims in a row that ended without a written result."
    )
    attempts = models.PositiveIntegerField(default=0, help_text="Model calls made for it.")
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Usage(models.Model):
    """Tokens and cost of every call made for a row, retries included: what the row cost.

    The budget cap (`RunControl`) and the progress pages add these up; a row that an operator
    retries keeps counting what its earlier runs cost."""

    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(null=True, blank=True)
    # Some replies report no cost: then `cost_usd` holds an estimate from the models list's
    # prices (what the budget cap counts), and pages mark it as an estimate.
    cost_estimated = models.BooleanField(
        default=False, help_text="Part of the cost is estimated: a reply reported none.")

    class Meta:
        abstract = True


class ProviderLog(Usage):
    """What the provider reported for a call: upstream, ids, usage, cost, latency."""

    # None: the provider reported none (OpenRouter's `provider` field may be absent).
    upstream_provider = models.CharField(max_length=200, null=True, blank=True)
    provider_generation_id = models.CharField(max_length=200, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    served_model = models.CharField(max_length=200, blank=True,
                                    help_text="The model the reply says answered.")
    system_fingerprint = models.CharField(max_length=200, blank=True)
    native_finish_reason = models.CharField(max_length=40, blank=True)
    cached_tokens = models.PositiveIntegerField(default=0)
    http_attempts = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True


class Generation(WorkItem, ProviderLog):
    """One text: release x model x scenario x task x condition x variant (DESIGN section 1)."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="generations")
    model = models.ForeignKey(LlmModel, on_delete=models.PROTECT, related_name="generations")
    scenario_version = models.ForeignKey(ScenarioVersion, on_delete=models.PROTECT)
    task = models.CharField(max_length=2)
    condition = models.CharField(max_length=2)
    variant = models.PositiveSmallIntegerField(default=0)
    prompt = models.TextField(blank=True)
    prompt_hash = models.CharField(max_length=64, blank=True)
    text = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    # Never scored (DESIGN section 5: a writer's text is only the text).
    reasoning = models.TextField(blank=True, help_text="The writer's reasoning, kept apart.")
    stripped = models.JSONField(default=list, blank=True,
                                help_text="A chat wrapper's lines taken off the text.")
    writer_refusal = models.TextField(
        blank=True, help_text="The provider reported a refusal: the writer's words, if any.")
    seed = models.PositiveIntegerField(
        null=True, blank=True, help_text="The seed of the call that wrote the text.")
    # Written with the text (`save`, the generate stage, an archive's import): a text with the
    # words of a text another release holds blind names that text's writer, and is found by
    # this (`audits_app.pages.viewer.withheld_generations`). A queryset `update` of `text`
    # must write it too.
    words_key = models.CharField(
        max_length=64, blank=True, db_index=True, editable=False,
        help_text="The text's words as a hash, whatever their case, spacing or punctuation "
                  "(empty: no words).")

    class Meta:
        ordering = ["release", "model", "scenario_version", "task", "condition", "variant"]
        constraints = [
            models.UniqueConstraint(
                fields=["release", "model", "scenario_version", "task", "condition", "variant"],
                name="generation_key_unique",
            )
        ]
        indexes = [models.Index(fields=["release", "status"], name="generation_release_status")]

    def __str__(self) -> str:
        return (f"{self.release.code} {self.model.openrouter_id} "
                f"{self.scenario_version.scenario.slug} "
                f"{self.task}/{self.condition}/{self.variant}")

    def save(self, *args, **kwargs) -> None:
        self.words_key = stored_words_key(self.text)
        if kwargs.get("update_fields") is not None and "text" in kwargs["update_fields"]:
            kwargs["update_fields"] = {*kwargs["update_fields"], "words_key"}
        super().save(*args, **kwargs)


class GenerationAttempt(PublishedGuard, ProviderLog):
    """Every call made for a generation is kept, successful or not (DESIGN section 5)."""

    def owning_release_id(self) -> int:
        return Generation.objects.filter(pk=self.generation_id).values_list(
            "release_id", flat=True).first()

    class Outcome(models.TextChoices):
        OK = "ok", "Accepted"
        LENGTH = "length", "Stopped at the token budget"
        EMPTY = "empty", "Empty content"
        ERROR = "error", "Provider error"
        REFUSED = "refused", "The writer refused (refusal field or content filter)"
        WRAPPED = "wrapper", "A chat wrapper that cannot be taken off"
        LANGUAGE = "language", "Another language than the release's"

    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    text = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    reasoning = models.TextField(blank=True)
    refusal = models.TextField(blank=True)
    error = models.TextField(blank=True)
    seed = models.PositiveIntegerField(null=True, blank=True,
                                       help_text="The seed sent (`writer_seed`).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["generation", "number"]
        constraints = [
            models.UniqueConstraint(fields=["generation", "number"], name="attempt_number_unique")
        ]

    def __str__(self) -> str:
        # By the text's id, not its writer: these rows are listed where a writer may be blind.
        return f"attempt {self.number} of text {self.generation_id}"


class ReplyOutcome(models.TextChoices):
    """A structured reply either validated (scored) or, after bounded retries, did not."""

    SCORED = "scored", "Scored"
    UNSCORED = "unscored", "Unscored (invalid replies)"


class RefusalCheck(WorkItem, Usage):
    class Verdict(models.TextChoices):
        COMPLIED = "complied", "Complied"
        PARTIAL = "partial", "Partially complied"
        REFUSED = "refused", "Refused"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="refusal_checks")
    generation = models.OneToOneField(
        Generation, on_delete=models.CASCADE, related_name="refusal_check"
    )
    judge = models.ForeignKey(LlmModel, null=True, blank=True, on_delete=models.PROTECT,
                              related_name="+")
    verdict = models.CharField(max_length=10, choices=Verdict.choices, blank=True)
    reason = models.TextField(blank=True)
    outcome = models.CharField(max_length=10, choices=ReplyOutcome.choices, blank=True)
    raw_replies = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"refusal check of text {self.generation_id}"


class JurorVerdict(WorkItem, Usage):
    """One juror's verdict on one text (DESIGN section 2). Each raw reply is kept."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="juror_verdicts")
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="verdicts")
    juror = models.ForeignKey(LlmModel, on_delete=models.PROTECT, related_name="verdicts")
    seat = models.PositiveSmallIntegerField(help_text="0, 1 or 2: the juror's place on the jury")
    outcome = models.CharField(max_length=10, choices=ReplyOutcome.choices, blank=True)
    raw_replies = models.JSONField(default=list, blank=True)
    facts_conveyed = models.JSONField(default=list, blank=True)
    confidential_disclosed = models.JSONField(default=list, blank=True)
    techniques = models.JSONField(default=list, blank=True)
    claims_score = models.FloatField(null=True, blank=True)
    omission_score = models.FloatField(null=True, blank=True)
    knowledge_harm_score = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["generation", "seat"]
        constraints = [
            models.UniqueConstraint(fields=["generation", "seat"], name="verdict_seat_unique"),
            models.UniqueConstraint(fields=["generation", "juror"], name="verdict_juror_unique"),
        ]
        indexes = [models.Index(fields=["release", "status"], name="verdict_release_status")]

    def __str__(self) -> str:
        return f"juror verdict (seat {self.seat}) on text {self.generation_id}"


class Claim(PublishedGuard):
    def owning_release_id(self) -> int:
        return JurorVerdict.objects.filter(pk=self.verdict_id).values_list(
            "release_id", flat=True).first()

    class Label(models.TextChoices):
        SUPPORTED = "supported", "Supported"
        EXAGGERATION = "exaggeration", "Exaggeration"
        CONTRADICTION = "contradiction", "Contradiction"
        FABRICATION = "fabrication", "Fabrication"

    verdict = models.ForeignKey(
        JurorVerdict, on_delete=models.CASCADE, related_name="claim_rows"
    )
    position = models.PositiveSmallIntegerField()
    quote = models.TextField()
    label = models.CharField(max_length=14, choices=Label.choices)
    basis = models.JSONField(default=list, blank=True, help_text="Fact/uncertainty ids")

    class Meta:
        ordering = ["verdict", "position"]

    def __str__(self) -> str:
        return f"claim {self.position} ({self.label}) of juror verdict {self.verdict_id}"


class Stimulus(models.TextChoices):
    """What a reading position reads (DESIGN section 1)."""

    NONE = "none", "No text (organisation name and description only)"
    CONTROL = "control", "Control text"
    HUMAN = "human", "Human baseline"
    GENERATION = "generation", "Generated text"


class ReaderResponse(WorkItem, Usage):
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="reader_responses")
    scenario_version = models.ForeignKey(ScenarioVersion, on_delete=models.PROTECT)
    stimulus = models.CharField(max_length=10, choices=Stimulus.choices)
    # "" for none/control, "H1"/"H2" for human baselines, the generation id for texts.
    stimulus_key = models.CharField(max_length=20, blank=True)
    generation = models.ForeignKey(Generation, null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="reader_responses")
    position = models.CharField(max_length=10, help_text="Reading position id, e.g. P01")
    outcome = models.CharField(max_length=10, choices=ReplyOutcome.choices, blank=True)
    raw_replies = models.JSONField(default=list, blank=True)
    attitude = models.JSONField(default=list, blank=True, help_text="Answers 1-7 to A1..A3")
    knowledge = models.JSONField(
        default=list, blank=True, help_text="Option index per K1..K4, null for don't know"
    )

    class Meta:
        ordering = ["release", "scenario_version", "stimulus", "stimulus_key", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["release", "scenario_version", "stimulus", "stimulus_key", "position"],
                name="reader_response_unique",
            )
        ]
        indexes = [models.Index(fields=["release", "status"], name="reader_release_status")]

    def __str__(self) -> str:
        read = (f"text {self.generation_id}" if self.generation_id
                else " ".join(filter(None, (self.stimulus, self.stimulus_key))))
        return f"reader {self.position} on {read}"


class AgentRun(WorkItem, Usage):
    """A journalist-agent or reader-agent exchange about one text: uptake or reveal.

    (`CROSSEXAM` rows are whole interviews run as one unit before the cross-examination was
    split into turns, `CrossExamTurn`; no stage plans them any more.)
    """

    class Kind(models.TextChoices):
        UPTAKE = "uptake", "Uptake by a journalist"
        REVEAL = "reveal", "Reveal effect"
        CROSSEXAM = "crossexam", "Cross-examination (T4)"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="agent_runs")
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="agent_runs")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    position = models.CharField(max_length=10, blank=True, help_text="Reading position (reveal)")
    outcome = models.CharField(max_length=10, choices=ReplyOutcome.choices, blank=True)
    raw_replies = models.JSONField(default=list, blank=True)
    transcript = models.JSONField(default=list, blank=True)
    result = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["generation", "kind", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["generation", "kind", "position"], name="agent_run_unique"
            )
        ]
        indexes = [models.Index(fields=["release", "kind", "status"], name="agent_release_kind")]

    def __str__(self) -> str:
        return (f"{self.get_kind_display().lower()} on text {self.generation_id}"
                + (f", reader {self.position}" if self.position else ""))


class TextScoreQuerySet(models.QuerySet):
    def upsert(self, release_id: int, scores: dict[int, dict], fields: list[str]) -> int:
        """Write `fields` of many texts' scores (generation id -> values) in one statement,
        creating the rows that do not exist yet; other fields of existing rows are left as
        they are. Returns how many were written."""
        self.bulk_create(
            [TextScore(release_id=release_id, generation_id=generation_id, **values)
             for generation_id, values in scores.items()],
            update_conflicts=True, unique_fields=["generation"],
            update_fields=[*fields, "computed_at"], batch_size=500,
        )
        return len(scores)


class CrossExamTurn(WorkItem, Usage):
    """One unit of work of a T4 text's cross-examination (DESIGN section 2: steadfastness).

    The interview has six answers. The first is the T4 text itself, the writer's answer to
    the reporter's questions its prompt lists (written, with its own retries, by `generate`).
    Each of turns 2-6 is a row: the journalist agent's follow-up question and the writer's
    answer to it. Turn 7 is the judge's: it labels every answer of the finished interview. A
    turn is planned only once the turn before it is written, so a worker lost mid-interview
    resumes at the next turn and no finished turn is asked again.
    """

    class Kind(models.TextChoices):
        TURN = "turn", "Question and answer"
        LABELS = "labels", "The judge labels every answer"

    release = models.ForeignKey(Release, on_delete=models.CASCADE,
                                related_name="crossexam_turns")
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE,
                                   related_name="crossexam_turns")
    number = models.PositiveSmallIntegerField(
        help_text="2-6: the answer this turn asks for (answer 1 is the T4 text); 7: the labels")
    kind = models.CharField(max_length=6, choices=Kind.choices)
    # Labels rows: a juror outside the writer's family (its jury's first seat).
    judge = models.ForeignKey(LlmModel, null=True, blank=True, on_delete=models.PROTECT,
                              related_name="+")
    outcome = models.CharField(max_length=10, choices=ReplyOutcome.choices, blank=True)
    question = models.TextField(blank=True, help_text="The journalist's follow-up question.")
    answer = models.TextField(blank=True, help_text="The spokesperson's answer.")
    writer_refusal = models.TextField(
        blank=True, help_text="The provider reported a refusal instead of an answer: the "
        "writer's words, if any. The interview stops there.")
    labels = models.JSONField(
        default=list, blank=True,
        help_text='Labels rows: one {"label", "reason"} per answer, answer 1 first.')
    raw_replies = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["generation", "number"]
        verbose_name = "cross-examination turn"
        constraints = [
            models.UniqueConstraint(fields=["generation", "number"],
                                    name="crossexam_turn_unique"),
            models.CheckConstraint(
                condition=(models.Q(kind="turn", number__gte=2, number__lte=6)
                           | models.Q(kind="labels", number=7)),
                name="crossexam_turn_number_fits_kind"),
        ]
        indexes = [models.Index(fields=["release", "status"], name="crossexam_release_status")]

    def __str__(self) -> str:
        return f"{self.generation_id} turn {self.number} ({self.kind})"


class TextScore(PublishedGuard):
    """Every per-text score of one generation (DESIGN section 2); None where not measured."""

    objects = TextScoreQuerySet.as_manager()

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="text_scores")
    generation = models.OneToOneField(Generation, on_delete=models.CASCADE, related_name="score")
    refusal = models.CharField(max_length=10, blank=True)
    jurors_scored = models.PositiveSmallIntegerField(default=0)
    claims = models.FloatField(null=True, blank=True)
    omission = models.FloatField(null=True, blank=True)
    knowledge_harm = models.FloatField(null=True, blank=True)
    honesty_index = models.FloatField(null=True, blank=True)
    confidential_disclosed = models.FloatField(null=True, blank=True)
    persuasion = models.FloatField(null=True, blank=True)
    attitude_effect = models.FloatField(null=True, blank=True)
    baseline_gain = models.FloatField(null=True, blank=True)
    misleading = models.FloatField(null=True, blank=True)
    dont_know = models.FloatField(null=True, blank=True)
    uptake = models.FloatField(null=True, blank=True)
    frame_adoption = models.FloatField(null=True, blank=True)
    reveal_effect = models.FloatField(null=True, blank=True)
    steadfastness = models.FloatField(null=True, blank=True)
    honesty_under_pressure = models.FloatField(null=True, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["generation"]

    def __str__(self) -> str:
        return f"scores of text {self.generation_id}"
