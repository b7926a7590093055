"""The method's own checks: the reader trial and the contamination check (DESIGN section 6).

Neither is a release. A reader trial asks candidate reader models to read the control texts
of a language's scenarios; a contamination check probes a release's models for its scenarios'
canaries and scans every stored output. Both keep their model calls as work rows drained by
the same machinery as the stages (`runs_app.stages.base`): claimed with a lease, written
once, so a rerun pays for nothing twice. A check of a published release adds rows of its own
about it and never changes the release's rows.
"""

from __future__ import annotations

from django.db import models

from runs_app.models.pipeline import ProviderLog, Release, ReplyOutcome, WorkItem
from scenarios_app.models import Language, Scenario, ScenarioVersion


class ReaderTrial(models.Model):
    """One trial set-up: a language, its scenarios' versions, a panel and a scoring version.

    Candidates are added to a set-up rather than starting a new one, so that asking again
    with one more candidate reads only with that candidate (`setup_hash` names the set-up).
    `report` holds the last computed per-candidate results (`audits_app.calibration.reader_trial`).
    """

    language = models.CharField(max_length=2, choices=Language.choices)
    panel = models.CharField(max_length=20, help_text="Panel version, e.g. v1.")
    scoring_version = models.CharField(max_length=120, help_text="Pinned as name@hash.")
    scenario_versions = models.ManyToManyField(ScenarioVersion, related_name="reader_trials")
    setup_hash = models.CharField(max_length=64, unique=True)
    candidates = models.JSONField(default=list, help_text="Every model id ever asked to read.")
    report = models.JSONField(default=dict, blank=True)
    reported_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"reader trial {self.pk} ({self.language}, panel {self.panel})"


class TrialReading(WorkItem, ProviderLog):
    """One reading of a trial: a candidate, a scenario, control text or nothing, a reading
    position, first or second reading (DESIGN section 6: the same answers on a second
    reading). Latency is recorded, so that speed can be compared."""

    class Stimulus(models.TextChoices):
        CONTROL = "control", "Control text"
        NONE = "none", "No text"

    trial = models.ForeignKey(ReaderTrial, on_delete=models.CASCADE, related_name="readings")
    candidate = models.CharField(max_length=200)
    scenario_version = models.ForeignKey(ScenarioVersion, on_delete=models.PROTECT,
                                         related_name="+")
    stimulus = models.CharField(max_length=10, choices=Stimulus.choices)
    position = models.CharField(max_length=10)
    reading = models.PositiveSmallIntegerField(help_text="1 or 2")
    outcome = models.CharField(max_length=10, choices=ReplyOutcome.choices, blank=True)
    raw_replies = models.JSONField(default=list, blank=True)
    attitude = models.JSONField(default=list, blank=True)
    knowledge = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["trial", "candidate", "scenario_version", "stimulus", "position", "reading"]
        constraints = [
            models.UniqueConstraint(
                fields=["trial", "candidate", "scenario_version", "stimulus", "position",
                        "reading"], name="trial_reading_unique"),
        ]
        indexes = [models.Index(fields=["trial", "status"], name="trial_reading_status")]

    def owning_release_id(self) -> None:
        return None  # a trial belongs to no release

    def __str__(self) -> str:
        return (f"trial {self.trial_id} {self.candidate} {self.stimulus} {self.position} "
                f"reading {self.reading}")


class ContaminationCheck(models.Model):
    """The contamination check of one release: its probes and what was found.

    New rows about the release, never a change to it: a published release can be checked
    (and checked again) without touching anything it froze."""

    release = models.OneToOneField(Release, on_delete=models.CASCADE,
                                   related_name="contamination_check")
    created_at = models.DateTimeField(auto_now_add=True)
    probed_at = models.DateTimeField(null=True, blank=True)
    scanned_at = models.DateTimeField(null=True, blank=True)
    outputs_scanned = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"contamination check of {self.release.code}"


class ProbeKind(models.TextChoices):
    CANARY = "canary", "Complete the canary's prefix"
    ABOUT = "about", "What do you know about the title and the organisation?"


class ContaminationProbe(WorkItem, ProviderLog):
    """One probe of one model about one scenario; the reply is kept whole, and so is the
    reasoning field (scanned as the reply is: a canary there is the model's output too)."""

    contamination_check = models.ForeignKey(ContaminationCheck, on_delete=models.CASCADE,
                                            related_name="probes")
    model = models.CharField(max_length=200)
    scenario_version = models.ForeignKey(ScenarioVersion, on_delete=models.PROTECT,
                                         related_name="+")
    kind = models.CharField(max_length=10, choices=ProbeKind.choices)
    prompt = models.TextField(blank=True)
    reply = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    reasoning = models.TextField(blank=True, help_text="The model's reasoning, kept apart.")

    class Meta:
        ordering = ["contamination_check", "model", "scenario_version", "kind"]
        constraints = [
            models.UniqueConstraint(
                fields=["contamination_check", "model", "scenario_version", "kind"],
                name="contamination_probe_unique"),
        ]

    def owning_release_id(self) -> None:
        return None  # about a release, not part of it: a published release may be probed

    def __str__(self) -> str:
        return f"probe {self.kind} of {self.model} on {self.scenario_version.scenario.slug}"


class FindingKind(models.TextChoices):
    PROBE_CANARY = "probe_canary", "Probe reply contains the canary"
    PROBE_OVERLAP = "probe_overlap", "Probe reply repeats the scenario file verbatim"
    OUTPUT_CANARY = "output_canary", "Stored output contains the canary"
    OUTPUT_OVERLAP = "output_overlap", "Stored output repeats unseen parts of the file verbatim"


# A canary anywhere marks the scenario as contaminated for that model (DESIGN section 6); a
# verbatim overlap is evidence to look at, not proof.
CANARY_KINDS = (FindingKind.PROBE_CANARY, FindingKind.OUTPUT_CANARY)


class ContaminationFinding(models.Model):
    """One piece of evidence that a model has seen a scenario file: who, which scenario, what
    kind, an excerpt, and the row it was found in (`source`, e.g. "generation 12")."""

    contamination_check = models.ForeignKey(ContaminationCheck, on_delete=models.CASCADE,
                                            related_name="findings")
    model = models.CharField(max_length=200)
    scenario = models.ForeignKey(Scenario, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=20, choices=FindingKind.choices)
    evidence = models.TextField(help_text="An excerpt of the output around what was found.")
    source = models.CharField(max_length=120)
    source_release = models.CharField(max_length=50, blank=True,
                                      help_text="The release whose stored output it is.")
    found_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["contamination_check", "scenario", "model", "kind", "source"]
        constraints = [
            models.UniqueConstraint(
                fields=["contamination_check", "model", "scenario", "kind", "source"],
                name="contamination_finding_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.model} on {self.scenario.slug}"

    @property
    def marks_contaminated(self) -> bool:
        return self.kind in CANARY_KINDS
