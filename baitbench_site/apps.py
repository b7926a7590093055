from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig, SimpleAdminConfig

# Commands that never touch the admin, whose start-up is waited for: `run_release` starts a
# run while idle workers wait for its drains. Their processes do not import the admin modules.
COMMANDS_WITHOUT_ADMIN = frozenset({"run_release"})
_admin_wanted = True


def admin_for_command(argv: list[str]) -> None:
    """Called by manage.py before Django starts: a command of `COMMANDS_WITHOUT_ADMIN` skips
    the admin's autodiscovery for the whole process."""
    global _admin_wanted
    _admin_wanted = argv[1:2] == [] or argv[1] not in COMMANDS_WITHOUT_ADMIN


class SiteConfig(AppConfig):
    """The site itself as an app, so that its signal receivers are connected at startup."""

    name = "baitbench_site"
    label = "baitbench_site"
    verbose_name = "BaitBench site"

    def ready(self) -> None:
        from baitbench_site import errors, security  # noqa: F401  (connects their receivers)


class SiteAdminConfig(AdminConfig):
    """Django's admin, whose start imports every app's admin module and through them the
    pages, the statistics, numpy and scipy: about half of a process's start-up (0.6 of 1.4
    CPU seconds, `python -X importtime`). The admin modules only register admin pages (no
    signal receivers, no checks outside the admin's own), so a command that never serves
    or checks the admin starts without them; every other process loads them as before."""

    def ready(self) -> None:
        from baitbench_site import admin_links

        admin_links.install()  # read-only relations link only where the user may look
        if _admin_wanted:
            super().ready()
        else:
            SimpleAdminConfig.ready(self)  # the admin's checks, without its discovery
