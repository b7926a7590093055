"""The operator's pages under /runs/ (namespace `operate`): the names are stable, so that
other pages can link to them."""

from django.urls import path

from runs_app import views

app_name = "operate"

urlpatterns = [
    path("", views.release_list, name="release-list"),
    path("<str:code>/", views.release_page, name="release"),
    path("<str:code>/progress.json", views.release_progress, name="progress"),
    path("<str:code>/start/", views.run_start_view, name="start"),
    path("<str:code>/pause/", views.run_pause_view, name="pause"),
    path("<str:code>/resume/", views.run_resume_view, name="resume"),
    path("<str:code>/cancel/", views.run_cancel_view, name="cancel"),
    path("<str:code>/retry/", views.run_retry_view, name="retry"),
    path("<str:code>/budget/", views.run_budget_view, name="budget"),
    path("<str:code>/models-list/", views.models_refresh_view, name="models-refresh"),
]
