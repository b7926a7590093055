from django.urls import path

from audits_app.arena import views

app_name = "arena"

urlpatterns = [
    path("", views.arena_index, name="index"),
    path("<str:code>/", views.arena_detail, name="detail"),
    path("<str:code>/consent/", views.arena_consent, name="consent"),
    path("<str:code>/pair/", views.arena_pair, name="pair"),
    path("<str:code>/vote/", views.arena_vote, name="vote"),
    path("<str:code>/results/", views.arena_results, name="results"),
    path("<str:code>/results.csv", views.arena_results_csv, name="results-csv"),
    path("<str:code>/manage/", views.arena_manage, name="manage"),
    path("<str:code>/ethics/<int:review_id>/document/", views.ethics_document,
         name="ethics-document"),
]
