"""`manage.py reading_study_reveal CODE --user NAME [--reason TEXT]`: make the texts release
CODE holds for its reading studies public, for good, through the same service as the admin's
action (`study_texts_reveal`): refused while any of its studies is open, and recorded once,
with who, when and why."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from audits_app.arena.services import can_manage
from audits_app.calibration.studies import services
from audits_app.pages.viewer import load_snapshot
from audits_app.publication.held_cells import Holder, held_cells
from baitbench_site import command_args
from runs_app.models import Release


class Command(BaseCommand):
    help = ("Make the texts a published release holds for its reading studies public, for "
            "good (no study of it may be open). Recorded with the user and the reason.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text, help="the release's code, e.g. demo.0")
        parser.add_argument("--user", type=command_args.text, required=True,
                            help="username recorded as who revealed them (a publisher)")
        parser.add_argument("--reason", default="",
                            help="why they become public (kept on the record); by default "
                                 "'Revealed with manage.py reading_study_reveal by USER.'")

    def handle(self, *args, code: str, user: str, reason: str, **options) -> None:
        release = Release.objects.filter(code=code).select_related("publication").first()
        if release is None:
            raise CommandError(f"no release {code!r}")
        publication = getattr(release, "publication", None)
        if publication is None:
            raise CommandError(f"{code} is not published: none of its texts is public yet, "
                               f"so there is nothing to reveal")
        cells = held_cells(load_snapshot(publication), Holder.READING_STUDIES)
        if not cells:
            raise CommandError(f"{code} holds no cells for reading studies "
                               f"(`reading_studies.held_share` is 0 in its file): nothing "
                               f"to reveal")
        by = get_user_model().objects.filter(username=user).first()
        if by is None:
            raise CommandError(f"no user {user!r}")
        if not can_manage(by):
            raise CommandError(f"user {user!r} may not reveal study texts (a staff member "
                               f"with the publisher role is needed)")
        try:
            reveal = services.study_texts_reveal(
                release=release, user=by,
                reason=reason or f"Revealed with manage.py reading_study_reveal by {user}.")
        except services.StudyError as refusal:
            raise CommandError(f"{code}: {refusal}") from None
        self.stdout.write(self.style.SUCCESS(
            f"{code}: the {len(cells)} cell{'s' if len(cells) != 1 else ''} held for reading "
            f"studies are public since {reveal.at:%Y-%m-%d %H:%M} UTC (by {user})"))
