from django.apps import AppConfig


class RunsAppConfig(AppConfig):
    name = "runs_app"
    verbose_name = "Runs"
