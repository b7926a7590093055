from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from baitbench_site import navigation
from baitbench_site.methods import declare


class FaviconView(RedirectView):
    """Browsers ask for /favicon.ico on every page that names no icon (the browsable API)."""

    permanent = True
    http_method_names = ["get", "head"]

    def get_redirect_url(self, *args, **kwargs) -> str:
        return static("favicon.svg")


class ApiRootView(RedirectView):
    """/api/ names no version: readers who try it are sent to the one this site serves."""

    permanent = False
    pattern_name = "api:root"
    http_method_names = ["get", "head"]


urlpatterns = [
    path("favicon.ico", declare(FaviconView.as_view(), ["GET", "HEAD"])),
    # Before the admin's own: a login without a destination lands on the user's work.
    path("admin/login/", navigation.admin_login, name="login"),
    path("staff/", navigation.landing, name="landing"),
    path("admin/", admin.site.urls),
    path("api/", declare(ApiRootView.as_view(), ["GET", "HEAD"])),
    path("api/v1/", include("audits_app.api.urls")),
    path("review/", include("audits_app.review.urls")),
    path("arena/", include("audits_app.arena.urls")),
    path("studies/", include("audits_app.calibration.studies.urls")),
    path("runs/", include("runs_app.urls")),
    path("", include("audits_app.urls")),
]

# Pages in the site's layout that say why, with the way back (`baitbench_site.errors`).
handler400 = "baitbench_site.errors.bad_request"
handler403 = "baitbench_site.errors.permission_denied"
handler404 = "baitbench_site.errors.page_not_found"
handler500 = "baitbench_site.errors.server_error"
