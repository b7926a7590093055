"""`fixed`: a number with a fixed count of decimals, or a dash where there is none;
`interval`: a low and a high bound as one reads them ("−0.084 to −0.017"). A negative
number on a page has a true minus sign (U+2212) wherever it is shown, never a hyphen beside
one; the CSVs and JSON answers write theirs in ASCII (they do not format through here).

Django's `floatformat` goes through Decimal and localisation; on a leaderboard of fifty
models it was most of the page's render time. Scores here are plain floats.
"""

from __future__ import annotations

from django import template

register = template.Library()


MINUS = "\u2212"  # a true minus sign: a hyphen before a number reads as a dash beside a range


@register.filter
def fixed(value: object, digits: int = 3) -> str:
    if value is None or value == "":
        return "–"
    try:
        shown = f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return str(value)
    return true_minus(shown)


def true_minus(shown: str) -> str:
    """A number already written out (`f"{x:.2f}"`, `f"{x:g}"`) with a true minus sign in
    place of its hyphen, for text a reader sees: pages and the visible text of SVG figures
    (never an attribute or a coordinate, which SVG reads as numbers)."""
    if not shown.startswith("-"):
        return shown
    # A value that rounds to zero is zero, whichever side it came from: never "−0.000".
    return shown[1:] if not shown.strip("-0.") else MINUS + shown[1:]


def interval(low: object, high: object, digits: int = 3, *, sign: bool = False) -> str:
    """Both bounds with true minus signs, joined by "to" (an en dash between "-0.08" and
    "-0.02" reads as a third minus); one dash when either bound is missing, never "–––".
    `sign` also marks a positive bound with "+", for a change."""
    if low is None or low == "" or high is None or high == "":
        return "–"
    return f"{_bound(low, digits, sign)} to {_bound(high, digits, sign)}"


def _bound(value: object, digits: int, sign: bool) -> str:
    shown = fixed(value, digits)
    return f"+{shown}" if sign and shown.strip("0.") and shown[0].isdigit() else shown


@register.simple_tag(name="interval")
def interval_tag(low: object, high: object, digits: int = 3) -> str:
    return interval(low, high, digits)


@register.filter
def plain(value: object) -> str:
    """A configuration value as a reader writes it: lists joined with commas, mappings as
    "key: value" pairs, rather than Python's brackets and quotes."""
    if value is None:
        return "–"
    if isinstance(value, list | tuple):
        return ", ".join(plain(item) for item in value) or "none"
    if isinstance(value, dict):
        return "; ".join(f"{key}: {plain(item)}" for key, item in value.items()) or "none"
    return str(value)


@register.filter
def percent(value: object, digits: int = 0) -> str:
    """A share (0-1) as a percentage, or a dash where there is none."""
    if value is None or value == "":
        return "–"
    try:
        return f"{100 * float(value):.{int(digits)}f} %"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def organisation(brief: object) -> str:
    """A task brief as every writer got it, with its organisation placeholder named."""
    return str(brief).replace("{organisation}", "[the organisation]")


@register.filter
def signed(value: object, digits: int = 0) -> str:
    """A change with its sign (+2, −1, 0), a dash where there is none."""
    if value is None or value == "":
        return "–"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    text = f"{abs(number):.{int(digits)}f}"
    if float(text) == 0:
        return text
    return ("+" if number > 0 else "−") + text
