from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate


class AuditsAppConfig(AppConfig):
    name = "audits_app"
    verbose_name = "Audits and publication"

    def ready(self) -> None:
        from django.core import checks

        from audits_app.archive.checks import archive_key_settings
        from baitbench_site.immutability import install_error_wrapper, sync_guards
        from baitbench_site.roles import sync_roles

        checks.register(archive_key_settings, checks.Tags.security)

        # audits_app is the last app: by its post_migrate every permission row and every
        # guarded table exists.
        post_migrate.connect(sync_roles, sender=self, dispatch_uid="baitbench-sync-roles")
        post_migrate.connect(sync_guards, sender=self, dispatch_uid="baitbench-sync-guards")
        connection_created.connect(install_error_wrapper,
                                   dispatch_uid="baitbench-immutable-errors")
