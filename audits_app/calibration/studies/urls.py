from django.urls import path

from audits_app.calibration.studies import views

app_name = "studies"

urlpatterns = [
    path("<int:study_id>/", views.study_detail, name="detail"),
    path("<int:study_id>/consent/", views.study_consent, name="consent"),
    path("<int:study_id>/go/", views.study_go, name="go"),
    path("<int:study_id>/done/", views.study_done, name="done"),
    path("<int:study_id>/progress/", views.study_progress, name="progress"),
    path("<int:study_id>/responses.csv", views.study_responses_csv, name="responses-csv"),
]
