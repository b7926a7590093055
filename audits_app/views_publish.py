"""Publishing a release from the web UI (issue 5): a preview of what will be frozen, then confirm.

Staff only; without `audits_app.publish_release` the page answers 403, on GET and on POST.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from audits_app.selectors import release_counts, release_gate
from audits_app.services import PublishError, release_publish, release_publish_problems
from runs_app.models import Release


@login_required
@require_http_methods(["GET", "POST"])
def release_publish_view(request: HttpRequest, code: str) -> HttpResponse:
    if not (request.user.is_staff and request.user.has_perm("audits_app.publish_release")):
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
        "counts": release_counts(release),
        "gate": release_gate(release),
        "problems": release_publish_problems(release),
        "error": error,
        "override_reason": override_reason,
    }
    return render(request, "audits_app/publish.html", context, status=400 if error else 200)
