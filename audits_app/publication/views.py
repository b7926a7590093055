"""Publishing a release from the web UI: a preview of what will be frozen, then confirm.

Staff only; without `audits_app.publish_release` the page answers 403, on GET and on POST.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from audits_app.models import Publication, SpotCheck
from audits_app.publication.gate import release_counts, release_gate
from audits_app.publication.same_words import copies_on_publishing
from audits_app.publication.services import (
    PUBLISHABLE_STATUSES,
    PublishError,
    release_publish,
    release_publish_problems,
)
from baitbench_site.methods import require_form, require_safe
from baitbench_site.roles import may_publish
from runs_app.models import Release, ReleaseStatus
from runs_app.selectors import release_progress, release_row_counts, served_model_warnings


@login_required
@require_form
def release_publish_view(request: HttpRequest, code: str) -> HttpResponse:
    if not may_publish(request.user):
        raise PermissionDenied("publishing needs the publisher role")
    release = get_object_or_404(Release, code=code)
    error = ""
    override_reason = ""
    if request.method == "POST":
        override_reason = request.POST.get("override_reason", "")
        try:
            release_publish(release=release, user=request.user, override_reason=override_reason)
        except PublishError as refusal:
            error = str(refusal)
        else:
            messages.success(request, f"Release {release.code} is published.")
            return redirect(release.get_absolute_url())
    context = {
        "release": release,
        # Published: the page says so first, in the past tense, and offers nothing to do.
        "publication": Publication.objects.filter(release=release).select_related(
            "published_by").defer("snapshot").first(),
        "counts": release_counts(release),
        "stages": release_progress(release),
        "gaps": [counts for counts in release_row_counts(release)
                 if counts.unscored or counts.failed],
        "gate": release_gate(release),
        "problems": release_publish_problems(release),
        "served_warnings": served_model_warnings(release),
        "copies": copies_on_publishing(release),
        "unfinished_checks": SpotCheck.objects.filter(
            release=release, status=SpotCheck.Status.ASSIGNED).count(),
        "error": error,
        "override_reason": override_reason,
    }
    return render(request, "audits_app/publish.html", context, status=400 if error else 200)


@require_safe
@login_required
def publish_queue(request: HttpRequest) -> HttpResponse:
    """The publisher's landing page: releases that have run, with what stands between each
    and publication (unfinished work, the spot-check gate), and the latest publications."""
    if not may_publish(request.user):
        raise PermissionDenied("publishing needs the publisher role")
    waiting = [
        {"release": release, "problems": release_publish_problems(release),
         "gate": release_gate(release)}
        for release in Release.objects.filter(
            status__in=PUBLISHABLE_STATUSES).order_by("code")
    ]
    published = (Release.objects.filter(status=ReleaseStatus.PUBLISHED)
                 .select_related("publication").order_by("-publication__published_at")[:10])
    return render(request, "audits_app/publish_queue.html", {
        "ready": [entry for entry in waiting if not entry["problems"]],
        "running": [entry for entry in waiting if entry["problems"]],
        "published": published,
    })
