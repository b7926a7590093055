"""Operating runs in the admin: models, releases and their progress, generations and a
generation's page (prompt, text, provider log, jury verdicts with claims marked, panel answers).

Actions parse their input, call one service and report (STYLE do/don't 2). Lists annotate
their counts in `get_queryset` (no query per row). A published release is read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import yaml
from django.contrib import admin, messages
from django.db.models import CharField, Count, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce, Concat
from django.http import HttpRequest
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django_q import admin as django_q_admin
from django_q.models import Schedule

from baitbench_site.admin_refusals import (
    DeletesOnlyWhatItMay,
    RefusalsAsMessages,
    related_refusal,
)
from baitbench_site.roles import OPERATE_PERMISSION, may_see_draft
from runs_app.admin_hidden import hidden_generations
from runs_app.forms import ReleaseForm
from runs_app.models import (
    AgentRun,
    CrossExamTurn,
    Generation,
    ImmutableError,
    JurorVerdict,
    LlmModel,
    ReaderResponse,
    RefusalCheck,
    Release,
    ReleaseStatus,
    ReplyOutcome,
    ScoringVersion,
    WorkStatus,
)
from runs_app.selectors import format_eta, release_progress, release_row_counts
from runs_app.services import release_create, release_retry_failed, release_update_config
from runs_app.stages import available_stages

# ---------------------------------------------------------------------------------------
# Claims marked in a text (pure: plain strings in, escaped HTML out)
# ---------------------------------------------------------------------------------------


def claim_spans(text: str, quotes: Sequence[tuple[str, str, str]]) -> list[tuple[int, int, str,
                                                                               str]]:
    """(start, end, label, title) for each quote found in the text, first free occurrence,
    overlapping spans dropped (the earlier claim wins)."""
    spans: list[tuple[int, int, str, str]] = []
    for quote, label, title in quotes:
        start = text.find(quote) if quote else -1
        while start >= 0 and any(start < end and start + len(quote) > begin
                                 for begin, end, _, _ in spans):
            start = text.find(quote, start + 1)
        if start >= 0:
            spans.append((start, start + len(quote), label, title))
    return sorted(spans)


def mark_claims(text: str, quotes: Sequence[tuple[str, str, str]]) -> SafeString:
    """The text, HTML-escaped, with each quoted claim in a <mark> classed by its label."""
    parts, position = [], 0
    for start, end, label, title in claim_spans(text, quotes):
        parts.append(escape(text[position:start]))
        parts.append(format_html('<mark class="claim claim-{}" title="{}">{}</mark>',
                                 label, title, text[start:end]))
        position = end
    parts.append(escape(text[position:]))
    return mark_safe("".join(str(part) for part in parts))  # every part escaped above


# ---------------------------------------------------------------------------------------
# Permissions and actions
# ---------------------------------------------------------------------------------------


class OperateMixin:
    def has_operate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(OPERATE_PERMISSION)


def _retry_action(stage_name: str) -> Callable:
    @admin.action(description=f"Retry failed and unscored work: {stage_name}",
                  permissions=["operate"])
    def retry(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
        for release in queryset:
            try:
                count = release_retry_failed(release=release, stage_name=stage_name,
                                             user=request.user)
            except ImmutableError as error:
                modeladmin.message_user(request, str(error.message), messages.ERROR)
                continue
            modeladmin.message_user(
                request, f"{release.code}: {count} failed or unscored {stage_name} row(s) "
                         f"pending again.")

    retry.__name__ = f"retry_failed_{stage_name}"
    return retry


@admin.register(LlmModel)
class LlmModelAdmin(RefusalsAsMessages, DeletesOnlyWhatItMay, admin.ModelAdmin):
    list_display = ("openrouter_id", "family", "display_name", "can_write", "can_judge",
                    "can_read")
    list_filter = ("family", "can_write", "can_judge", "can_read")
    search_fields = ("openrouter_id", "display_name", "family")

    def get_readonly_fields(self, request: HttpRequest, obj: LlmModel | None = None) -> tuple:
        # The id is what releases, verdicts and published snapshots name the model by: a
        # different id is a different model, added as such.
        return ("openrouter_id",) if obj is not None else ()


# The work tables whose rows can end unscored (a reply that never validated).
UNSCORED_TABLES = (RefusalCheck, JurorVerdict, ReaderResponse, AgentRun, CrossExamTurn)


def _rows(model, **filters) -> Coalesce:
    """A release's rows of one table, as a subquery: no join and no GROUP BY over the release
    list (a join of the texts beside these subqueries had SQLite evaluate them for every text:
    2.4 s a query on the demo, three queries a page), and a count of the list that leaves
    them out."""
    rows = (model.objects.filter(release=OuterRef("pk"), **filters)
            .order_by().values("release").annotate(count=Count("pk")).values("count"))
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


@admin.register(Release)
class ReleaseAdmin(RefusalsAsMessages, DeletesOnlyWhatItMay, OperateMixin, admin.ModelAdmin):
    list_display = ("code", "language", "status", "generation_count", "done_count",
                    "failed_count", "unscored_count", "frozen_at")
    list_filter = ("status", "language")
    search_fields = ("code", "title")
    form = ReleaseForm
    fields = ("config_yaml", "code", "language", "title", "status", "config_hash", "frozen_at",
              "created_at", "created_by", "progress")
    readonly_fields = ("code", "language", "title", "status", "config_hash", "frozen_at",
                       "created_at", "created_by", "progress", "configuration")

    def get_fields(self, request: HttpRequest, obj: Release | None = None) -> list[str]:
        # A release whose configuration cannot be edited (frozen, or not by this user) shows
        # it as text: the form's field, shown read-only, would say "None".
        fields = list(super().get_fields(request, obj))
        if obj is not None and (obj.is_frozen or not self.has_change_permission(request, obj)):
            fields[fields.index("config_yaml")] = "configuration"
        return fields

    @admin.display(description="Configuration (YAML)")
    def configuration(self, release: Release) -> SafeString:
        if release.is_frozen:
            note = (f"Frozen on {release.frozen_at:%Y-%m-%d %H:%M} UTC: every run of this "
                    f"release used this configuration, which no longer changes (its hash is "
                    f"the config hash below).")
        else:
            note = "Not frozen yet; those who operate releases may still edit it."
        return format_html("<p>{}</p><pre>{}</pre>", note, yaml.safe_dump(
            release.config, sort_keys=False, allow_unicode=True, width=100))

    def render_change_form(self, request: HttpRequest, context, add=False, change=False,
                           form_url="", obj=None):
        response = super().render_change_form(request, context, add, change, form_url, obj)
        # "View on site" of a draft leads to a 404 for those its pages are hidden from.
        if obj is not None and not obj.is_published and not may_see_draft(request.user, obj):
            response.context_data["has_absolute_url"] = False
        return response

    def save_model(self, request: HttpRequest, obj: Release, form, change: bool) -> None:
        # Releases are written by their services: pins, model registry and hash in one go.
        config = form.cleaned_data["config_yaml"]
        if not change:
            created = release_create(config=config, user=request.user)
            obj.pk, obj.code = created.pk, created.code
        elif not obj.is_frozen:
            release_update_config(release=obj, config=config)

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        if self.has_operate_permission(request):
            for name in available_stages():
                action = _retry_action(name)
                actions[action.__name__] = (action, action.__name__, action.short_description)
        return actions

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(
            generation_total=_rows(Generation),
            generation_done=_rows(Generation, status=WorkStatus.DONE),
            generation_failed=_rows(Generation, status=WorkStatus.FAILED),
            unscored_rows=sum((_rows(model, status=WorkStatus.DONE,
                                     outcome=ReplyOutcome.UNSCORED)
                               for model in UNSCORED_TABLES), Value(0)),
        )

    @admin.display(description="texts", ordering="generation_total")
    def generation_count(self, release: Release) -> int:
        return release.generation_total

    @admin.display(description="written", ordering="generation_done")
    def done_count(self, release: Release) -> int:
        return release.generation_done

    @admin.display(description="unscored rows", ordering="unscored_rows")
    def unscored_count(self, release: Release) -> int:
        return release.unscored_rows

    @admin.display(description="failed", ordering="generation_failed")
    def failed_count(self, release: Release) -> int:
        return release.generation_failed

    @admin.display(description="progress per stage")
    def progress(self, release: Release) -> SafeString:
        if not release.pk:
            return mark_safe("-")
        rows = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td><td>{}</td><td>{}</td></tr>",
            ((item.stage, item.total, item.scored, item.refused, item.unscored, item.failed,
              item.pending, item.claimed, format_eta(item.eta_seconds))
             for item in release_progress(release)),
        )
        gaps = format_html_join(
            "", "<li>{}, {} <code>{}</code>: {}</li>",
            ((counts.stage, counts.role, counts.model, counts.describe())
             for counts in release_row_counts(release) if counts.unscored or counts.failed))
        return format_html(
            "<table><thead><tr><th>stage</th><th>total</th><th>scored</th><th>refused</th>"
            "<th>unscored</th><th>failed</th><th>pending</th><th>claimed</th>"
            "<th>time left</th></tr></thead><tbody>{}</tbody></table>{}", rows,
            format_html("<p>Unscored or failed, per model:</p><ul>{}</ul>", gaps) if gaps
            else "")

    def has_change_permission(self, request: HttpRequest, obj: Release | None = None) -> bool:
        if obj is not None and obj.is_published:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Release | None = None) -> bool:
        if obj is not None and obj.is_published:
            return False
        return super().has_delete_permission(request, obj)

    def delete_refusal(self, request: HttpRequest, obj: Release) -> str:
        if obj.is_published:
            return "it is published, and a published release is never deleted"
        return related_refusal(request, obj, self.admin_site)


@admin.register(ScoringVersion)
class ScoringVersionAdmin(admin.ModelAdmin):
    """Stored scoring versions: read-only for everyone, releases pin them by hash."""

    list_display = ("name", "short_hash", "releases", "created_at")
    search_fields = ("name", "content_hash")
    fields = ("name", "content_hash", "created_at", "content_file")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # As text: a JSON key compared with an expression would be read as JSON.
        pin = Cast(KeyTextTransform("scoring_version", "config"), output_field=CharField())
        pinned = (Release.objects.annotate(pin=pin)
                  .filter(pin=Concat(OuterRef("name"), Value("@"), OuterRef("content_hash"),
                                     output_field=CharField()))
                  .order_by().values("pin").annotate(count=Count("pk")).values("count"))
        return super().get_queryset(request).annotate(
            release_count=Coalesce(Subquery(pinned, output_field=IntegerField()), 0))

    @admin.display(description="hash")
    def short_hash(self, version: ScoringVersion) -> str:
        return version.content_hash[:12]

    @admin.display(description="releases", ordering="release_count")
    def releases(self, version: ScoringVersion) -> int:
        return version.release_count  # type: ignore[attr-defined]

    @admin.display(description="content")
    def content_file(self, version: ScoringVersion) -> str:
        return format_html("<pre>{}</pre>", yaml.safe_dump(
            version.content, sort_keys=False, allow_unicode=True, width=100))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Generation)
class GenerationAdmin(OperateMixin, admin.ModelAdmin):
    list_display = ("pk", "release", "model", "scenario", "task", "condition", "variant",
                    "status", "attempts", "failure")
    list_filter = ("release", "model", "task", "condition", "status")
    list_select_related = ("release", "model", "scenario_version__scenario")
    search_fields = ("scenario_version__scenario__slug", "model__openrouter_id", "text")
    actions = ("retry_failed",)
    change_form_template = "admin/runs_app/generation/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return hidden_generations(request, super().get_queryset(request))

    @admin.display(description="scenario", ordering="scenario_version__scenario__slug")
    def scenario(self, generation: Generation) -> str:
        return generation.scenario_version.scenario.slug

    @admin.display(description="error")
    def failure(self, generation: Generation) -> str:
        return generation.error if generation.status == WorkStatus.FAILED else ""

    @admin.action(description="Retry failed generations", permissions=["operate"])
    def retry_failed(self, request: HttpRequest, queryset: QuerySet) -> None:
        published = sorted(set(queryset.filter(release__status=ReleaseStatus.PUBLISHED)
                               .values_list("release__code", flat=True)))
        for code in published:
            self.message_user(request, f"Release {code} is published: its generations are "
                                       f"never retried.", messages.ERROR)
        by_release: dict[Release, list[int]] = {}
        for generation in (queryset.filter(status=WorkStatus.FAILED)
                           .exclude(release__status=ReleaseStatus.PUBLISHED)
                           .select_related("release")):
            by_release.setdefault(generation.release, []).append(generation.pk)
        if not by_release and not published:
            self.message_user(request, "None of the selected generations failed: nothing to "
                                       "retry.", messages.WARNING)
        for release, ids in by_release.items():
            try:
                count = release_retry_failed(release=release, stage_name="generate", ids=ids,
                                             user=request.user)
            except ImmutableError as error:
                self.message_user(request, str(error.message), messages.ERROR)
                continue
            self.message_user(request, f"{release.code}: {count} generation(s) pending again.")

    # A generation is a record of what a model did: it is read, never edited here.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Generation | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Generation | None = None) -> bool:
        return False

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None):
        generation = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if generation is not None:
            context |= generation_page_context(generation)
        return super().change_view(request, object_id, form_url, extra_context=context)


def generation_page_context(generation: Generation) -> dict[str, Any]:
    """Everything the generation page shows beyond the fields: log, verdicts, panel answers."""
    verdicts = list(JurorVerdict.objects.filter(generation=generation)
                    .select_related("juror").prefetch_related("claim_rows"))
    return {
        "generation": generation,
        "attempt_log": list(generation.attempt_log.all()),
        "refusal_check": getattr(generation, "refusal_check", None),
        "text_score": getattr(generation, "score", None),
        "verdicts": [
            {"verdict": verdict, "claims": list(verdict.claim_rows.all()),
             "marked_text": mark_claims(generation.text, [
                 (claim.quote, claim.label, f"{claim.label}: {', '.join(claim.basis) or '-'}")
                 for claim in verdict.claim_rows.all()])}
            for verdict in verdicts
        ],
        "reader_responses": list(ReaderResponse.objects.filter(generation=generation)
                                 .order_by("position")),
        "crossexam": crossexam_rows(generation),
    }


def crossexam_rows(generation: Generation) -> list[dict[str, Any]]:
    """A T4 text's interview: each answer with the question it answers, its turn's status and
    the judge's label. Answer 1 is the text itself (its questions are the reporter's)."""
    turns = list(CrossExamTurn.objects.filter(generation=generation).select_related("judge")
                 .order_by("number"))
    if not turns:
        return []
    labels = next((turn.labels for turn in turns if turn.kind == CrossExamTurn.Kind.LABELS), [])
    rows = [{"kind": "turn", "number": 1, "question": "", "answer": generation.text,
             "status": "Done", "error": ""}]
    rows += [{"kind": "turn", "number": turn.number, "question": turn.question,
              "answer": turn.answer,
              "status": "Refused" if turn.writer_refusal else turn.get_status_display(),
              "error": turn.writer_refusal or turn.error}
             for turn in turns if turn.kind == CrossExamTurn.Kind.TURN]
    for row, label in zip(rows, labels, strict=False):
        row["label"], row["reason"] = label.get("label", ""), label.get("reason", "")
    judge = next((turn for turn in turns if turn.kind == CrossExamTurn.Kind.LABELS), None)
    if judge is not None:
        rows.append({"kind": "labels", "number": judge.number, "judge": str(judge.judge or ""),
                     "status": judge.get_status_display(), "error": judge.error})
    return rows


# The reader trial and the contamination check, read-only.
import runs_app.admin_checks  # noqa: E402, F401


class ScheduleReadOnlyAdmin(runs_app.admin_checks.ReadOnlyAdmin, django_q_admin.ScheduleAdmin):
    """django-q2's schedule, to read only: a row runs any importable function, with any
    arguments, on every worker, so rows come from code alone
    (`runs_app.drains.ensure_schedule`), superusers included."""


admin.site.unregister(Schedule)
admin.site.register(Schedule, ScheduleReadOnlyAdmin)
