from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("audits_app.api.urls")),
    path("review/", include("audits_app.review.urls")),
    path("arena/", include("audits_app.arena.urls")),
    path("", include("audits_app.urls")),
]
