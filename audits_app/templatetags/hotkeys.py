"""`option_key`: the key that picks the n-th choice of a group on the review screen.

Digits first, then letters a-i; n, p, s and q stay free for moving between groups, saving
and the queue (static/js/review_keys.js reads the same keys from the page)."""

from __future__ import annotations

from django import template

register = template.Library()

OPTION_KEYS = "123456789abcdefghi"


@register.filter
def option_key(index: int) -> str:
    """The key of the choice at 0-based `index`, or "" past the last key."""
    try:
        return OPTION_KEYS[int(index)]
    except (IndexError, TypeError, ValueError):
        return ""
