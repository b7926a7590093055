"""The arena's rows (DESIGN section 9): people's votes on blind pairs of a published release.

Everything here is a new row *about* a published release, added after publication: rows
reference the release and its generations by foreign key only and never change the release's
frozen snapshot or anything under it. A release's arena consists of:

- `EthicsReview` and `ArenaEvent`: the recorded ethics decisions and every opening and closing.
  Both are a record: once written they never change and are never deleted.
- `RecognisabilityRun`: the writer classifier's result for the release, computed once.
- `ArenaPair`: the catalogue of pairs that may be shown (two texts of one cell by two writers).
- `ArenaVoter`, `ArenaShowing`, `ArenaVote`: anonymous voters (a random id in a signed cookie,
  no personal data), each pair shown to one of them, and their votes.
- `SimulatedPairVote`: the simulated public's answer on a shown pair, one row per reading
  position, drained like a stage's work rows and kept apart from people's votes.
- `ArenaResult`: the rankings computed from the votes at one moment, with their date and count.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone

from audits_app.arena.validators import validate_ethics_document, validate_not_future
from runs_app.models import (
    Generation,
    ImmutableError,
    LlmModel,
    Release,
    ReleaseStatus,
    Usage,
    WorkStatus,
)
from scenarios_app.models import Scenario

__all__ = [
    "EthicsReview", "ArenaEvent", "RecognisabilityRun", "ArenaPair", "ArenaVoter", "ArenaShowing",
    "ArenaVote", "SimulatedPairVote", "ArenaResult", "Side", "Preference", "ShadowReason",
]


class Side(models.TextChoices):
    """Which text of a pair: `a` is the generation with the lower id, whatever side it shows."""

    A = "a", "A"
    B = "b", "B"


class Preference(models.TextChoices):
    """A voter's answer to "which text leaves the more favourable view": a text, or neither.
    Counted as Chatbot Arena counts its "tie" and "tie (bothbad)": both are a tie, half a win
    for each text (`results.preference_comparisons`)."""

    A = "a", "A"
    B = "b", "B"
    TIE = "t", "Tie: both about the same"
    BOTH_BAD = "x", "Both bad"


class ShadowReason(models.TextChoices):
    """Why a vote is a shadow vote: recorded and analysed, counted in no public result."""

    NOT_OPEN = "not_open", "The arena was not open (before approval, or a staff test)"
    STAFF = "staff", "Cast by a staff member"
    RATE = "rate", "Over the rate limit"
    TOO_FAST = "too_fast", "Answered faster than two texts can be read"
    RECOGNISED = "recognised", "The voter thought they recognised a writer"
    ATTENTION = "attention_failed", "The voter failed an attention check"


class RecordQuerySet(models.QuerySet):
    """Bulk writes would bypass `save()`/`delete()`, so they are refused here as well."""

    def update(self, **kwargs):
        raise ImmutableError(f"a recorded {self.model._meta.verbose_name} cannot change")

    def delete(self):
        raise ImmutableError(f"a recorded {self.model._meta.verbose_name} cannot be deleted")


class Record(models.Model):
    """A row that is written once and then only read: a decision on the record."""

    objects = RecordQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ImmutableError(f"a recorded {self._meta.verbose_name} cannot change")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableError(f"a recorded {self._meta.verbose_name} cannot be deleted")


class EthicsReview(Record):
    """An ethics body's decision on a release's arena, or on one of its reading studies
    (`study` set): each opens only on an approval of its own."""

    class Decision(models.TextChoices):
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        REVISIONS = "revisions", "Revisions requested"
        WITHDRAWN = "withdrawn", "Approval withdrawn"

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="ethics_reviews",
                                limit_choices_to={"status": ReleaseStatus.PUBLISHED},
                                help_text="A published release.")
    reviewing_body = models.CharField(max_length=200)
    reference = models.CharField(max_length=100, help_text="The body's reference number.")
    decided_on = models.DateField("date of the decision", validators=[validate_not_future])
    decision = models.CharField(max_length=10, choices=Decision.choices)
    document = models.FileField(upload_to="arena/ethics/%Y/",
                                validators=[validate_ethics_document],
                                help_text="The decision letter (PDF, at most 10 MB).")
    document_sha256 = models.CharField(max_length=64, editable=False)
    note = models.TextField(blank=True, help_text="Shown publicly with the decision.")
    study = models.ForeignKey("audits_app.ReadingStudy", null=True, blank=True,
                              on_delete=models.PROTECT, related_name="ethics_reviews",
                              help_text="The reading study reviewed; blank for the arena.")
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                    related_name="+")
    recorded_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["release", "-recorded_at", "-pk"]
        verbose_name = "ethics review"
        permissions = [("manage_arena",
                        "Can record ethics reviews and open or close an arena")]

    def __str__(self) -> str:
        return (f"{self.release.code}: {self.get_decision_display().lower()} by "
                f"{self.reviewing_body} ({self.reference}, {self.decided_on})")

    @property
    def approves(self) -> bool:
        return self.decision == self.Decision.APPROVED


class ArenaEvent(Record):
    """One opening or closing of a release's arena: who, when and why."""

    class Action(models.TextChoices):
        OPEN = "open", "Opened"
        CLOSE = "close", "Closed"

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="arena_events")
    action = models.CharField(max_length=5, choices=Action.choices)
    reason = models.TextField()
    # The approval an opening rests on (none for a closing).
    review = models.ForeignKey(EthicsReview, null=True, blank=True, on_delete=models.PROTECT,
                               related_name="events")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                           on_delete=models.PROTECT, related_name="+")
    at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["release", "-at", "-pk"]
        verbose_name = "arena opening or closing"
        verbose_name_plural = "arena openings and closings"

    def __str__(self) -> str:
        return f"{self.release.code} arena {self.get_action_display().lower()} {self.at:%Y-%m-%d}"


class RecognisabilityRun(models.Model):
    """The writer classifier's result for one release: computed once, never silently again."""

    release = models.OneToOneField(Release, on_delete=models.PROTECT,
                                   related_name="recognisability")
    computed_at = models.DateTimeField(default=timezone.now)
    computed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.PROTECT, related_name="+")
    method = models.JSONField(help_text="Features, model, validation, threshold, versions.")
    # {"accuracy", "low", "high", "chance", "majority", "texts", "level",
    #  "per_writer": [{"writer", "texts", "accuracy", "low", "high", "mean_probability"}]}
    summary = models.JSONField()
    # {generation id: out-of-fold probability of its true writer}
    probabilities = models.JSONField()

    class Meta:
        verbose_name = "recognisability run"

    def __str__(self) -> str:
        return f"recognisability of {self.release.code}"


class ArenaPair(models.Model):
    """Two texts of one cell (scenario x task x condition x variant) by two different writers.

    `generation_a` has the lower id; which side a voter sees it on is drawn per showing.
    Writers and scenario are copied from the generations so selection needs no join.
    """

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="arena_pairs")
    generation_a = models.ForeignKey(Generation, on_delete=models.PROTECT, related_name="+")
    generation_b = models.ForeignKey(Generation, on_delete=models.PROTECT, related_name="+")
    model_a = models.ForeignKey(LlmModel, on_delete=models.PROTECT, related_name="+")
    model_b = models.ForeignKey(LlmModel, on_delete=models.PROTECT, related_name="+")
    scenario = models.ForeignKey(Scenario, on_delete=models.PROTECT, related_name="+")
    task = models.CharField(max_length=2)
    condition = models.CharField(max_length=2)
    variant = models.PositiveSmallIntegerField(default=0)
    # The classifier's larger probability for the true writer of either text.
    recognised_probability = models.FloatField(null=True, blank=True)
    flagged = models.BooleanField(default=False, help_text="The classifier recognises a writer.")
    shown = models.PositiveIntegerField(default=0)
    simulation_queued_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["release", "pk"]
        verbose_name = "arena pair"
        constraints = [
            models.UniqueConstraint(fields=["release", "generation_a", "generation_b"],
                                    name="arena_pair_unique"),
            models.CheckConstraint(condition=models.Q(generation_a__lt=models.F("generation_b")),
                                   name="arena_pair_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.release.code} pair {self.pk}"

    def generation_id_on(self, side: str) -> int:
        return self.generation_a_id if side == Side.A else self.generation_b_id


class ArenaVoter(models.Model):
    """An anonymous voter: a random id held in a signed cookie, and nothing about the person.

    No IP address, user agent or account is stored (a vote keeps only a daily keyed hash of
    its network: `ArenaVote.origin`); `flags` records why all of the voter's
    votes became shadow votes (a failed attention check).
    """

    key = models.CharField(max_length=64, unique=True)
    consented_at = models.DateTimeField(default=timezone.now)
    flags = models.JSONField(default=list, blank=True)
    flagged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-consented_at"]
        verbose_name = "arena voter"

    def __str__(self) -> str:
        return f"voter {self.key_digest}"

    @property
    def key_digest(self) -> str:
        """A short, stable name for staff screens that does not reveal the cookie's value."""
        return hashlib.sha256(self.key.encode()).hexdigest()[:10]


class ArenaShowing(models.Model):
    """One pair shown to one voter; the vote form refers to it by a signed token."""

    class Attention(models.TextChoices):
        NONE = "", "Not an attention check"
        LEFT = "left", "Instructed to choose the left text"
        RIGHT = "right", "Instructed to choose the right text"

    pair = models.ForeignKey(ArenaPair, on_delete=models.PROTECT, related_name="showings")
    voter = models.ForeignKey(ArenaVoter, on_delete=models.PROTECT, related_name="showings")
    a_on_left = models.BooleanField()
    attention = models.CharField(max_length=5, choices=Attention.choices, blank=True)
    shown_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-shown_at"]
        indexes = [models.Index(fields=["voter", "pair"], name="arena_showing_voter_pair")]

    def __str__(self) -> str:
        return f"showing {self.pk} of {self.pair}"

    def side_of(self, position: str) -> str:
        """The pair's side (a or b) shown at `position` (left or right)."""
        return Side.A if (position == "left") == self.a_on_left else Side.B


class ArenaVote(models.Model):
    """A voter's answer on a pair: one per voter per pair."""

    pair = models.ForeignKey(ArenaPair, on_delete=models.PROTECT, related_name="votes")
    voter = models.ForeignKey(ArenaVoter, on_delete=models.PROTECT, related_name="votes")
    showing = models.OneToOneField(ArenaShowing, null=True, blank=True,
                                   on_delete=models.PROTECT, related_name="vote")
    favourable = models.CharField(max_length=1, choices=Preference.choices,
                                  help_text="The text that left the more favourable view, "
                                            "or a tie, or both bad.")
    honest = models.CharField(max_length=1, choices=Side.choices, blank=True,
                              help_text="The text that seemed more honest (optional).")
    recognised = models.BooleanField(default=False,
                                     help_text="The voter thought they recognised a writer.")
    a_on_left = models.BooleanField()
    attention = models.BooleanField(default=False, help_text="An attention check, not a vote.")
    attention_passed = models.BooleanField(null=True, blank=True)
    shadow = models.BooleanField(default=False, db_index=True)
    shadow_reasons = models.JSONField(default=list, blank=True)
    seconds_to_vote = models.FloatField(null=True, blank=True)
    # The demo's simulated voters (never a person) say so here.
    simulated = models.BooleanField(default=False)
    note = models.CharField(max_length=200, blank=True)
    # A daily keyed hash of the voter's network (`ratelimits.origin_key`), never the address:
    # a batch of results needs votes from several origins, not only several cookies. Empty
    # for staff, simulated and earlier votes.
    origin = models.CharField(max_length=16, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "arena vote"
        constraints = [
            models.UniqueConstraint(fields=["pair", "voter"], name="arena_vote_once_per_pair"),
        ]

    def __str__(self) -> str:
        return f"vote {self.pk} on {self.pair}"

    @property
    def counted(self) -> bool:
        return not (self.shadow or self.attention)


class SimulatedPairVote(Usage):
    """One reading position's answer on a shown pair, drained like a stage's work row.

    The fields of `runs_app.models.WorkItem` (status, claim, lease, attempts) without its
    published-release guard: these rows are about a published release, not under it; and
    what its calls cost (`Usage`), like every work row.
    Positions read the pair in alternating order (`a_first`) so the reader model's own
    preference for the first or second text cancels out over the twelve.
    """

    pair = models.ForeignKey(ArenaPair, on_delete=models.PROTECT, related_name="simulated_votes")
    position = models.CharField(max_length=10, help_text="Reading position id, e.g. P01")
    a_first = models.BooleanField()
    status = models.CharField(max_length=10, choices=WorkStatus.choices,
                              default=WorkStatus.PENDING, db_index=True)
    claim_token = models.CharField(max_length=36, blank=True, db_index=True)
    claimed_by = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    claims = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=10, blank=True)
    raw_replies = models.JSONField(default=list, blank=True)
    favourable = models.CharField(max_length=1, choices=Side.choices, blank=True)
    honest = models.CharField(max_length=1, choices=Side.choices, blank=True)

    class Meta:
        ordering = ["pair", "position"]
        verbose_name = "simulated pair vote"
        constraints = [
            models.UniqueConstraint(fields=["pair", "position"], name="simulated_vote_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.position} on {self.pair}"


class ArenaResult(models.Model):
    """The arena's rankings as computed at one moment: they carry their own date and counts."""

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="arena_results")
    computed_at = models.DateTimeField(default=timezone.now)
    votes_counted = models.PositiveIntegerField()
    votes_shadow = models.PositiveIntegerField()
    last_vote_id = models.BigIntegerField(default=0)
    # The newest counted vote these figures hold: counted votes reach them in batches
    # (`services.RESULTS_BATCH_VOTES`), so that no voter can find their own pair's writers.
    # None on results stored before batches: they held every vote through `last_vote_id`.
    counted_through = models.BigIntegerField(null=True, blank=True)

    @property
    def counted_votes_through(self) -> int:
        return self.last_vote_id if self.counted_through is None else self.counted_through
    simulated_votes = models.PositiveIntegerField(default=0)
    data = models.JSONField()

    class Meta:
        ordering = ["release", "-computed_at", "-pk"]
        get_latest_by = "computed_at"
        verbose_name = "arena result"

    def __str__(self) -> str:
        return f"{self.release.code} arena result {self.computed_at:%Y-%m-%d %H:%M}"
