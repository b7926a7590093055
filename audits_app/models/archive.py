"""Where a published release came from when it was loaded from an archive (`import_release`).

An archive carries a release published on another instance. Its texts keep the ids they had
there, because the frozen snapshot names them; an `ImportedText` row links each such id to
the row it became here, so the pages read the same texts under the same addresses.

A public archive leaves out what the public may not see (held-out scenarios, confidential
facts, prompts, raw replies): its snapshot is the public view of the original, while the
publication keeps the original's snapshot and configuration hashes, the names of what the
publisher froze. A staff archive carries everything, and its hashes are checked against its
content on import.

An archive is *verified* when a key this instance trusts signed its manifest
(`audits_app.archive.signing`); anything else loaded is marked "imported, unverified" on every
page, answer and file that shows the release: anyone can write an unsigned archive.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import models

from runs_app.models import ImmutableError

__all__ = ["ImportedText", "Provenance", "ReleaseArchive", "ReleaseImport", "release_provenance"]


@dataclass(frozen=True)
class Provenance:
    """Where a release's figures come from, as pages, answers and archives state it."""

    imported: bool
    verified: bool  # produced here, or imported from an archive a trusted key signed
    key_id: str = ""  # the key that signed the archive it was imported from
    reason: str = ""  # why an imported release is not verified

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def unverified(self) -> bool:
        return self.imported and not self.verified


PRODUCED_HERE = Provenance(imported=False, verified=True)


class ArchiveKind(models.TextChoices):
    PUBLIC = "public", "Public (held-out and confidential material left out)"
    STAFF = "staff", "Staff (everything)"
    PUBLIC_WITHOUT_ARENA = "arena", "Public, without the texts held for the arena until it closes"
    PUBLIC_WITHOUT_STUDIES = "studies", ("Public, without the texts held for reading studies "
                                         "until they are revealed")
    PUBLIC_WITHOUT_BOTH = "both", ("Public, without the texts held for the arena and for "
                                   "reading studies")


class ReleaseImport(models.Model):
    release = models.OneToOneField(
        "runs_app.Release", on_delete=models.PROTECT, related_name="archive_import")
    kind = models.CharField(max_length=10, choices=ArchiveKind.choices)
    archive_sha256 = models.CharField(max_length=64)
    manifest = models.JSONField()
    imported_at = models.DateTimeField(auto_now_add=True)
    imported_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    verified = models.BooleanField(
        default=False, help_text="A key this instance trusts signed the archive's manifest.")
    signing_key_id = models.CharField(
        max_length=100, blank=True,
        help_text="Fingerprint (SHA256:…) of the key that signed the archive, trusted or not.")
    unverified_reason = models.TextField(blank=True, help_text="Why it is not verified.")

    class Meta:
        verbose_name = "imported release"

    def __str__(self) -> str:
        return f"{self.release_id} imported from a {self.kind} archive"

    @property
    def provenance(self) -> Provenance:
        return Provenance(imported=True, verified=self.verified, key_id=self.signing_key_id,
                          reason=self.unverified_reason)

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ImmutableError("the record of an import does not change")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableError("the record of an import is kept with its release")


def release_provenance(release) -> Provenance:
    """Where a release's figures come from (no query when `archive_import` was selected
    with the release)."""
    try:
        return release.archive_import.provenance
    except ReleaseImport.DoesNotExist:
        return PRODUCED_HERE


class ImportedText(models.Model):
    """A text of an imported release and the id its snapshot gives it."""

    release = models.ForeignKey("runs_app.Release", on_delete=models.PROTECT, related_name="+")
    generation = models.OneToOneField(
        "runs_app.Generation", on_delete=models.PROTECT, related_name="imported_as")
    snapshot_id = models.PositiveBigIntegerField(
        help_text="The text's id on the instance that published the release.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["release", "snapshot_id"],
                                               name="imported_text_unique")]

    def __str__(self) -> str:
        return f"text {self.snapshot_id} of release {self.release_id}"


class ReleaseArchive(models.Model):
    """A published release's archive, built once and kept with its hash: a published
    release never changes, so neither does its archive, and serving it is reading bytes
    instead of building them (seconds of CPU) for every download."""

    release = models.ForeignKey("runs_app.Release", on_delete=models.PROTECT,
                                related_name="archives")
    kind = models.CharField(max_length=10, choices=ArchiveKind.choices)
    # An archive is signed as it is built, so one is kept per signing key ("" for unsigned):
    # a key set, or changed, after the first download gets an archive of its own.
    signing_key_id = models.CharField(max_length=100, blank=True)
    sha256 = models.CharField(max_length=64)
    data = models.BinaryField()
    built_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["release", "kind", "signing_key_id"],
                                               name="release_archive_once_per_kind_and_key")]

    def __str__(self) -> str:
        return f"{self.kind} archive of release {self.release_id}"
