"""The arena's link in the site navigation: shown only where there is an arena to see."""

from __future__ import annotations

from django import template

from audits_app.arena.selectors import ArenaAccess, public_arena_codes

register = template.Library()


@register.simple_tag(takes_context=True)
def arena_visible(context) -> bool:
    """Staff always (to test an arena before it opens); anyone once an arena was opened.
    The codes are cached, so the navigation costs no query on most pages, and an arena's own
    pages (shown only to those who may see that arena) ask nothing at all."""
    if isinstance(context.get("arena"), ArenaAccess):
        return True
    user = context.get("user")
    return bool(user and user.is_staff) or bool(public_arena_codes())
