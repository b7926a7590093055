from django.urls import path

from audits_app import views, views_checks, views_compare, views_publish

app_name = "audits"

urlpatterns = [
    path("", views.release_list, name="release-list"),
    path("publish/", views_publish.publish_queue, name="publish-queue"),
    path("compare/", views_compare.compare_choose, name="compare-choose"),
    path("releases/<str:code_a>/compare/<str:code_b>/", views_compare.compare_detail,
         name="compare"),
    path("releases/<str:code_a>/compare/<str:code_b>.csv", views_compare.compare_csv,
         name="compare-csv"),
    # Model ids hold a slash (`openai/gpt-4.1`): the path converter keeps it.
    path("models/<path:model_id>.csv", views_compare.model_csv, name="model-csv"),
    path("models/<path:model_id>/", views_compare.model_detail, name="model-detail"),
    path("releases/<str:code>/", views.release_detail, name="release-detail"),
    path("releases/<str:code>/publish/", views_publish.release_publish_view,
         name="release-publish"),
    path("releases/<str:code>/chart.svg", views.release_chart, name="release-chart"),
    path("releases/<str:code>/leaderboard.csv", views.release_leaderboard_csv,
         name="release-leaderboard-csv"),
    path("releases/<str:code>/calibration.svg", views_checks.release_calibration_svg,
         name="release-calibration-svg"),
    path("releases/<str:code>/calibration.csv", views_checks.release_calibration_csv,
         name="release-calibration-csv"),
    path("releases/<str:code>/archive.zip", views.release_archive_download,
         {"staff": False}, name="release-archive"),
    path("releases/<str:code>/archive-staff.zip", views.release_archive_download,
         {"staff": True}, name="release-archive-staff"),
    path("releases/<str:code>/scenarios/<slug:slug>/", views.scenario_detail,
         name="scenario-detail"),
    path("releases/<str:code>/texts/", views.text_list, name="text-list"),
    path("releases/<str:code>/texts/<int:text_id>/", views.text_detail, name="text-detail"),
]
