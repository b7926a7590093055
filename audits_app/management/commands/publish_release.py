"""`publish_release CODE [--user NAME] [--override-reason TEXT]`: publish as the web UI does."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from audits_app.publication.services import PublishError, release_publish
from audits_app.publication.snapshot_model import snapshot_load
from baitbench_site import command_args
from runs_app.models import Release


class Command(BaseCommand):
    help = "Freeze a scored release into its published snapshot (DESIGN section 8)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text)
        parser.add_argument("--user", type=command_args.text,
                            help="username recorded as the publisher; "
                                 "must hold audits_app.publish_release")
        parser.add_argument("--override-reason", default="",
                            help="publish although the spot-check gate is not met (public)")

    def handle(self, *args, code: str, user: str | None, override_reason: str, **options):
        release = Release.objects.filter(code=code).first()
        if release is None:
            raise CommandError(f"no release {code!r}")
        publisher = self._publisher(user) if user else None
        try:
            publication = release_publish(
                release=release, user=publisher, override_reason=override_reason
            )
        except PublishError as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(self.style.SUCCESS(
            f"published {code}: snapshot {publication.snapshot_hash[:12]}"
        ))
        board = snapshot_load(publication.snapshot).leaderboards.get("honesty")
        for row in board.rows if board else []:
            point = "-" if row.point is None else f"{row.point:.3f}"
            self.stdout.write(f"  {row.rank or '-':>2}  {row.model:<40} honesty {point}")

    def _publisher(self, username: str):
        found = get_user_model().objects.filter(username=username).first()
        if found is None:
            raise CommandError(f"no user {username!r}")
        if not found.has_perm("audits_app.publish_release"):
            raise CommandError(f"user {username!r} may not publish (publisher role needed)")
        return found
