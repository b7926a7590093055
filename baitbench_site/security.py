"""Staff sessions that end, and who a visitor is behind the proxy (for the login throttle).

Passwords are throttled by django-axes (settings: `AXES_*`); what it cannot know is kept here.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone


@receiver(user_logged_in, dispatch_uid="baitbench-staff-session-expiry")
def staff_session_expiry(sender, request: HttpRequest | None, user, **kwargs) -> None:
    """A staff login lasts BAITBENCH_STAFF_SESSION_SECONDS from the moment it began.

    A fixed end rather than an idle timeout: staff may publish and change what the public
    sees, so a session left open on a shared machine should not live on because a page
    keeps refreshing. Everyone else keeps SESSION_COOKIE_AGE.
    """
    if request is None or not user.is_staff:
        return
    request.session.set_expiry(
        timezone.now() + timedelta(seconds=settings.BAITBENCH_STAFF_SESSION_SECONDS))


def client_ip_behind_proxy(request: HttpRequest) -> str | None:
    """The visitor's address as the proxy in front of the site saw it.

    The proxy appends the address it was connected from to X-Forwarded-For; whatever comes
    before it was sent by the visitor and may be forged, so only the last entry counts.
    """
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    return forwarded.rsplit(",", 1)[-1].strip() or request.META.get("REMOTE_ADDR")


def client_address(request: HttpRequest) -> str:
    """Who is asking: the proxy's word for it when the site runs behind one
    (BAITBENCH_BEHIND_PROXY), else the connection's own address. Behind a proxy
    REMOTE_ADDR is the proxy, and every visitor would share one address."""
    if settings.BEHIND_PROXY:
        return client_ip_behind_proxy(request) or "unknown"
    return request.META.get("REMOTE_ADDR") or "unknown"
