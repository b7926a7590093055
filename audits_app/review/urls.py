from django.urls import path

from audits_app.review import views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("checks/<int:pk>/", views.check_detail, name="check"),
    path("checks/<int:pk>/correct/", views.check_correct, name="check-correct"),
    path("releases/<str:code>/agreement/", views.release_agreement, name="agreement"),
    path("releases/<str:code>/batches/new/", views.batch_create, name="batch-create"),
    path("releases/<str:code>/out-of-band/", views.oob_import, name="oob-import"),
    path("releases/<str:code>/readers/", views.readers_import, name="readers-import"),
]
