from django.apps import AppConfig


class ScenariosAppConfig(AppConfig):
    name = "scenarios_app"
    verbose_name = "Scenarios"
