"""Query parameters of the public pages, CSVs and API, read alike.

A view declares the parameters it reads (`reads`, or `accepted` for what calls it another
way): any other name is refused, naming it and the accepted ones, and so is a parameter given
twice (which of the two would count is a guess); a stray parameter was read as "no filter"
and answered what the visitor did not ask.

A parameter a view reads may be left out (its default applies); a value it does not accept,
unknown or malformed, is refused with a `BadParameter` naming the parameter and what it
accepts, never silently read as the default. Django answers the exception with a 400
(`baitbench_site.errors.bad_request`: the site's error page, plain text for a CSV); the API
answers it in DRF's error shape, `{parameter: [why]}` (`audits_app.api.errors`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse, QueryDict
from rest_framework.settings import api_settings

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


def accepted(params: QueryDict, names: Iterable[str]) -> None:
    """Refuse a parameter not among `names`, and one given more than once."""
    names = sorted(set(names))
    problems = {}
    for name, values in params.lists():
        shown = name[:SHOWN]
        if name not in names:
            problems[shown] = (f"unknown parameter {shown!r}; this address accepts "
                               f"{', '.join(names) if names else 'no parameters'}")
        elif len(values) > 1:
            problems[shown] = f"{shown} is given {len(values)} times; give it once"
    refuse(problems)


def reads(*names: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A view's decorator: the query parameters it reads, every other one refused
    (`accepted`) before the view runs. The names are kept on the view as `query_parameters`."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            accepted(request.GET, names)
            return view(request, *args, **kwargs)

        checked.query_parameters = names  # type: ignore[attr-defined]
        return checked

    return decorate


class DeclaredParameters:
    """An API view's mixin, for `reads`' rule: the view's own `query_parameters`, its
    paginator's limit and offset, and `format` (DRF's renderer choice) are accepted; any
    other is a 400 naming it (`audits_app.api.errors` gives DRF's error shape)."""

    query_parameters: tuple[str, ...] = ()

    def accepted_parameters(self) -> list[str]:
        names = [*self.query_parameters, api_settings.URL_FORMAT_OVERRIDE]
        paginator = getattr(self, "paginator", None)
        for attribute in ("limit_query_param", "offset_query_param"):
            if hasattr(paginator, attribute):
                names.append(getattr(paginator, attribute))
        return names

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        accepted(request.query_params, self.accepted_parameters())

