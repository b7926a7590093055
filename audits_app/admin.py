"""Admin for spot-checks, out-of-band audits and human reader results: evidence, read here.

What each role may do is `baitbench_site.role_matrix`. In short: evidence is added through the
review screens (/review/), never edited here by anyone, and deleted only by a superuser while
its release is unpublished. An auditor sees only their own spot-checks. A text someone is still
checking blind shows them neither its writer nor its jury class: auditors cannot open texts,
verdicts or sampled items at all, and anyone else with a pending check in a release sees none
of its texts in the generation admin (no gaps to read) and `BLIND` for the stratum and jury
class of every item of its batches (no neighbours to read). Texts are named by keyed codes,
never by ids (`__str__` of these rows names neither writer nor id, either). A text a published
release holds for its arena or reading studies is absent for everyone but publishers, until
its holder reveals it (`viewer.withheld_texts`), and so is a text of another release with
its words (its twin: the same writers write the same words again): no spot-check, sampled
item, correction, out-of-band row or reader result of it is listed or opened, since their
strata name its writer and their claim labels quote it; the figures (a batch's size and
checks done, an audit's rows) are counted as before.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from audits_app.models import (
    HumanReaderResult,
    OutOfBandAudit,
    OutOfBandVerdict,
    ReleaseImport,
    SpotCheck,
    SpotCheckBatch,
    SpotCheckCorrection,
    SpotCheckItem,
)
from audits_app.pages.viewer import withheld_texts
from audits_app.text_codes import text_code
from baitbench_site.admin_refusals import (
    DeletesOnlyWhatItMay,
    RefusalsAsMessages,
    related_refusal,
)
from baitbench_site.roles import sees_only_own_checks
from runs_app.admin_checks import ReadOnlyAdmin
from runs_app.admin_hidden import HIDDEN_GENERATIONS
from runs_app.models import Generation

BLIND = "hidden: you are checking this text blind"


def blinded_releases(user) -> QuerySet:
    """Ids of the releases in which this person has a pending (blind) spot-check."""
    return SpotCheck.objects.filter(auditor_id=user.pk, status=SpotCheck.Status.ASSIGNED
                                    ).values("release_id")


def blinded_texts(user) -> QuerySet:
    """Every text of those releases, not only the pending ones: a list that left out just the
    pending texts would show them as gaps (filtered by writer, the gaps are that writer's)."""
    return Generation.objects.filter(release_id__in=blinded_releases(user)).values("pk")


# The generation admin (runs_app) hides these texts from the person checking them, and held
# texts from everyone but publishers.
HIDDEN_GENERATIONS.append(lambda request: blinded_texts(request.user))
HIDDEN_GENERATIONS.append(lambda request: withheld_texts(request.user))


def without_held(queryset: QuerySet, request: HttpRequest, generation: str = "generation"
                 ) -> QuerySet:
    """The rows whose text (the field `generation`) is not held from this person: the records
    of a held text name its writer (a stratum) or quote it (claim labels), as its generation
    admin page would."""
    return queryset.exclude(**{f"{generation}__in": withheld_texts(request.user)})


def held_count(related: str, request: HttpRequest) -> Count:
    """How many of a record's `related` rows (each with a `generation`) are of texts held from
    this person: the change page says how many its list leaves out, by number alone (as the
    public pages do), while its figures count them all."""
    return Count(related, distinct=True,
                 filter=Q(**{f"{related}__generation__in": withheld_texts(request.user)}))


def held_words(count: int, noun: str) -> str:
    if not count:
        return "none"
    return (f"{count} {noun}{'s' if count != 1 else ''}, of texts a published release holds "
            f"for its arena or reading studies, or of texts with their words: listed once "
            f"the texts are made public")


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EvidenceAdmin(RefusalsAsMessages, DeletesOnlyWhatItMay, admin.ModelAdmin):
    """Rows of audit evidence: never added or changed here; deleted only by a superuser and
    only while the release is not published (the database refuses it afterwards too)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj)

    def delete_refusal(self, request: HttpRequest, obj: Any) -> str:
        if obj.release.is_published:
            return f"its release {obj.release.code} is published, and its evidence is kept"
        return related_refusal(request, obj, self.admin_site)

    @admin.display(description="text")
    def text(self, row: Any) -> str:
        # Its keyed code: str(generation) names the writing model, and an id may tell which
        # texts share a writer.
        return text_code(row.release.code, row.generation_id)


class SpotCheckItemInline(ReadOnlyInline):
    """Sampled texts. Auditors have no permission to view items at all (roles.HIDDEN_FROM)."""

    model = SpotCheckItem
    fields = ("position", "text", "stratum_shown", "jury_class_shown", "disagreed_shown",
              "double_coded")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # Blind for the whole batch: a pending item between neighbours whose strata show
        # would be placed by them.
        pending = blinded_releases(request.user).filter(release_id=OuterRef("batch__release_id"))
        return without_held(super().get_queryset(request), request).select_related(
            "batch__release").annotate(blind=Exists(pending))

    @admin.display(description="text")
    def text(self, item: SpotCheckItem) -> str:
        return text_code(item.batch.release.code, item.generation_id)

    @admin.display(description="stratum")
    def stratum_shown(self, item: SpotCheckItem) -> str:
        return BLIND if item.blind else item.stratum

    @admin.display(description="jury class")
    def jury_class_shown(self, item: SpotCheckItem) -> str:
        return BLIND if item.blind else item.jury_class

    @admin.display(description="jurors disagreed")
    def disagreed_shown(self, item: SpotCheckItem) -> str:
        return BLIND if item.blind else ("yes" if item.jurors_disagreed else "no")


@admin.register(SpotCheckBatch)
class SpotCheckBatchAdmin(EvidenceAdmin):
    list_display = ("__str__", "release", "size", "seed", "done_count", "created_at")
    list_filter = ("release",)
    list_select_related = ("release",)
    fields = ("release", "name", "seed", "size", "disagreement_weight", "double_code_share",
              "created_at", "created_by", "created_by_name", "held_items")
    readonly_fields = fields
    inlines = [SpotCheckItemInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(
            checks_done=Count("items__checks", filter=Q(items__checks__status="done")),
            items_held=held_count("items", request))

    @admin.display(description="spot-checks done", ordering="checks_done")
    def done_count(self, batch: SpotCheckBatch) -> int:
        return batch.checks_done

    @admin.display(description="items not listed")
    def held_items(self, batch: SpotCheckBatch) -> str:
        return held_words(batch.items_held, "item")


class SpotCheckCorrectionInline(ReadOnlyInline):
    """Changes after the reveal, beside the blind verdict they correct."""

    model = SpotCheckCorrection
    fk_name = "spot_check"
    fields = ("made_at", "made_by", "made_by_name", "what_changed", "reason")
    readonly_fields = fields
    verbose_name_plural = "corrections after the reveal (the blind verdict above is kept)"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return without_held(super().get_queryset(request), request, "spot_check__generation")

    @admin.display(description="what changed")
    def what_changed(self, correction: SpotCheckCorrection) -> SafeString:
        return format_html("<ul>{}</ul>", format_html_join(
            "", "<li>{}: {} → {}</li>",
            ((change["field"], change["before"], change["after"])
             for change in correction.changes)))


@admin.register(SpotCheck)
class SpotCheckAdmin(EvidenceAdmin):
    list_display = ("pk", "release", "text", "who", "status", "out_of_band", "agrees_with_jury",
                    "correction_count", "completed_at")
    list_select_related = ("release", "auditor", "audit")
    fields = ("release", "text", "item", "who", "status", "completed_at", "claim_labels",
              "facts_conveyed", "techniques", "agrees_with_jury", "note", "out_of_band", "audit")
    readonly_fields = fields
    inlines = [SpotCheckCorrectionInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = without_held(super().get_queryset(request), request).select_related(
            "item__batch__release").annotate(corrections_made=Count("corrections"))
        if sees_only_own_checks(request.user):
            queryset = queryset.filter(auditor=request.user)
        return queryset

    def get_list_filter(self, request: HttpRequest) -> tuple:
        if sees_only_own_checks(request.user):
            return ("release", "status")
        return ("release", "status", "out_of_band", "auditor")

    @admin.display(description="by")
    def who(self, check: SpotCheck) -> str:
        if check.audit_id:
            return f"{check.audit.auditor_name} (out of band)"
        return check.auditor.get_username() if check.auditor_id else (check.auditor_name or "-")

    @admin.display(description="corrections", ordering="corrections_made")
    def correction_count(self, check: SpotCheck) -> int:
        return check.corrections_made


class OutOfBandVerdictInline(ReadOnlyInline):
    model = OutOfBandVerdict
    fields = ("row_number", "text", "claim_position", "label", "agrees_with_jury", "note")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return without_held(super().get_queryset(request), request).select_related(
            "audit__release")

    @admin.display(description="text")
    def text(self, verdict: OutOfBandVerdict) -> str:
        return text_code(verdict.audit.release.code, verdict.generation_id)


@admin.register(OutOfBandAudit)
class OutOfBandAuditAdmin(EvidenceAdmin):
    list_display = ("auditor_name", "organisation", "audited_on", "release", "row_count")
    list_filter = ("release",)
    list_select_related = ("release",)
    fields = ("release", "auditor_name", "organisation", "audited_on", "method", "source_name",
              "content_hash", "imported_at", "imported_by", "imported_by_name", "held_rows")
    readonly_fields = fields
    inlines = [OutOfBandVerdictInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(rows=Count("verdicts", distinct=True),
                                                      rows_held=held_count("verdicts", request))

    @admin.display(description="rows not listed")
    def held_rows(self, audit: OutOfBandAudit) -> str:
        return held_words(audit.rows_held, "row")

    @admin.display(description="rows", ordering="rows")
    def row_count(self, audit: OutOfBandAudit) -> int:
        return audit.rows


@admin.register(HumanReaderResult)
class HumanReaderResultAdmin(EvidenceAdmin):
    list_display = ("release", "scenario_slug", "stimulus", "reader", "attitude", "knowledge")
    list_filter = ("release", "scenario_slug")
    list_select_related = ("release",)
    fields = ("release", "scenario_slug", "stimulus", "text", "reader", "attitude", "knowledge",
              "imported_at")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # A reading study's reader on a held text: the row names the text (its stimulus).
        return without_held(super().get_queryset(request), request)


# The arena registers its own admin (audits_app/arena/admin.py).
from audits_app.arena import admin as arena_admin  # noqa: E402,F401

# So do reading studies (audits_app/calibration/studies/admin.py).
from audits_app.calibration.studies import admin as studies_admin  # noqa: E402,F401


@admin.register(ReleaseImport)
class ReleaseImportAdmin(RefusalsAsMessages, ReadOnlyAdmin):
    """A release loaded from an archive (`manage.py import_release`): where its figures come
    from, read here. The record is kept with its release and never changed (the model and the
    database refuse it), so nobody adds, changes or deletes one in the admin."""

    list_display = ("release", "kind", "verified", "signing_key_id", "imported_at",
                    "imported_by")
    list_filter = ("verified", "kind")
    search_fields = ("release__code", "signing_key_id")
    readonly_fields = ("release", "kind", "verified", "signing_key_id", "unverified_reason",
                       "archive_sha256", "manifest", "imported_at", "imported_by")
    fields = readonly_fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("release", "imported_by")
