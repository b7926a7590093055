"""Staff on public pages: named by role, never by login name."""

from __future__ import annotations

from django import template

from audits_app.arena.presentation import MANAGER_ROLE
from baitbench_site.roles import public_role

register = template.Library()

register.filter("public_role", public_role)


@register.filter
def arena_role(user) -> str:
    """Who opened, paused or closed an arena: the role that act is done as."""
    return public_role(user, acting_as=MANAGER_ROLE)
