from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The site itself as an app, so that its signal receivers are connected at startup."""

    name = "baitbench_site"
    label = "baitbench_site"
    verbose_name = "BaitBench site"

    def ready(self) -> None:
        from baitbench_site import errors, security  # noqa: F401  (connects their receivers)
