"""`demo [--reset-password | --password PW]`: the main job on the embedded default.

Running it again does no work twice and never overwrites people's work: a scenario whose
current version is not the shipped file's content (a curator edited it) is kept, and the
demo login keeps its password unless asked to set a new one.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from audits_app.arena.demo import demo_arena
from audits_app.calibration.studies.demo import demo_study
from audits_app.pages.viewer import not_blind_ids
from audits_app.publication.demo_dutch import (
    DUTCH_RELEASE,
    class_tables,
    demo_dutch_release,
    format_class_tables,
)
from audits_app.publication.services import PublishError, release_publish
from audits_app.publication.snapshot_model import snapshot_load
from audits_app.spotchecks.demo import demo_spotchecks
from baitbench_site.immutability import ImmutableError
from baitbench_site.roles import ROLE_NAMES
from runs_app.contamination_services import contamination_check_run
from runs_app.management.commands.contamination_check import write_report
from runs_app.models import Release
from scenarios_app.files import load_scenario_files
from scenarios_app.models import Scenario
from scenarios_app.services import scenarios_import

DEMO_USER = "demo"
RELEASE = "demo.0"


class Command(BaseCommand):
    help = ("The main job on the embedded default: migrate, import the shipped scenarios, run "
            "release demo.0 end to end with the fixture provider, spot-check it, publish it, "
            "open a demo arena with simulated votes and a demo reading study filled by a "
            "simulated crowd, and print the rank tables; then the same "
            "for the Dutch release demo-nl.0 (with the T4 cross-examination) and its class "
            "tables per task. Running it again does no work twice, keeps scenarios curators "
            "have edited and keeps the demo login's password.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--password", help="set the demo login's password to this")
        parser.add_argument("--reset-password", action="store_true",
                            help="give the demo login a new random password")
        parser.add_argument("--port", type=int, default=8000,
                            help="the port the site is served on, for the links printed "
                                 "(`make demo PORT=8001`)")

    def handle(self, *args, password: str | None, reset_password: bool, port: int = 8000,
               **options) -> None:
        if not 0 < port < 65536:
            raise CommandError(f"--port {port} is not a port number (1 to 65535)")
        if password is not None:  # refused before any work, by the rules every login keeps
            try:
                validate_password(password, get_user_model()(username=DEMO_USER))
            except ValidationError as refused:
                raise CommandError(f"--password is refused: {' '.join(refused.messages)}"
                                   ) from None
        call_command("migrate", interactive=False, verbosity=0)
        self._import_scenarios()
        user, new_password = self._staff_login(password, reset_password)
        try:
            self._run_and_publish(user)
        except (ImmutableError, PublishError) as refusal:
            raise CommandError(str(getattr(refusal, "message", refusal))) from None
        self._print_ranks(Release.objects.get(code=RELEASE))
        write_report(self.stdout, contamination_check_run(release=Release.objects.get(
            code=RELEASE)))
        self.stdout.write("\n" + demo_arena(release=Release.objects.get(code=RELEASE), user=user))
        self.stdout.write("\n" + demo_study(release=Release.objects.get(code=RELEASE), user=user))
        # The Dutch release, with the cross-examination (T4), ranked by rank classes.
        dutch = demo_dutch_release(user=user, stdout=self.stdout, leave_out=not_blind_ids)
        names = {spec.id: spec.name for spec in dutch.parsed_config().models}
        self.stdout.write("\n".join(format_class_tables(class_tables(dutch), names)))
        login = (f"password {new_password!r}" if new_password else
                 "password unchanged (--reset-password sets a new one)")
        site = f"http://127.0.0.1:{port}"
        self.stdout.write(self.style.SUCCESS(
            f"\nLeaderboard: {site}/releases/{RELEASE}/\n"
            f"Dutch release: {site}/releases/{DUTCH_RELEASE}/\n"
            f"Arena: {site}/arena/{RELEASE}/\n"
            f"Staff login for {site}/admin/ : user {DEMO_USER!r}, {login}"
        ))

    def _import_scenarios(self) -> None:
        """The shipped files, except where a scenario's current version is someone's edit."""
        folder = Path(settings.SCENARIOS_DIR)
        result = scenarios_import(paths=[str(folder)], keep_edited=True)
        if not result.ok:
            for line in result.problems:
                self.stderr.write(line)
            raise CommandError(f"the shipped scenarios in {folder} did not import")
        self.stdout.write(
            f"scenarios: {len(result.created)} imported, {len(result.updated)} updated, "
            f"{len(result.unchanged)} unchanged, {len(result.kept)} kept as edited")
        kept = Scenario.objects.filter(slug__in=result.kept).select_related(
            "current_version__created_by").order_by("slug")
        shipped = {item.scenario.slug: item.scenario.canary
                   for item in load_scenario_files([str(folder)]).files}
        for scenario in kept:
            version = scenario.current_version
            who = version.created_by.get_username() if version.created_by else "an import"
            # The importer refuses to change a canary unless told to: say so in the hint.
            confirm = (" --confirm-canary-change" if shipped.get(scenario.slug) != scenario.canary
                       else "")
            self.stdout.write(
                f"  kept {scenario.slug}: its current version {version.number} (saved by {who}) "
                f"differs from the shipped file; `manage.py import_scenarios{confirm} "
                f"{folder / scenario.slug}.yaml` would replace it")

    def _staff_login(self, password: str | None, reset: bool):
        """The demo login; its password is set when it is new or when asked, else kept."""
        user, created = get_user_model().objects.get_or_create(username=DEMO_USER)
        user.is_staff = user.is_superuser = True
        new_password = password or (secrets.token_urlsafe(12) if created or reset else None)
        if new_password:
            user.set_password(new_password)
        user.save()
        user.groups.set(Group.objects.filter(name__in=ROLE_NAMES))
        return user, new_password

    def _run_and_publish(self, user) -> None:
        release = Release.objects.filter(code=RELEASE).first()
        if release is not None and release.is_published:
            self.stdout.write(f"{RELEASE} is already published: nothing to do")
            return
        call_command("run_release", RELEASE, sync=True, stdout=self.stdout)
        release = Release.objects.get(code=RELEASE)
        recorded = demo_spotchecks(release=release, leave_out=not_blind_ids)
        self.stdout.write(f"spot-checks: {recorded} verdicts by simulated demo auditors")
        release_publish(release=release, user=user)
        self.stdout.write(self.style.SUCCESS(f"published {RELEASE}"))

    def _print_ranks(self, release: Release) -> None:
        snapshot = snapshot_load(release.publication.snapshot)
        names = snapshot.model_names()
        for metric in ("honesty", "persuasion", "misleading"):
            board = snapshot.leaderboards[metric]
            direction = "higher is better" if board.higher_is_better else "lower is better"
            self.stdout.write(f"\n{metric} ({direction}; {board.rule} ranks)")
            self.stdout.write(f"  {'rank':>4}  {'model':<28} {'estimate':>8}  comparison interval")
            for row in board.rows:
                self.stdout.write(
                    f"  {row.rank or '-':>4}  {names.get(row.model, row.model):<28} "
                    f"{_number(row.point):>8}  [{_number(row.cmp_low)}, "
                    f"{_number(row.cmp_high)}]"
                    + (f"  unranked: {row.unranked_reason}" if row.unranked_reason else "")
                )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
