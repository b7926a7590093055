"""What production refuses to start on, as pure functions over the settings' raw values.

The settings module decides whether it runs in development (an explicit switch) or in
production (everything else), and in production calls `unsafe_setting` before anything else
reads it. The answer is one line naming what to set, because whoever starts the site reads it
in a terminal or a service log, not in a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import ImproperlyConfigured

# The key the repository ships for development. It is public, so anything signed with it
# (sessions, password-reset links, messages) can be forged by anyone who reads the code.
DEVELOPMENT_KEY = "baitbench-insecure-development-key"
# Django's own deploy check (security.W009) asks for this much.
MIN_KEY_LENGTH = 50
MIN_KEY_CHARACTERS = 5
KEY_HINT = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"


class UnsafeSettings(ImproperlyConfigured):
    """Production settings the site must not run with; the message is the one line to show."""


def unsafe_setting(*, secret_key: str, allowed_hosts: Sequence[str]) -> str | None:
    """The one line saying what to set, or None when production may start."""
    if not secret_key:
        return ("SECRET_KEY is unset: set SECRET_KEY to a long random value "
                f"(e.g. `{KEY_HINT}`), or BAITBENCH_DEV=1 on a development machine")
    if secret_key == DEVELOPMENT_KEY:
        return ("SECRET_KEY is the published development key: set SECRET_KEY to a long random "
                f"value (e.g. `{KEY_HINT}`)")
    if len(secret_key) < MIN_KEY_LENGTH or len(set(secret_key)) < MIN_KEY_CHARACTERS:
        return (f"SECRET_KEY is too weak ({len(secret_key)} characters): set SECRET_KEY to at "
                f"least {MIN_KEY_LENGTH} random characters (e.g. `{KEY_HINT}`)")
    if any(host.strip() == "*" for host in allowed_hosts):
        return ("ALLOWED_HOSTS=* accepts any Host header: set ALLOWED_HOSTS to the site's host "
                "names, comma-separated (e.g. ALLOWED_HOSTS=baitbench.example.org)")
    return None
