"""Staff on public pages: named by role, never by login name."""

from __future__ import annotations

from django import template

from baitbench_site.roles import public_role

register = template.Library()

register.filter("public_role", public_role)
