"""`import_release FILE`: load a release archive from another instance, all or nothing."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from audits_app.archive.load import ArchiveError, release_import


class Command(BaseCommand):
    help = ("Check a release archive (every file's hash, every row) and load it: the release, "
            "its scenario versions, models, rows and publication. Nothing is written unless "
            "everything checks; importing the same archive again changes nothing.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("file")

    def handle(self, *args, file: str, **options) -> None:
        path = Path(file)
        if path.is_dir():
            raise CommandError(f"{file}: is a folder, not a release archive (give its .zip file)")
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            data = path.read_bytes()
        except OSError as error:
            raise CommandError(f"{file}: cannot be read ({error.strerror})") from None
        try:
            result = release_import(data=data, source=str(path))
        except ArchiveError as error:
            for line in error.lines:
                self.stderr.write(line if line.startswith(str(path)) else f"{path}: {line}")
            raise SystemExit(1) from None
        self.stdout.write(self.style.SUCCESS(result.message) if result.created
                          else result.message)
