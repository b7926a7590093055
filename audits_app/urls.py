from django.urls import path
from django.views.generic import RedirectView

from audits_app.archive import views as archive_views
from audits_app.http_cache import catalogue_cache, published_cache
from audits_app.pages import compare as compare_views
from audits_app.pages import method as method_views
from audits_app.pages import views
from audits_app.publication import views as publish_views
from baitbench_site.methods import declare

app_name = "audits"

urlpatterns = [
    path("", catalogue_cache(views.release_list, page=True), name="release-list"),
    # The releases are listed on the front page; /releases/ is where a reader trims a URL to.
    path("releases/", declare(RedirectView.as_view(
        pattern_name="audits:release-list", permanent=True, http_method_names=["get", "head"]),
        ["GET", "HEAD"])),
    path("publish/", publish_views.publish_queue, name="publish-queue"),
    path("compare/", compare_views.compare_choose, name="compare-choose"),
    path("releases/<str:code_a>/compare/<str:code_b>/",
         catalogue_cache(compare_views.compare_detail, page=True), name="compare"),
    path("releases/<str:code_a>/compare/<str:code_b>.csv",
         catalogue_cache(compare_views.compare_csv), name="compare-csv"),
    # Model ids hold a slash (`openai/gpt-4.1`): the path converter keeps it.
    path("models/<path:model_id>.csv", catalogue_cache(compare_views.model_csv),
         name="model-csv"),
    path("models/<path:model_id>/", catalogue_cache(compare_views.model_detail, page=True),
         name="model-detail"),
    path("releases/<str:code>/", published_cache(views.release_detail, evidence=True, page=True),
         name="release-detail"),
    path("releases/<str:code>/publish/", publish_views.release_publish_view,
         name="release-publish"),
    path("releases/<str:code>/chart.svg", published_cache(views.release_chart),
         name="release-chart"),
    path("releases/<str:code>/leaderboard.csv",
         published_cache(views.release_leaderboard_csv, evidence=True),
         name="release-leaderboard-csv"),
    path("releases/<str:code>/calibration.svg", method_views.release_calibration_svg,
         name="release-calibration-svg"),
    path("releases/<str:code>/calibration.csv", method_views.release_calibration_csv,
         name="release-calibration-csv"),
    path("releases/<str:code>/archive.zip", archive_views.download_limited(
        published_cache(archive_views.release_archive_download, signed=True)),
         {"staff": False}, name="release-archive"),
    path("releases/<str:code>/archive-staff.zip", archive_views.download_limited(
        archive_views.release_archive_download), {"staff": True}, name="release-archive-staff"),
    path("releases/<str:code>/scenarios/<slug:slug>/",
         published_cache(views.scenario_detail, page=True),
         name="scenario-detail"),
    path("releases/<str:code>/texts/", published_cache(views.text_list, page=True),
         name="text-list"),
    path("releases/<str:code>/texts/<int:text_id>/",
         published_cache(views.text_detail, page=True), name="text-detail"),
]
