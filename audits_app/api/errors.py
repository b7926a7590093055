"""The API's answers to query parameters it does not accept, in DRF's error shape.

A view (or the page and format machinery) refuses a value with `query_params.BadParameter`;
here it becomes DRF's `{parameter: [why]}` 400, as a serializer's refusal is. `format` is
checked like any other parameter: DRF answered an unknown one with a bare 404.

Every API view declares the parameters it reads (`query_params.DeclaredParameters`); any
other name, or one given twice, is refused before the view runs, as on the pages.
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


REFUSED = ("A query parameter the endpoint does not take, or one given twice, is refused "
           "the same way: {parameter: [why]}.")


def document_refused_parameters(result: dict, generator, request, public) -> dict:
    """SPECTACULAR_SETTINGS' hook: every operation's 400 names the refused parameters
    (`DeclaredParameters`), beside whatever values it refuses itself."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if "400" in responses:
                responses["400"]["description"] += " " + REFUSED
            else:
                responses["400"] = {"content": {"application/json": {"schema": {
                    "type": "object", "additionalProperties": {}}}}, "description": REFUSED}
    return result
