from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AuditsAppConfig(AppConfig):
    name = "audits_app"
    verbose_name = "Audits and publication"

    def ready(self) -> None:
        from baitbench_site.roles import sync_roles

        # audits_app is the last app: by its post_migrate every permission row exists.
        post_migrate.connect(sync_roles, sender=self, dispatch_uid="baitbench-sync-roles")
