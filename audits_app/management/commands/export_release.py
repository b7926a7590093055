"""`export_release CODE [--staff] [--out FILE]`: a published release as one archive."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from audits_app.archive.export import ArchiveRefused, archive_name, release_archive
from audits_app.archive.signing import SigningKeyError, key_id, signing_key
from baitbench_site import command_args
from baitbench_site.files import write_whole
from runs_app.models import Release


class Command(BaseCommand):
    help = ("Write a published release as a ZIP archive (audits_app.archive): the public one, "
            "or with --staff everything, held-out and confidential material included.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text)
        parser.add_argument("--staff", action="store_true",
                            help="include held-out scenarios, confidential facts, prompts "
                                 "and raw replies (keep the file as staff-only as they are)")
        parser.add_argument("--out", help="file to write (default: CODE.zip or "
                                          "CODE-staff.zip here)")

    def handle(self, *args, code: str, staff: bool, out: str | None, **options) -> None:
        release = Release.objects.filter(code=code).first()
        if release is None:
            raise CommandError(f"no release {code!r}")
        path = Path(out or archive_name(release, staff=staff))
        where = f"--out {out}" if out else str(path)
        if path.is_dir():
            raise CommandError(f"{where}: is a folder; give a file name such as "
                               f"{path / archive_name(release, staff=staff)}")
        if not path.parent.is_dir():
            raise CommandError(f"{where}: no such folder {path.parent}")
        try:
            key = signing_key()
            data = release_archive(release, staff=staff, signed_by=key)
        except (ArchiveRefused, SigningKeyError) as refusal:
            raise CommandError(str(refusal)) from None
        try:
            write_whole(path, data)
        except OSError as error:
            raise CommandError(f"{where}: cannot be written ({error.strerror})") from None
        self.stdout.write(self.style.SUCCESS(
            f"wrote {path}: {'staff' if staff else 'public'} archive of {code}, "
            f"{len(data)} bytes, "
            f"{'unsigned' if key is None else 'signed by ' + key_id(key.public_key())}"))
