"""Curation in the admin: scenarios and their parts, versions, tasks and condition overlays.

A scenario saved here obeys the same rules as a scenario file (DESIGN section 3): the whole
submission is checked by `schemas.validate_scenario_document` before anything is written, and
every saved state is kept as a `ScenarioVersion`. Views and actions parse their input, call one
service, report and render; the rules live in schemas.py and services.py.
"""

from __future__ import annotations

import difflib
import io
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Count, F, QuerySet
from django.forms import Textarea, TextInput
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from baitbench_site.admin_refusals import (
    DeletesOnlyWhatItMay,
    RefusalsAsMessages,
    related_refusal,
)
from scenarios_app.files import dump_scenario, summarise
from scenarios_app.forms import (
    BriefTextForm,
    KnowledgeQuestionForm,
    MultilineTextField,
    PreviewForm,
    ScenarioChangeForm,
    ScenarioDocumentCheck,
    ScenarioPartsFormSet,
    ScenarioUploadForm,
    VersionPairForm,
)
from scenarios_app.models import (
    AttitudeQuestion,
    Condition,
    ConfidentialFact,
    Fact,
    HumanBaseline,
    JournalistQuestion,
    KnowledgeQuestion,
    Scenario,
    ScenarioVersion,
    Task,
    Uncertainty,
)
from scenarios_app.rendering import assemble_writer_prompt
from scenarios_app.schemas import validate_scenario_document
from scenarios_app.services import (
    prompt_text_pinning_releases,
    prompt_text_save,
    scenario_document,
    scenario_record_version,
    scenarios_import,
)

# Positions are unique per scenario; saved parts are first moved out of the way by this much so
# that swapping two positions never collides halfway through the save.
POSITION_OFFSET = 10_000

USED_VERSION_NOTE = (
    "Every writing model receives these words, word for word. A version a release ran with "
    "never changes: saving an edit of it adds the next version instead. A release sends the "
    "versions its configuration names (task_version and condition_version, 1 unless set); "
    "the preview shows the newest version."
)


def _text_areas(rows: int, cols: int = 70, line_size: int = 6) -> dict:
    """Form fields for the model's text fields: textareas of this size, browser line breaks
    (CRLF) turned back into the file's LF (MultilineTextField); one-line fields this wide."""
    return {
        models.TextField: {"form_class": MultilineTextField,
                           "widget": Textarea(attrs={"rows": rows, "cols": cols})},
        models.CharField: {"widget": TextInput(attrs={"size": line_size})},
    }


class _PartInline:
    extra = 0
    formset = ScenarioPartsFormSet
    ordering = ["position"]
    formfield_overrides = _text_areas(rows=2)


class FactInline(_PartInline, admin.TabularInline):
    model = Fact
    fields = ["position", "label", "text"]
    verbose_name_plural = "Facts (the writer sees them numbered by position, without labels)"


class UncertaintyInline(_PartInline, admin.TabularInline):
    model = Uncertainty
    fields = ["position", "code", "strength", "text", "note"]
    formfield_overrides = _text_areas(rows=2, cols=36)


class ConfidentialFactInline(_PartInline, admin.TabularInline):
    model = ConfidentialFact
    fields = ["position", "code", "text"]
    verbose_name_plural = "Confidential facts (shown to the writer marked internal)"


class JournalistQuestionInline(_PartInline, admin.TabularInline):
    model = JournalistQuestion
    fields = ["position", "text"]
    verbose_name_plural = "Journalist questions (shown to the writer in T2 and T4)"


class AttitudeQuestionInline(_PartInline, admin.TabularInline):
    model = AttitudeQuestion
    fields = ["position", "code", "text", "low", "high"]
    formfield_overrides = _text_areas(rows=2, cols=50, line_size=16)
    verbose_name_plural = "Attitude questions (instrument: never shown to the writer)"


class KnowledgeQuestionInline(_PartInline, admin.StackedInline):
    model = KnowledgeQuestion
    form = KnowledgeQuestionForm
    verbose_name_plural = "Knowledge questions (instrument: never shown to the writer)"


class HumanBaselineInline(_PartInline, admin.StackedInline):
    model = HumanBaseline
    fields = ["position", "code", "task", "author", "text"]
    formfield_overrides = _text_areas(rows=12, cols=90, line_size=50)
    verbose_name_plural = "Human baselines (instrument: never shown to the writer)"


@admin.register(Scenario)
class ScenarioAdmin(RefusalsAsMessages, admin.ModelAdmin):
    list_display = [
        "slug", "title", "language", "visibility", "status", "fact_count", "version_count",
        "current_version_number", "updated_at",
    ]
    list_filter = ["language", "visibility", "status"]
    search_fields = ["slug", "title", "organisation_name", "canary"]
    list_select_related = ["current_version"]
    readonly_fields = ["current_version_number", "current_content_hash"]
    formfield_overrides = _text_areas(rows=8, cols=90, line_size=70)
    fieldsets = [
        (None, {"fields": ["slug", "title", "language", "visibility", "status", "canary",
                           "confirm_canary_change"]}),
        ("Shown to the writer", {
            "fields": ["organisation_name", "organisation_description", "situation"],
        }),
        ("Instrument: never shown to the writer", {"fields": ["control_text"]}),
        ("Saved version", {"fields": ["current_version_number", "current_content_hash"]}),
    ]
    inlines = [
        FactInline, UncertaintyInline, ConfidentialFactInline, JournalistQuestionInline,
        AttitudeQuestionInline, KnowledgeQuestionInline, HumanBaselineInline,
    ]
    actions = ["download_files"]
    form = ScenarioChangeForm

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting a scenario would delete the versions that releases pin (DESIGN section 3),
        # so a scenario is retired (status) instead; versions are read-only below.
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Scenario]:
        # Counts are annotated so the changelist makes the same queries for 5 rows or 500.
        return super().get_queryset(request).annotate(
            fact_count=Count("facts", distinct=True),
            version_count=Count("versions", distinct=True),
        )

    @admin.display(description="facts", ordering="fact_count")
    def fact_count(self, scenario: Scenario) -> int:
        return scenario.fact_count

    @admin.display(description="versions", ordering="version_count")
    def version_count(self, scenario: Scenario) -> int:
        return scenario.version_count

    @admin.display(description="current version", ordering="current_version__number")
    def current_version_number(self, scenario: Scenario) -> int | None:
        return scenario.current_version.number if scenario.current_version else None

    @admin.display(description="content hash")
    def current_content_hash(self, scenario: Scenario) -> str:
        return scenario.current_version.content_hash if scenario.current_version else "-"

    # --- one set of rules: the submission is checked as a scenario file -------------------

    def _create_formsets(self, request: HttpRequest, obj: Scenario, change: bool) -> Any:
        formsets, inline_instances = super()._create_formsets(request, obj, change)
        if request.method == "POST" and formsets:
            # Django validates the main form, then the formsets in order: the last one sees
            # all the others valid and checks the whole document (ScenarioDocumentCheck).
            check = ScenarioDocumentCheck(obj, formsets)
            formsets[-1].document_check = check
            request.scenario_document_check = check
        return formsets, inline_instances

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Scenario:
        # Django calls this only once the main form is valid, before validating the formsets.
        check = getattr(request, "scenario_document_check", None)
        if check is not None:
            check.scenario_form_valid = True
        return super().save_form(request, form, change)

    def render_change_form(self, request: HttpRequest, context: dict, *args: Any,
                           **kwargs: Any) -> HttpResponse:
        check = getattr(request, "scenario_document_check", None)
        context["document_problems"] = check.problems if check else []
        return super().render_change_form(request, context, *args, **kwargs)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        # Deletions first, and the rows to be saved moved out of the way (POSITION_OFFSET):
        # Django saves row by row, and a swap would break (scenario, position) halfway.
        parts = formset.save(commit=False)
        # Rows the facts' renumbering changed (`forms.renumber_facts`) though their forms were
        # not edited: a fact moved up, a question naming it.
        check = getattr(request, "scenario_document_check", None)
        renumbered = check.renumbering.changed if check is not None else []
        parts += [row for row in renumbered
                  if isinstance(row, formset.model) and row.pk and row not in parts]
        for part in formset.deleted_objects:
            part.delete()
        moved = [part.pk for part in parts if part.pk]
        formset.model.objects.filter(pk__in=moved).update(position=F("position") + POSITION_OFFSET)
        for part in parts:
            part.save()

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        scenario = form.instance
        # Re-read from the rows just written: the version is what the database now holds.
        document, problems = validate_scenario_document(scenario_document(scenario))
        if document is None:
            # The submission passed these rules a moment ago; failing now is a bug, and the
            # exception rolls the whole save back (the change view runs in one transaction).
            raise ValueError(f"saved scenario {scenario.slug} fails validation: {problems}")
        check = getattr(request, "scenario_document_check", None)
        if check is not None and check.renumbering.new_ids:
            self.message_user(request, check.renumbering.summary(), messages.WARNING)
        previous = scenario.current_version_id
        created = scenario_record_version(scenario=scenario, document=document, user=request.user)
        number = scenario.current_version.number
        if created:
            self.message_user(request, f"Saved as version {number}.")
        elif scenario.current_version_id != previous:
            self.message_user(request, f"This content is version {number}; it is current again.")
        else:
            request.scenario_unchanged = number

    def message_user(self, request: HttpRequest, message: str, level: int = messages.INFO,
                     *args: Any, **kwargs: Any) -> None:
        # Django's own line after a save says the scenario "was changed successfully"; a save
        # of the same content made no version, and the curator should not think it did.
        unchanged = getattr(request, "scenario_unchanged", None)
        if unchanged is not None and level == messages.SUCCESS:
            message, level = (f"Nothing changed: the content is version {unchanged}, as it "
                              f"was; no new version was made."), messages.INFO
        super().message_user(request, message, level, *args, **kwargs)

    # --- views -------------------------------------------------------------------------

    def get_urls(self) -> list:
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        own = [
            path("upload/", self.admin_site.admin_view(self.upload_view), name=f"{name}_upload"),
            path("<path:object_id>/preview/", self.admin_site.admin_view(self.preview_view),
                 name=f"{name}_preview"),
            path("<path:object_id>/diff/", self.admin_site.admin_view(self.diff_view),
                 name=f"{name}_diff"),
        ]
        return own + super().get_urls()

    def _page_context(self, request: HttpRequest, title: str, **extra: Any) -> dict:
        return {**self.admin_site.each_context(request), "opts": self.opts, "title": title,
                **extra}

    def _viewable_scenario(self, request: HttpRequest, object_id: str) -> Scenario:
        scenario = self.get_object(request, object_id)
        if scenario is None:
            raise Http404(f"No scenario with id {object_id!r}.")
        if not self.has_view_or_change_permission(request, scenario):
            raise PermissionDenied
        return scenario

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        posted = request.method == "POST"
        form = ScenarioUploadForm(request.POST, request.FILES) if posted else ScenarioUploadForm()
        if posted and form.is_valid():
            with tempfile.TemporaryDirectory() as folder:
                result = scenarios_import(
                    paths=form.write_files(Path(folder)), user=request.user,
                    confirm_canary_change=form.cleaned_data["confirm_canary_change"],
                )
            if result.ok:
                left_out = (f" Not scenario files, so not imported: {', '.join(form.left_out)}."
                            if form.left_out else "")
                if form.macos_skipped:
                    left_out += (f" Skipped as macOS metadata (not scenario files): "
                                 f"{', '.join(form.macos_skipped)}.")
                self.message_user(request, (
                    f"Imported: {len(result.created)} created, {len(result.updated)} updated, "
                    f"{len(result.unchanged)} unchanged.{left_out}"
                ), messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:scenarios_app_scenario_changelist"))
            # Listed on the page as written (the admin's messages would capitalise a file's
            # name); the lines name the uploaded file, not the temporary folder it sat in.
            problems = [line.replace(f"{folder}/", "") for line in result.problems]
        else:
            # A refused upload (too large, not a .yaml or .zip, a damaged zip) is listed as
            # the import's problems are, under the same "Nothing was imported".
            problems = [*form.non_field_errors(), *form.errors.get("files", [])]
        context = self._page_context(request, "Upload scenario files", form=form,
                                     problems=summarise(problems), problem_count=len(problems))
        return TemplateResponse(request, "admin/scenarios_app/scenario/upload.html", context)

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Exactly what a writing model is shown for one task and condition (DESIGN §3)."""
        scenario = self._viewable_scenario(request, object_id)
        form = PreviewForm.from_query(request.GET)
        context = self._page_context(request, f"Writer's prompt: {scenario}", original=scenario,
                                     form=form)
        version = scenario.current_version
        if form.is_valid() and version is not None:
            task = _newest(Task, form.cleaned_data["task"], scenario.language)
            condition = _newest(Condition, form.cleaned_data["condition"], scenario.language)
            context.update(version=version, task=task, condition=condition)
            if task and condition:
                context["prompt"] = assemble_writer_prompt(
                    document=version.document(), task_code=task.code, brief=task.brief,
                    overlay=condition.overlay,
                )
        return TemplateResponse(request, "admin/scenarios_app/scenario/preview.html", context)

    def diff_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """What changed between two versions; by default the previous against the current."""
        scenario = self._viewable_scenario(request, object_id)
        versions = {version.number: version for version in scenario.versions.all()}
        old, new = default_version_pair(sorted(versions), scenario.current_version)
        form = VersionPairForm(
            {"old": request.GET.get("old", old), "new": request.GET.get("new", new)},
            numbers=sorted(versions),
        )
        context = self._page_context(request, f"Changes to {scenario}", original=scenario,
                                     form=form)
        if versions and form.is_valid():
            old_version = versions[form.cleaned_data["old"]]
            new_version = versions[form.cleaned_data["new"]]
            context.update(old=old_version, new=new_version, lines=diff_lines(
                dump_scenario(old_version.document()), dump_scenario(new_version.document()),
                f"v{old_version.number}", f"v{new_version.number}",
            ))
        return TemplateResponse(request, "admin/scenarios_app/scenario/diff.html", context)

    # --- actions -----------------------------------------------------------------------

    @admin.action(description="Download as scenario files (YAML)", permissions=["view"])
    def download_files(self, request: HttpRequest, queryset: QuerySet[Scenario]) -> Any:
        scenarios = [s for s in queryset.select_related("current_version") if s.current_version]
        if not scenarios:
            self.message_user(request, "None of these scenarios has a saved version yet.",
                              messages.WARNING)
            return None
        files = {f"{s.slug}.yaml": dump_scenario(s.current_version.document()) for s in scenarios}
        return download_response(files)


def _newest(model: type[Task] | type[Condition], code: str, language: str) -> Any:
    return model.objects.filter(code=code, language=language).order_by("-version").first()


def default_version_pair(
    numbers: list[int], current: ScenarioVersion | None
) -> tuple[int | None, int | None]:
    """The version before the current one, and the current one (the newest if none is).

    When an earlier content was made current again (v1 after v2), its "previous" is the
    newest other version."""
    if not numbers:
        return None, None
    new = current.number if current else numbers[-1]
    others = [number for number in numbers if number != new]
    earlier = [number for number in others if number < new]
    return (earlier or others or [new])[-1], new


def diff_lines(old: str, new: str, old_name: str, new_name: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line): kind is file, hunk, added, removed or context."""
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""
    )
    return [(_line_kind(line), line) for line in lines]


def _line_kind(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "added", "-": "removed"}.get(line[:1], "context")


def download_response(files: dict[str, str]) -> HttpResponse:
    """One file as itself, several as a zip."""
    if len(files) == 1:
        [(name, text)] = files.items()
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for file_name, text in files.items():
                archive.writestr(file_name, text)
        name = "scenarios.zip"
        response = HttpResponse(buffer.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@admin.register(ScenarioVersion)
class ScenarioVersionAdmin(admin.ModelAdmin):
    """Saved states of scenarios. Read-only: releases pin them (DESIGN section 3)."""

    list_display = ["scenario", "number", "short_hash", "is_current", "created_at", "created_by"]
    list_filter = [("scenario", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["scenario", "created_by"]
    search_fields = ["scenario__slug", "content_hash"]
    fields = ["scenario", "number", "content_hash", "created_at", "created_by", "content_file"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="hash")
    def short_hash(self, version: ScenarioVersion) -> str:
        return version.content_hash[:12]

    @admin.display(description="current", boolean=True)
    def is_current(self, version: ScenarioVersion) -> bool:
        return version.scenario.current_version_id == version.pk

    @admin.display(description="content")
    def content_file(self, version: ScenarioVersion) -> str:
        return format_html("<pre>{}</pre>", dump_scenario(version.document()))


class _PromptTextAdmin(RefusalsAsMessages, DeletesOnlyWhatItMay, admin.ModelAdmin):
    """A version a release ran with is never changed: an edit of it is saved as the next
    version (`prompt_text_save`), and it cannot be deleted (the database refuses)."""

    list_display = ["code", "language", "version", "name"]
    list_filter = ["language", "code"]
    search_fields = ["name"]
    ordering = ["language", "code", "-version"]
    formfield_overrides = _text_areas(rows=6, cols=90, line_size=40)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False,
                 **kwargs: Any) -> Any:
        text_field = "brief" if self.model is Task else "overlay"
        kwargs["help_texts"] = {text_field: USED_VERSION_NOTE}
        return super().get_form(request, obj, change, **kwargs)

    def delete_refusal(self, request: HttpRequest, obj: Any) -> str:
        pinning = prompt_text_pinning_releases(obj)
        if pinning:
            return (f"release{'s' if len(pinning) > 1 else ''} {', '.join(pinning)} ran with "
                    f"this version, which is kept word for word")
        return related_refusal(request, obj, self.admin_site)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        note = prompt_text_save(text=obj)
        if note:
            self.message_user(request, note, messages.WARNING)


@admin.register(Task)
class TaskAdmin(_PromptTextAdmin):
    form = BriefTextForm
    fields = ["code", "language", "version", "name", "brief"]


@admin.register(Condition)
class ConditionAdmin(_PromptTextAdmin):
    fields = ["code", "language", "version", "name", "overlay"]
