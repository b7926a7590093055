"""Publication of a release: the frozen snapshot (DESIGN sections 6 and 8).

A publication is written once, by `audits_app.publication.services.release_publish`, in the same
transaction that marks its release published. From then on neither changes: the snapshot is
what the public pages and the API read, and its hash lets anyone check it was not altered.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from runs_app.models import ImmutableError

__all__ = ["Publication"]


class PublicationQuerySet(models.QuerySet):
    """Bulk writes would bypass `save()`/`delete()`, so they are refused here as well."""

    def update(self, **kwargs):
        raise ImmutableError("a publication cannot change")

    def delete(self):
        raise ImmutableError("a publication cannot be deleted")


class Publication(models.Model):
    # PROTECT: a published release is never deleted from under its snapshot.
    release = models.OneToOneField(
        "runs_app.Release", on_delete=models.PROTECT, related_name="publication"
    )
    published_at = models.DateTimeField(default=timezone.now)
    # Null when published from the command line without --user.
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="publications",
    )
    config_hash = models.CharField(max_length=64)
    snapshot = models.JSONField()
    snapshot_hash = models.CharField(max_length=64)
    gate_override_reason = models.TextField(
        blank=True,
        help_text="Why the release was published although the spot-check gate was not met; "
                  "shown publicly.",
    )

    objects = PublicationQuerySet.as_manager()

    class Meta:
        ordering = ["-published_at"]
        permissions = [("publish_release", "Can publish a release")]

    def __str__(self) -> str:
        return f"publication of {self.release_id}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding or (
            self.pk is not None and type(self).objects.filter(pk=self.pk).exists()
        ):
            raise ImmutableError("a publication cannot change")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableError("a publication cannot be deleted")
