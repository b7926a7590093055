"""Admin for spot-checks, out-of-band audits and human reader results (issue 6)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, Q

from audits_app.models import (
    HumanReaderResult,
    OutOfBandAudit,
    OutOfBandVerdict,
    SpotCheck,
    SpotCheckBatch,
    SpotCheckItem,
)

GENERATION_LABEL = ("generation__release", "generation__model",
                    "generation__scenario_version__scenario")


class SpotCheckItemInline(admin.TabularInline):
    model = SpotCheckItem
    extra = 0
    fields = ("position", "generation", "stratum", "jury_class", "jurors_disagreed",
              "double_coded")
    readonly_fields = fields
    raw_id_fields = ("generation",)

    def get_queryset(self, request):
        # Each row prints str(item) (its batch's release) and str(generation) (release, model
        # and scenario): fetch them with the rows.
        return super().get_queryset(request).select_related("batch__release", *GENERATION_LABEL)


@admin.register(SpotCheckBatch)
class SpotCheckBatchAdmin(admin.ModelAdmin):
    list_display = ("__str__", "release", "size", "seed", "done_count", "created_at")
    list_filter = ("release",)
    list_select_related = ("release",)
    readonly_fields = ("seed", "size", "disagreement_weight", "double_code_share", "created_by")
    inlines = [SpotCheckItemInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            checks_done=Count("items__checks", filter=Q(items__checks__status="done")))

    @admin.display(description="spot-checks done", ordering="checks_done")
    def done_count(self, batch: SpotCheckBatch) -> int:
        return batch.checks_done


@admin.register(SpotCheck)
class SpotCheckAdmin(admin.ModelAdmin):
    list_display = ("pk", "release", "generation_id", "auditor", "status", "out_of_band",
                    "agrees_with_jury", "completed_at")
    list_filter = ("release", "status", "out_of_band")
    list_select_related = ("release", "auditor")
    raw_id_fields = ("generation", "item", "audit")


class OutOfBandVerdictInline(admin.TabularInline):
    model = OutOfBandVerdict
    extra = 0
    fields = ("row_number", "generation", "claim_position", "label", "agrees_with_jury", "note")
    readonly_fields = fields

    def get_queryset(self, request):
        # str(generation) reads its release, model and scenario: fetch them with the rows.
        return super().get_queryset(request).select_related(*GENERATION_LABEL)


@admin.register(OutOfBandAudit)
class OutOfBandAuditAdmin(admin.ModelAdmin):
    list_display = ("auditor_name", "organisation", "audited_on", "release", "row_count")
    list_filter = ("release",)
    list_select_related = ("release",)
    readonly_fields = ("source_name", "content_hash", "imported_by")
    inlines = [OutOfBandVerdictInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(rows=Count("verdicts"))

    @admin.display(description="rows", ordering="rows")
    def row_count(self, audit: OutOfBandAudit) -> int:
        return audit.rows


@admin.register(HumanReaderResult)
class HumanReaderResultAdmin(admin.ModelAdmin):
    list_display = ("release", "scenario_slug", "stimulus", "reader", "attitude", "knowledge")
    list_filter = ("release", "scenario_slug")
    list_select_related = ("release",)
    raw_id_fields = ("generation",)


# The arena registers its own admin (audits_app/arena/admin.py).
from audits_app.arena import admin as arena_admin  # noqa: E402,F401
