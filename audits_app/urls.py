from django.urls import path

from audits_app import views, views_publish

app_name = "audits"

urlpatterns = [
    path("", views.release_list, name="release-list"),
    path("publish/", views_publish.publish_queue, name="publish-queue"),
    path("releases/<str:code>/", views.release_detail, name="release-detail"),
    path("releases/<str:code>/publish/", views_publish.release_publish_view,
         name="release-publish"),
    path("releases/<str:code>/chart.svg", views.release_chart, name="release-chart"),
    path("releases/<str:code>/leaderboard.csv", views.release_leaderboard_csv,
         name="release-leaderboard-csv"),
    path("releases/<str:code>/scenarios/<slug:slug>/", views.scenario_detail,
         name="scenario-detail"),
    path("releases/<str:code>/texts/", views.text_list, name="text-list"),
    path("releases/<str:code>/texts/<int:text_id>/", views.text_detail, name="text-detail"),
]
