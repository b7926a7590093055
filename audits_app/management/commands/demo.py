from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand

from baitbench_site.roles import ROLE_NAMES

DEMO_USER = "demo"


class Command(BaseCommand):
    help = ("The main job on the embedded default: migrate, import the shipped scenarios, run "
            "release demo.0 end to end with the fixture provider, and print where to look.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--password", help="password for the demo login (default: random)")

    def handle(self, *args, password: str | None, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("import_scenarios", str(settings.SCENARIOS_DIR), stdout=self.stdout)
        call_command("run_release", "demo.0", sync=True, stdout=self.stdout)
        call_command("release_status", "demo.0", stdout=self.stdout)
        password = password or secrets.token_urlsafe(12)
        self._staff_login(password)
        self.stdout.write(self.style.SUCCESS(
            f"\nStaff login for http://127.0.0.1:8000/admin/ : user {DEMO_USER!r}, "
            f"password {password!r}"
        ))

    def _staff_login(self, password: str) -> None:
        user, _ = get_user_model().objects.get_or_create(username=DEMO_USER)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        user.groups.set(Group.objects.filter(name__in=ROLE_NAMES))
