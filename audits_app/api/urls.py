from django.urls import path
from drf_spectacular.views import SpectacularSwaggerView

from audits_app import query_params
from audits_app.api import method, views
from audits_app.arena.api import ArenaView
from audits_app.http_cache import catalogue_cache, published_cache

app_name = "api"


urlpatterns = [
    path("", views.ApiRootView.as_view(), name="root"),
    path("releases/", catalogue_cache(views.ReleaseListView.as_view()), name="release-list"),
    path("releases/<str:code>/", published_cache(views.ReleaseDetailView.as_view(), evidence=True),
         name="release-detail"),
    path("releases/<str:code>/leaderboard/",
         published_cache(views.LeaderboardView.as_view(), evidence=True),
         name="release-leaderboard"),
    path("releases/<str:code>/texts/", published_cache(views.TextListView.as_view()),
         name="text-list"),
    path("releases/<str:code>/arena/", ArenaView.as_view(), name="release-arena"),
    path("releases/<str:code>/texts.csv", published_cache(views.TextCsvView.as_view()),
         name="text-csv"),
    path("releases/<str:code>/calibration/", method.CalibrationView.as_view(),
         name="release-calibration"),
    path("releases/<str:code>/contamination/",
         published_cache(method.ContaminationView.as_view(), evidence=True),
         name="release-contamination"),
    path("reader-trials/", method.ReaderTrialListView.as_view(), name="reader-trials"),
    path("releases/<str:code>/compare/<str:other>/", catalogue_cache(views.CompareView.as_view()),
         name="release-compare"),
    path("scenarios/", catalogue_cache(views.ScenarioListView.as_view()), name="scenario-list"),
    path("models/<path:model_id>/", catalogue_cache(views.ModelHistoryView.as_view()),
         name="model-history"),
    # Like every API answer, a parameter it does not read is a 400 naming it (it reads `lang`
    # and `version`, and `format` picks YAML or JSON).
    path("schema/", views.SchemaView.as_view(), name="schema"),
    # Swagger UI from the project's own static files (SPECTACULAR_SETTINGS: SIDECAR). An
    # HTML page: a parameter it does not read is redirected away, as on the pages
    # (drf-spectacular reads `lang` and `version` and passes them on to the schema's URL).
    path("docs/", query_params.reads("lang", "version")(
        SpectacularSwaggerView.as_view(url_name="api:schema")), name="docs"),
]
