"""Query parameters of the public pages, CSVs and API, read alike.

A parameter a view reads may be left out (its default applies); a value it does not accept,
unknown or malformed, is refused with a `BadParameter` naming the parameter and what it
accepts, never silently read as the default. Django answers the exception with a 400
(`baitbench_site.errors.bad_request`: the site's error page, plain text for a CSV); the API
answers it in DRF's error shape, `{parameter: [why]}` (`audits_app.api.errors`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.core.exceptions import BadRequest

from audits_app.csv_files import whole_number as digits_only

SHOWN = 80  # characters of a refused value repeated back


class BadParameter(BadRequest):
    """A query parameter's value the view does not accept: `problems` is {parameter: why}."""

    def __init__(self, problems: Mapping[str, str]):
        self.problems = dict(problems)
        super().__init__("; ".join(f"{why[:1].upper()}{why[1:]}." for why in problems.values()))


def refuse(problems: Mapping[str, str]) -> None:
    """Raise `BadParameter` when there is any problem ({parameter: why})."""
    if problems:
        raise BadParameter(problems)


def choice(params: Mapping[str, str], name: str, accepted: Sequence[str],
           default: str = "") -> str:
    """The parameter's value, one of `accepted`; `default` when it is not given."""
    raw = params.get(name)
    if raw is None:
        return default
    if raw not in accepted:
        refuse({name: f"{name} must be one of {', '.join(accepted)}; got {raw[:SHOWN]!r}"})
    return raw


def whole_number(params: Mapping[str, str], name: str, *, low: int, high: int | None = None,
                 default: int | None = None) -> int | None:
    """The parameter as a whole number from `low` to `high` (digits 0-9 only); `default`
    when it is not given."""
    raw = params.get(name)
    if raw is None:
        return default
    value = digits_only(raw.strip())
    if value is None or value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f"{low} or more"
        refuse({name: f"{name} must be a whole number {span}; got {raw[:SHOWN]!r}"})
    return value
