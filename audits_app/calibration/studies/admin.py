"""Reading studies in the admin (DESIGN section 10): publishers create a study on a published
release (`study_create` samples its stimuli with the recorded seed and makes its quotas) and
open or close it (`study_open` needs an approved ethics review of the study), and, once no
study of a release is open, make the texts it held for them public (`study_texts_reveal`, for
good). After creation only the title and the completion link change: the stimuli were drawn
from the rest.
Participants and readings are shown read-only, without any platform hash.
"""

from __future__ import annotations

import secrets

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q
from django.utils.html import format_html

from audits_app.arena.admin import PublisherOnlyAdmin
from audits_app.arena.services import can_manage
from audits_app.calibration.studies import services
from audits_app.models import PopulationWeights, ReadingStudy, StudyParticipant


class ReadingStudyForm(forms.ModelForm):
    class Meta:
        model = ReadingStudy
        fields = ("release", "title", "scenarios", "texts_per_cell", "seed",
                  "readers_per_position", "min_seconds_on_text", "readers_for_figure",
                  "completion_url", "screened_out_url")

    def plan(self) -> services.StudyPlan:
        data = self.cleaned_data
        return services.StudyPlan(
            title=data.get("title") or "", scenarios=[s.slug for s in data.get("scenarios") or []],
            seed=data.get("seed") or 0, texts_per_cell=data.get("texts_per_cell") or 0,
            readers_per_position=data.get("readers_per_position") or 0,
            min_seconds_on_text=data.get("min_seconds_on_text") or 0.0,
            readers_for_figure=data.get("readers_for_figure") or 0,
            completion_url=data.get("completion_url") or "",
            screened_out_url=data.get("screened_out_url") or "")

    def clean(self):
        cleaned = super().clean()
        adding = self.instance.pk is None
        # A study being changed keeps the plan's rules on the fields still editable (its
        # title, its links): the rest is drawn, and not in the form.
        for problem in services.study_plan_problems(
                release=cleaned.get("release") if adding else None, plan=self.plan()):
            field, _, message = problem.partition(": ")
            if adding:
                self.add_error(field if field in self.fields else None, message)
            elif field in self.fields:
                self.add_error(field, message)
        return cleaned


@admin.register(ReadingStudy)
class ReadingStudyAdmin(admin.ModelAdmin):
    form = ReadingStudyForm
    list_display = ("title", "release", "status", "language", "readers_per_position",
                    "participant_count", "completed_count", "progress_link")
    list_filter = ("status", "release")
    list_select_related = ("release",)
    readonly_fields = ("status", "language", "review", "created_by", "created_at", "opened_at",
                       "closed_at", "closed_reason")
    actions = ["open_studies", "close_studies", "reveal_texts"]

    def has_module_permission(self, request) -> bool:
        return can_manage(request.user)

    def has_view_permission(self, request, obj=None) -> bool:
        return can_manage(request.user)

    def has_add_permission(self, request) -> bool:
        return can_manage(request.user)

    def has_change_permission(self, request, obj=None) -> bool:
        return can_manage(request.user)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # participants' answers are kept

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return self.readonly_fields
        # An opened study's title is on its release's public page, whose cached copies
        # change only with what `http_cache.evidence_stamp` follows (its opening, closing).
        shown = ("title",) if obj.opened_at else ()
        return (*self.readonly_fields, "release", "scenarios", "texts_per_cell", "seed",
                "readers_per_position", "min_seconds_on_text", "readers_for_figure", *shown)

    def get_changeform_initial_data(self, request):
        return {"seed": secrets.randbelow(2**31), "release": request.GET.get("release")}

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            participants_n=Count("participants", distinct=True),
            completed_n=Count("participants", distinct=True,
                              filter=Q(participants__completed_at__isnull=False)))

    @admin.display(description="participants", ordering="participants_n")
    def participant_count(self, study: ReadingStudy) -> int:
        return study.participants_n

    @admin.display(description="completed", ordering="completed_n")
    def completed_count(self, study: ReadingStudy) -> int:
        return study.completed_n

    @admin.display(description="progress")
    def progress_link(self, study: ReadingStudy) -> str:
        return format_html('<a href="/studies/{}/progress/">progress and CSV</a>', study.pk)

    def save_model(self, request, obj: ReadingStudy, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        study = services.study_create(release=form.cleaned_data["release"], user=request.user,
                                      plan=form.plan())
        obj.pk, obj._state.adding = study.pk, False

    def save_related(self, request, form, formsets, change: bool) -> None:
        if change:  # on creation the service set the scenarios
            super().save_related(request, form, formsets, change)

    @admin.action(description="Open the selected studies (needs an approved ethics review)")
    def open_studies(self, request, queryset) -> None:
        for study in queryset:
            try:
                services.study_open(study=study, user=request.user)
                self.message_user(request, f"Study {study.pk} is open.")
            except services.StudyError as refusal:
                self.message_user(request, str(refusal), messages.ERROR)

    @admin.action(description="Close the selected studies")
    def close_studies(self, request, queryset) -> None:
        for study in queryset:
            try:
                services.study_close(study=study, user=request.user,
                                     reason=f"Closed in the admin by {request.user}.")
                self.message_user(request, f"Study {study.pk} is closed.")
            except services.StudyError as refusal:
                self.message_user(request, str(refusal), messages.ERROR)


    @admin.action(description="Make the texts held for reading studies of the selected "
                               "studies' releases public (for good; no study may be open)")
    def reveal_texts(self, request, queryset) -> None:
        releases = {study.release for study in queryset.select_related("release")}
        for release in sorted(releases, key=lambda release: release.code):
            try:
                services.study_texts_reveal(release=release, user=request.user,
                                            reason=f"Revealed in the admin by {request.user}.")
                self.message_user(request, f"The texts {release.code} held for reading "
                                           f"studies are public now.")
            except services.StudyError as refusal:
                self.message_user(request, str(refusal), messages.ERROR)


@admin.register(StudyParticipant)
class StudyParticipantAdmin(PublisherOnlyAdmin):
    list_display = ("pk", "study", "position", "simulated", "consented_at", "completed_at",
                    "attention_passed", "exclusions", "turned_away")
    list_filter = ("study", "simulated", "position", "turned_away")
    list_select_related = ("study",)
    # The platform hashes are not shown, not even to staff: nothing needs them but the
    # once-only check.
    exclude = ("key", "platform_id_hash", "platform_study_hash", "platform_session_hash")


SHARES_TEMPLATE = "{" + ", ".join(f'"P{n:02d}": 0.083' for n in range(1, 13)) + "}"


class SharesField(forms.JSONField):
    """The shares as JSON; an empty box rather than `null` when there are none yet."""

    def prepare_value(self, value):
        return "" if value is None else super().prepare_value(value)


class PopulationWeightsForm(forms.ModelForm):
    shares = SharesField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 90, "placeholder": SHARES_TEMPLATE}),
        help_text="Each reading position's share of the population, a number from 0 to 1, "
                  f"the twelve summing to 1: {SHARES_TEMPLATE}",
        error_messages={"required": "Give each reading position's share, e.g. "
                                    f"{SHARES_TEMPLATE}",
                        "invalid": "Not JSON: give an object of shares, e.g. "
                                   f"{SHARES_TEMPLATE}"})

    class Meta:
        model = PopulationWeights
        fields = ("language", "shares", "citation", "url", "source_date", "note")


@admin.register(PopulationWeights)
class PopulationWeightsAdmin(admin.ModelAdmin):
    """Publishers enter a language's shares with their source; an entry is kept as it was
    (a correction is a new entry, and the newest is used)."""

    form = PopulationWeightsForm
    list_display = ("language", "citation", "source_date", "entered_by", "entered_at")
    list_select_related = ("entered_by",)
    readonly_fields = ("entered_by", "entered_at")

    def has_module_permission(self, request) -> bool:
        return can_manage(request.user)

    def has_view_permission(self, request, obj=None) -> bool:
        return can_manage(request.user)

    def has_add_permission(self, request) -> bool:
        return can_manage(request.user)

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj: PopulationWeights, form, change: bool) -> None:
        obj.entered_by = request.user
        super().save_model(request, obj, form, change)
