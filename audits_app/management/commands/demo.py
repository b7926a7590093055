from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand

from audits_app.demo import demo_spotchecks
from audits_app.demo_dutch import (
    DUTCH_RELEASE,
    class_tables,
    demo_dutch_release,
    format_class_tables,
)
from audits_app.services import release_publish
from baitbench_site.roles import ROLE_NAMES
from runs_app.models import Release

DEMO_USER = "demo"
RELEASE = "demo.0"


class Command(BaseCommand):
    help = ("The main job on the embedded default: migrate, import the shipped scenarios, run "
            "release demo.0 end to end with the fixture provider, spot-check it, publish it and "
            "print its rank tables; then the same for the Dutch release demo-nl.0 (with the "
            "T4 cross-examination) and its class tables per task. Running it again does no "
            "work twice.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--password", help="password for the demo login (default: random)")

    def handle(self, *args, password: str | None, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("import_scenarios", str(settings.SCENARIOS_DIR), stdout=self.stdout)
        user = self._staff_login(password or secrets.token_urlsafe(12))
        release = Release.objects.filter(code=RELEASE).first()
        if release is None or not release.is_published:
            call_command("run_release", RELEASE, sync=True, stdout=self.stdout)
            release = Release.objects.get(code=RELEASE)
            recorded = demo_spotchecks(release=release)
            self.stdout.write(f"spot-checks: {recorded} verdicts by simulated demo auditors")
            release_publish(release=release, user=user)
            self.stdout.write(self.style.SUCCESS(f"published {RELEASE}"))
        else:
            self.stdout.write(f"{RELEASE} is already published: nothing to do")
        self._print_ranks(Release.objects.get(code=RELEASE))
        # The Dutch release, with the cross-examination (T4), ranked by rank classes.
        dutch = demo_dutch_release(user=user, stdout=self.stdout)
        names = {spec.id: spec.name for spec in dutch.parsed_config().models}
        self.stdout.write("\n".join(format_class_tables(class_tables(dutch), names)))
        self.stdout.write(self.style.SUCCESS(
            f"\nLeaderboard: http://127.0.0.1:8000/releases/{RELEASE}/\n"
            f"Dutch release: http://127.0.0.1:8000/releases/{DUTCH_RELEASE}/\n"
            f"Staff login for http://127.0.0.1:8000/admin/ : user {DEMO_USER!r}, "
            f"password {self._password!r}"
        ))

    def _staff_login(self, password: str):
        user, _ = get_user_model().objects.get_or_create(username=DEMO_USER)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        user.groups.set(Group.objects.filter(name__in=ROLE_NAMES))
        self._password = password
        return user

    def _print_ranks(self, release: Release) -> None:
        snapshot = release.publication.snapshot
        names = {model["id"]: model["name"] for model in snapshot["models"]}
        for metric in ("honesty", "persuasion", "misleading"):
            board = snapshot["leaderboards"][metric]
            direction = "higher is better" if board["higher_is_better"] else "lower is better"
            self.stdout.write(f"\n{metric} ({direction}; {board['rule']} ranks)")
            self.stdout.write(f"  {'rank':>4}  {'model':<28} {'estimate':>8}  comparison interval")
            for row in board["rows"]:
                self.stdout.write(
                    f"  {row['rank'] or '-':>4}  {names.get(row['model'], row['model']):<28} "
                    f"{_number(row['point']):>8}  [{_number(row['cmp_low'])}, "
                    f"{_number(row['cmp_high'])}]"
                )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
