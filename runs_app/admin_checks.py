"""The method's own checks in the admin, read-only: reader trials and their readings, and
contamination checks with their findings and probes. They are written by the commands
(`reader_trial`, `contamination_check`) alone; nobody edits evidence by hand."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest

from runs_app.admin_hidden import hidden_generation_ids
from runs_app.models import (
    CANARY_KINDS,
    AgentRun,
    ContaminationCheck,
    ContaminationFinding,
    ContaminationProbe,
    GenerationAttempt,
    ReaderTrial,
    TrialReading,
    WorkStatus,
)


def findings_shown(request: HttpRequest, findings: QuerySet) -> QuerySet:
    """The findings but those in a text the generation admin hides from this person (a text
    held for an arena or reading study, one they check blind): a finding names the writer of
    the output it quotes (`contamination_services.stored_outputs`: the text, its attempts and
    its cross-examination's spokesperson turns)."""
    texts = hidden_generation_ids(request)
    if not texts:
        return findings
    sources = {f"generation {pk}" for pk in texts} | {
        f"attempt {pk}" for pk in GenerationAttempt.objects.filter(
            generation_id__in=texts).values_list("pk", flat=True)}
    turns = tuple(f"{AgentRun.Kind.CROSSEXAM} run {pk} turn " for pk in AgentRun.objects.filter(
        generation_id__in=texts, kind=AgentRun.Kind.CROSSEXAM).values_list("pk", flat=True))
    held = [pk for pk, source in findings.values_list("pk", "source")
            if source in sources or (turns and source.startswith(turns))]
    return findings.exclude(pk__in=held)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(ReaderTrial)
class ReaderTrialAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "language", "panel", "candidate_list", "readings_done",
                    "passing", "reported_at"]
    list_filter = ["language"]
    readonly_fields = ["language", "panel", "scoring_version", "setup_hash", "candidates",
                       "report", "reported_at", "created_at"]
    exclude = ["scenario_versions"]

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).annotate(
            done=Count("readings", filter=Q(readings__status=WorkStatus.DONE)))

    @admin.display(description="candidates")
    def candidate_list(self, obj: ReaderTrial) -> str:
        return ", ".join(obj.candidates)

    @admin.display(description="readings done", ordering="done")
    def readings_done(self, obj: ReaderTrial) -> int:
        return obj.done

    @admin.display(description="passing (preferred first)")
    def passing(self, obj: ReaderTrial) -> str:
        return ", ".join((obj.report or {}).get("preferred") or []) or "–"


@admin.register(TrialReading)
class TrialReadingAdmin(ReadOnlyAdmin):
    list_display = ["trial", "candidate", "scenario_version", "stimulus", "position", "reading",
                    "status", "outcome", "latency_ms", "cost_usd"]
    list_filter = ["status", "outcome", "stimulus", "candidate"]
    list_select_related = ["trial", "scenario_version__scenario"]


class FindingInline(ReadOnlyInline):
    model = ContaminationFinding
    fields = ["model", "scenario", "kind", "evidence", "source", "source_release"]

    def get_queryset(self, request: HttpRequest):
        return findings_shown(request, super().get_queryset(request))


@admin.register(ContaminationCheck)
class ContaminationCheckAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "probe_count", "finding_count", "canary_count",
                    "outputs_scanned", "scanned_at"]
    readonly_fields = ["release", "created_at", "probed_at", "scanned_at", "outputs_scanned"]
    inlines = [FindingInline]
    list_select_related = ["release"]

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).annotate(
            probe_total=Count("probes", distinct=True),
            finding_total=Count("findings", distinct=True),
            canary_total=Count("findings", filter=Q(findings__kind__in=CANARY_KINDS),
                               distinct=True))

    @admin.display(description="probes", ordering="probe_total")
    def probe_count(self, obj: ContaminationCheck) -> int:
        return obj.probe_total

    @admin.display(description="findings", ordering="finding_total")
    def finding_count(self, obj: ContaminationCheck) -> int:
        return obj.finding_total

    @admin.display(description="canary findings", ordering="canary_total")
    def canary_count(self, obj: ContaminationCheck) -> int:
        return obj.canary_total


@admin.register(ContaminationFinding)
class ContaminationFindingAdmin(ReadOnlyAdmin):
    list_display = ["model", "scenario", "kind", "source", "source_release", "found_at"]
    list_filter = ["kind", "model"]
    list_select_related = ["scenario", "contamination_check__release"]
    search_fields = ["model", "scenario__slug", "evidence"]

    def get_queryset(self, request: HttpRequest):
        return findings_shown(request, super().get_queryset(request))


@admin.register(ContaminationProbe)
class ContaminationProbeAdmin(ReadOnlyAdmin):
    list_display = ["contamination_check", "model", "scenario_version", "kind", "status",
                    "latency_ms", "cost_usd"]
    list_filter = ["kind", "status", "model"]
    list_select_related = ["contamination_check__release", "scenario_version__scenario"]
