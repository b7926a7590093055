"""Where each staff role starts and what the navigation offers it (DESIGN section 8).

Every role lands on its own work after logging in: a curator on the scenarios, an operator on
the runs, an auditor on the review queue, a publisher on the releases awaiting publication, a
superuser on the admin. The navigation (the site's header and the admin's index) offers only
pages the user may open: each link is decided by the same permission check as the page it
leads to, never by a group's name, so a link never ends in a 403.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from baitbench_site.methods import require_safe
from baitbench_site.roles import can_operate, is_staff, may_publish
from baitbench_site.roles import is_auditor as may_review

CURATE_PERMISSION = "scenarios_app.change_scenario"
# The operator's pages: every release's runs, progress, budget and controls (runs_app.views).
RUNS_URL_NAME = "operate:release-list"
SCENARIOS_URL_NAME = "admin:scenarios_app_scenario_changelist"


@dataclass(frozen=True)
class NavLink:
    key: str
    label: str
    url: str



def staff_links(user) -> list[NavLink]:
    """The work areas this user may open, in the order of the pipeline."""
    if not is_staff(user):
        return []
    links = []
    if user.has_perm("scenarios_app.view_scenario"):
        links.append(NavLink("scenarios", "Scenarios", reverse(SCENARIOS_URL_NAME)))
    if can_operate(user):
        links.append(NavLink("runs", "Runs", reverse(RUNS_URL_NAME)))
    if may_review(user):
        links.append(NavLink("review", "Review", reverse("review:queue")))
    if may_publish(user):
        links.append(NavLink("publish", "Publish", reverse("audits:publish-queue")))
    links.append(NavLink("admin", "Admin", reverse("admin:index")))
    return links


def landing_url(user) -> str:
    """Where a user starts: the last step of the pipeline their permissions allow, so a
    user with several roles starts on the work closest to publication."""
    if not is_staff(user):
        return "/"
    if user.is_superuser:
        return reverse("admin:index")
    if may_publish(user):
        return reverse("audits:publish-queue")
    if may_review(user):
        return reverse("review:queue")
    if can_operate(user):
        return reverse(RUNS_URL_NAME)
    if user.has_perm(CURATE_PERMISSION):
        return reverse(SCENARIOS_URL_NAME)
    return reverse("admin:index")


@require_safe
@login_required
def landing(request: HttpRequest) -> HttpResponse:
    return redirect(landing_url(request.user))


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login form (throttled by django-axes as before). When no page was asked
    for, or only the admin's index, which every login form defaults to, a successful login
    goes to the user's landing page instead."""
    asked = request.POST.get(REDIRECT_FIELD_NAME) or request.GET.get(REDIRECT_FIELD_NAME)
    if not asked or asked == reverse("admin:index"):
        target = reverse("landing")
        query = request.GET.copy()
        query[REDIRECT_FIELD_NAME] = target
        request.GET = query
        if request.method == "POST":
            form = request.POST.copy()
            form[REDIRECT_FIELD_NAME] = target
            request.POST = form
    if request.method == "GET" and not asked and is_staff(request.user):
        return redirect(landing_url(request.user))  # already logged in
    return admin.site.login(request)


def navigation(request: HttpRequest) -> dict:
    """Context processor: the header's (and the admin index's) links for this user."""
    user = getattr(request, "user", None)
    return {"staff_nav": staff_links(user) if user is not None else []}
