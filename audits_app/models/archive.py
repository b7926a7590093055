"""Where a published release came from when it was loaded from an archive (`import_release`).

An archive carries a release published on another instance. Its texts keep the ids they had
there, because the frozen snapshot names them; an `ImportedText` row links each such id to
the row it became here, so the pages read the same texts under the same addresses.

A public archive leaves out what the public may not see (held-out scenarios, confidential
facts, prompts, raw replies): its snapshot is the public view of the original, while the
publication keeps the original's snapshot and configuration hashes, the names of what the
publisher froze. A staff archive carries everything, and its hashes are checked against its
content on import.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from runs_app.models import ImmutableError

__all__ = ["ImportedText", "ReleaseArchive", "ReleaseImport"]


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

    class Meta:
        verbose_name = "imported release"

    def __str__(self) -> str:
        return f"{self.release_id} imported from a {self.kind} archive"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ImmutableError("the record of an import does not change")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableError("the record of an import is kept with its release")


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
    sha256 = models.CharField(max_length=64)
    data = models.BinaryField()
    built_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["release", "kind"],
                                               name="release_archive_once_per_kind")]

    def __str__(self) -> str:
        return f"{self.kind} archive of release {self.release_id}"
