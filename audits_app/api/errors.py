"""The API's answers to query parameters it does not accept, in DRF's error shape.

A view (or the page and format machinery) refuses a value with `query_params.BadParameter`;
here it becomes DRF's `{parameter: [why]}` 400, as a serializer's refusal is. `format` is
checked like any other parameter: DRF answered an unknown one with a bare 404.
"""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.views import exception_handler as drf_exception_handler

from audits_app import query_params


def exception_handler(exc, context):
    """REST_FRAMEWORK's EXCEPTION_HANDLER: a `BadParameter` is a ValidationError."""
    if isinstance(exc, query_params.BadParameter):
        exc = ValidationError({name: [why] for name, why in exc.problems.items()})
    return drf_exception_handler(exc, context)


class FormatNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, with `?format=` one of the renderers' formats or a 400 naming them."""

    def filter_renderers(self, renderers, format):
        query_params.choice({self.settings.URL_FORMAT_OVERRIDE: format},
                            self.settings.URL_FORMAT_OVERRIDE,
                            [renderer.format for renderer in renderers])
        return super().filter_renderers(renderers, format)
