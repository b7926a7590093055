from django.urls import path

from audits_app.pages import method as method_views
from audits_app.review import views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("checks/<int:pk>/", views.check_detail, name="check"),
    path("checks/<int:pk>/correct/", views.check_correct, name="check-correct"),
    path("releases/<str:code>/agreement/", views.release_agreement, name="agreement"),
    path("releases/<str:code>/batches/new/", views.batch_create, name="batch-create"),
    path("releases/<str:code>/batches/<int:batch_id>/", views.batch_detail, name="batch"),
    path("releases/<str:code>/out-of-band/", views.oob_import, name="oob-import"),
    path("releases/<str:code>/out-of-band/texts/", views.oob_texts, name="oob-texts"),
    path("releases/<str:code>/out-of-band/texts.csv", views.oob_worksheet, name="oob-worksheet"),
    path("releases/<str:code>/out-of-band/texts/<str:text>/", views.oob_text, name="oob-text"),
    path("releases/<str:code>/out-of-band/template.csv", views.oob_template,
         name="oob-template"),
    path("releases/<str:code>/readers/", views.readers_import, name="readers-import"),
    path("reader-trials/", method_views.reader_trials_page, name="reader-trials"),
]
