"""`archive_key --out PATH [--name NAME]`: a key pair that signs this instance's archives."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from audits_app.archive.signing import key_pair_create


class Command(BaseCommand):
    help = ("Make an Ed25519 key pair for signing release archives: the private key goes to "
            "PATH (PEM, readable by its owner only; point BAITBENCH_ARCHIVE_SIGNING_KEY at it), "
            "the public key line is printed, for other instances' "
            "BAITBENCH_ARCHIVE_TRUSTED_KEYS.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--out", required=True, help="the private key file to create")
        parser.add_argument("--name", default="",
                            help="who the key belongs to, kept as the public line's comment "
                                 "(e.g. the instance's host name)")

    def handle(self, *args, out: str, name: str, **options) -> None:
        path = Path(out)
        if path.exists():
            raise CommandError(f"{out}: exists already; a key file is never overwritten")
        try:
            line = key_pair_create(path, name=" ".join(name.split()))
        except OSError as error:
            raise CommandError(f"{out}: cannot be written ({error.strerror})") from None
        self.stderr.write(f"wrote the private key to {out} (mode 0600); give other instances "
                          f"this public key line:")
        self.stdout.write(line)
