"""A worker killed mid-call, in one test process: a provider that raises `Killed` ends the
drain as a kill -9 would (nothing after the raise runs), and `leases_expired` lets the next
drain claim what the dead worker held, as the lease running out would."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from runs_app.models import WorkStatus


class Killed(Exception):
    """The worker dies: nothing after the raise runs, as after a kill -9."""


def leases_expired(rows) -> None:
    """The dead worker's claims among `rows` (a work table's queryset) have run out."""
    rows.filter(status=WorkStatus.CLAIMED).update(
        lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
