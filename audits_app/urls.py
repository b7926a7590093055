from django.urls import path

from audits_app import views

app_name = "audits"

urlpatterns = [
    path("", views.release_list, name="release-list"),
]
