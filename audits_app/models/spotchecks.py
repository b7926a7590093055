"""Human spot-checks, out-of-band audits and human reader results (DESIGN section 6).

A spot-check is one person's verdict on one text the jury scored (DESIGN section 1). Texts are
sampled into batches (`SpotCheckBatch` -> `SpotCheckItem`); each item gets one `SpotCheck` per
assigned auditor (two for a double-coded item). Verdicts taken outside the web UI come in through
an `OutOfBandAudit`: its rows (`OutOfBandVerdict`, one per CSV row) are folded into spot-checks
flagged `out_of_band`, so every figure that counts them can show them apart.

Rows that name a release refuse to change once it is published (`PublishedGuard`, DESIGN
section 8, and the database's triggers, baitbench_site.immutability): the published snapshot
froze the agreement figures they feed. Once the jury's verdict has been revealed to an auditor,
their check changes only through a `SpotCheckCorrection`.

A release imported from a staff archive (`audits_app.archive.load`) carries these records as
they were made, but not the logins that made them: its spot-checks, corrections, batches and
audits name those people in `*_name` fields (the user names the exporting instance gave them)
and leave the user fields empty.

Claim labels are keyed by the claim's position (1-based) in the text's *jury claim list*: the
distinct quotes the jurors extracted, in order of first appearance (see
`audits_app.spotchecks.selectors.jury_claims`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from audits_app.text_codes import text_code
from runs_app.models import Claim, Generation, PublishedGuard, Release

# A release imported from an archive (`audits_app.archive.load`) keeps who made its records
# as the exporting instance named them: a login of the same name here may be someone else, and
# linking it would put another person's verdicts in that login's queue.
PERSON_NAME_HELP = ("Who, by the user name the instance the release was imported from gave "
                    "them; empty when the login is here (the user field).")

__all__ = [
    "SpotCheckBatch", "SpotCheckItem", "SpotCheck", "SpotCheckCorrection", "OutOfBandAudit",
    "OutOfBandVerdict", "HumanReaderResult",
]


class SpotCheckBatch(PublishedGuard):
    """A seeded, stratified sample of a release's scored texts for people to check."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="spotcheck_batches")
    name = models.CharField(max_length=200, blank=True)
    seed = models.BigIntegerField()
    size = models.PositiveIntegerField(help_text="Texts drawn.")
    disagreement_weight = models.FloatField(
        default=2.0, help_text="Sampling weight of texts on which the jurors disagreed."
    )
    double_code_share = models.FloatField(
        default=0.0, help_text="Share of items checked independently by two auditors."
    )
    left_out_public = models.PositiveIntegerField(
        default=0, help_text="Unsampled texts left out of the draw because their words are "
                             "public in another release (they cannot be checked blind).")
    created_at = models.DateTimeField(auto_now_add=True)
    # PROTECT: evidence keeps who made it (SET_NULL would rewrite a published release's rows).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_by_name = models.CharField(max_length=150, blank=True, help_text=PERSON_NAME_HELP)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "spot-check batch"
        verbose_name_plural = "spot-check batches"

    def __str__(self) -> str:
        return self.name or f"{self.release.code} batch {self.pk}"


class SpotCheckItem(models.Model):
    """One sampled text, with the stratum it was drawn from."""

    batch = models.ForeignKey(SpotCheckBatch, on_delete=models.CASCADE, related_name="items")
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="+")
    # model x condition x jury verdict class, e.g. "fixture/spinner|C2|contradiction".
    stratum = models.CharField(max_length=300)
    jury_class = models.CharField(max_length=14, choices=Claim.Label.choices)
    jurors_disagreed = models.BooleanField(default=False)
    double_coded = models.BooleanField(default=False)
    position = models.PositiveIntegerField(help_text="Order within the batch (the review queue).")

    class Meta:
        ordering = ["batch", "position"]
        verbose_name = "spot-check item"
        constraints = [
            models.UniqueConstraint(fields=["batch", "generation"], name="spotcheck_item_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.batch} #{self.position}"


class SpotCheck(PublishedGuard):
    """One person's verdict on one text; `done` once saved. Blind until then."""

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        DONE = "done", "Done"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="spot_checks")
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="spot_checks")
    item = models.ForeignKey(
        SpotCheckItem, null=True, blank=True, on_delete=models.CASCADE, related_name="checks"
    )
    auditor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="spot_checks",
    )
    auditor_name = models.CharField(max_length=150, blank=True, help_text=PERSON_NAME_HELP)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ASSIGNED)
    # [{"position": 1, "quote": "...", "label": "supported"}, ...] in jury claim list order.
    claim_labels = models.JSONField(default=list, blank=True)
    facts_conveyed = models.JSONField(default=list, blank=True)
    techniques = models.JSONField(default=list, blank=True)
    agrees_with_jury = models.BooleanField(null=True, blank=True)
    note = models.TextField(blank=True)
    out_of_band = models.BooleanField(default=False)
    audit = models.ForeignKey(
        "OutOfBandAudit", null=True, blank=True, on_delete=models.CASCADE, related_name="checks"
    )
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["release", "generation", "pk"]
        verbose_name = "spot-check"
        permissions = [("record_spotcheck", "Can record spot-check verdicts")]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "auditor"], name="spotcheck_item_auditor_unique",
                condition=models.Q(item__isnull=False),
            ),
        ]
        indexes = [models.Index(fields=["release", "status"], name="spotcheck_release_status")]

    def __str__(self) -> str:
        # The text by its keyed code, never its id: a title must not help place its writer.
        who = self.audit.auditor_name if self.audit_id else (self.auditor or self.auditor_name)
        code = text_code(self.release.code, self.generation_id)
        return f"spot-check {self.pk} of text {code} by {who}"

    @property
    def is_done(self) -> bool:
        return self.status == self.Status.DONE

    def label_by_position(self) -> dict[int, str]:
        return {int(entry["position"]): entry["label"] for entry in self.claim_labels}


class SpotCheckCorrection(PublishedGuard):
    """A change to a spot-check after the jury's verdict was revealed to its auditor.

    The blind verdict stays as it was saved (the agreement figures count only blind verdicts);
    a correction is a row of its own beside it: who, when, what changed and why. Only the
    check's own auditor records one, and only until the release is published.
    """

    release = models.ForeignKey(Release, on_delete=models.CASCADE,
                                related_name="spotcheck_corrections")
    spot_check = models.ForeignKey(SpotCheck, on_delete=models.CASCADE,
                                   related_name="corrections")
    # Empty only in a release imported from an archive: then `made_by_name` says who.
    made_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                on_delete=models.PROTECT, related_name="+")
    made_by_name = models.CharField(max_length=150, blank=True, help_text=PERSON_NAME_HELP)
    made_at = models.DateTimeField(auto_now_add=True)
    # What a reader is shown: [{"field": "claim 2", "before": "supported", "after": ...}, ...]
    changes = models.JSONField()
    # The check as it stands after this correction (claim_labels, facts_conveyed, techniques,
    # agrees_with_jury, note), so the next correction compares with it.
    state = models.JSONField()
    reason = models.TextField()

    class Meta:
        ordering = ["spot_check", "made_at", "pk"]
        verbose_name = "spot-check correction"

    def __str__(self) -> str:
        return f"correction {self.pk} of spot-check {self.spot_check_id}"


class OutOfBandAudit(PublishedGuard):
    """An audit done outside the web UI (another team, a workshop), entered afterwards."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="oob_audits")
    auditor_name = models.CharField("who", max_length=200)
    organisation = models.CharField(max_length=200)
    audited_on = models.DateField("date")
    method = models.TextField()
    source_name = models.CharField(max_length=300, blank=True, help_text="Imported file name.")
    # The same file imported twice would count every verdict twice; its rows' hash
    # (audits_app.csv_files.Table.content_hash) is unique per release. Empty: imported before
    # hashes were kept.
    content_hash = models.CharField(
        max_length=64, blank=True, editable=False,
        help_text="SHA-256 of the imported rows: the same rows are not imported twice.",
    )
    imported_at = models.DateTimeField(auto_now_add=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    imported_by_name = models.CharField(max_length=150, blank=True, help_text=PERSON_NAME_HELP)

    class Meta:
        ordering = ["-imported_at"]
        verbose_name = "out-of-band audit"
        constraints = [
            models.UniqueConstraint(
                fields=["release", "content_hash"], name="oob_audit_content_once",
                condition=~models.Q(content_hash=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.auditor_name} ({self.organisation}), {self.audited_on}"


class OutOfBandVerdict(models.Model):
    """One imported row, kept as entered; `spot_check` is the spot-check it was folded into."""

    audit = models.ForeignKey(OutOfBandAudit, on_delete=models.CASCADE, related_name="verdicts")
    spot_check = models.ForeignKey(SpotCheck, on_delete=models.CASCADE, related_name="oob_rows")
    row_number = models.PositiveIntegerField()
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="+")
    claim_position = models.PositiveSmallIntegerField(null=True, blank=True,
                                                      help_text="Empty: the overall verdict.")
    label = models.CharField(max_length=14, choices=Claim.Label.choices, blank=True)
    agrees_with_jury = models.BooleanField(null=True, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["audit", "row_number"]
        verbose_name = "out-of-band verdict"

    def __str__(self) -> str:
        # Neither the text's id nor its writer (the module's admin names texts by keyed code).
        return f"row {self.row_number} of out-of-band audit {self.audit_id}"


class HumanReaderResult(PublishedGuard):
    """A real reader's answers to one stimulus, for calibrating the simulated public."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="human_readers")
    scenario_slug = models.CharField(max_length=80)
    # As ReaderResponse.stimulus_key: "none", "control", "H1"/"H2" or a generation id.
    stimulus = models.CharField(max_length=20)
    generation = models.ForeignKey(Generation, null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="+")
    reader = models.CharField(max_length=100)
    attitude = models.JSONField(help_text="Answers 1-7 to A1..A3")
    knowledge = models.JSONField(help_text="Option index per K1..K4, null for don't know")
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["release", "scenario_slug", "stimulus", "reader"]
        constraints = [
            models.UniqueConstraint(fields=["release", "scenario_slug", "stimulus", "reader"],
                                    name="human_reader_unique"),
        ]

    def __str__(self) -> str:
        # A text by neither id nor writer, as above.
        read = "a text" if self.generation_id else self.stimulus
        return f"reader {self.reader} on {self.scenario_slug} ({read})"

