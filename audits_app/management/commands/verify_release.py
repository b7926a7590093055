"""`verify_release CODE`: recompute a published release's hashes and figures from its rows."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audits_app.verification import release_verify
from baitbench_site import command_args
from runs_app.models import Release


class Command(BaseCommand):
    help = ("Check that a published release is what was published: the snapshot and the "
            "configuration against their hashes, the figures computed again from the stored "
            "rows, and both archives against the snapshot and their manifests. A release "
            "imported from a public archive is checked as far as its rows allow, and each check "
            "it cannot make is named with its reason. Exit 1 naming every difference; exit 2 "
            "when none was found but some checks could not be made (not verified).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text)

    def handle(self, *args, code: str, **options) -> None:
        release = Release.objects.filter(code=code).first()
        if release is None:
            raise CommandError(f"no release {code!r}")
        result = release_verify(release=release)
        for line in result.warnings:
            self.stdout.write(self.style.WARNING(f"{code}: warning: {line}"))
        for line in result.not_checked:
            self.stdout.write(f"{code}: not verified: {line}")
        for line in result.differences:
            self.stderr.write(f"{code}: {line}")
        if not result.ok:
            raise SystemExit(1)
        if not result.verified:
            # Not "unchanged": a rewritten figure that could not be recomputed passes every
            # check that could be made, so finding no difference proves nothing about it.
            self.stdout.write(self.style.WARNING(
                f"{code}: NOT VERIFIED: {len(result.not_checked)} checks could not be made "
                f"(above); no difference in what could be checked "
                f"({', '.join(result.checked)})"))
            raise SystemExit(2)
        self.stdout.write(self.style.SUCCESS(
            f"{code}: unchanged ({', '.join(result.checked)})"))
