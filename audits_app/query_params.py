"""Query parameters of the public pages, CSVs and API, read alike.

A view declares the parameters it reads (`reads`, or `accepted` for what calls it another
way): a stray parameter was read as "no filter" and answered what the visitor did not ask, so
no view ever answers a parameter it does not read as if it were not there. The API refuses
one with a 400 naming it and the accepted ones (`accepted`). A page (`reads`) answers a GET
with a permanent redirect to its address without the names it does not read (those it reads
kept, in their order): a link shared with `?utm_source=…` or `?fbclid=…` still leads to the
page, and the address the visitor lands on shows what was applied. Either way no page is
built for an arbitrary parameter and a cache keeps one copy per page (the redirect is not
cached, as the 400 was not: `http_cache`). A parameter given twice is refused (which of the
two would count is a guess).

A parameter a view reads may be left out (its default applies); a value it does not accept,
unknown or malformed, is refused with a `BadParameter` naming the parameter and what it
accepts, never silently read as the default. Django answers the exception with a 400
(`baitbench_site.errors.bad_request`: the site's error page, plain text for a CSV); the API
answers it in DRF's error shape, `{parameter: [why]}` (`audits_app.api.errors`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from urllib.parse import unquote_plus

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, QueryDict
from django.utils.encoding import escape_uri_path
from rest_framework.settings import api_settings

from audits_app.csv_files import whole_number as digits_only

SHOWN = 80  # characters of a refused value repeated back
LARGEST = 10 ** 18 - 1  # the largest whole number read (`csv_files.WHOLE_NUMBER`: 18 digits)


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
    if value is None and raw.strip().isascii() and raw.strip().isdigit():
        # A whole number all the same, longer than the 18 digits read: saying it is not one
        # ("must be a whole number 0 or more; got '99…9'") named the wrong mistake.
        largest = high if high is not None else LARGEST
        refuse({name: f"{name} is too large: at most {largest}; got {raw[:SHOWN]!r}"})
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


def without_unknown(request: HttpRequest, names: Iterable[str]) -> str | None:
    """The request's address without the query parameters not among `names` (the others
    kept as they were written, in their order); None when it has none of those."""
    names = set(names)
    if all(name in names for name in request.GET):
        return None
    kept = [part for part in request.META.get("QUERY_STRING", "").split("&")
            if part and unquote_plus(part.split("=", 1)[0]) in names]
    path = escape_uri_path(request.path)
    return f"{path}?{'&'.join(kept)}" if kept else path


def reads(*names: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A page's decorator: the query parameters it reads. Before the view runs, a GET or HEAD
    with any other is answered with a 301 to the address without it (`without_unknown`);
    another method with one, and a parameter given twice, is refused (`accepted`): a redirect
    would turn a form's POST into a GET. The names are kept on the view as
    `query_parameters`."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method in ("GET", "HEAD"):
                trimmed = without_unknown(request, names)
                if trimmed is not None:
                    return HttpResponsePermanentRedirect(trimmed)
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

