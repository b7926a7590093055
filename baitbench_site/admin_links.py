"""A read-only relation on an admin page links to the related record's admin page only for a
user who may open it.

Django's admin renders a read-only foreign key as a link to the related record's change page
whatever the user may see (`helpers.AdminReadonlyField.get_admin_url`): an ethics review's
page linked its reading study for curators, auditors and operators, and a reading study's page
linked its author's user record for publishers, and each link answered 403. The field is told
the request being served (`AdminRequestMiddleware`), and links only where the related model's
admin grants that user view permission on that record; elsewhere it shows the record's name as
plain text. Without a request (a page rendered outside a request) it links nothing.
"""

from __future__ import annotations

from contextvars import ContextVar

from django.contrib.admin import helpers
from django.http import HttpRequest

_serving: ContextVar[HttpRequest | None] = ContextVar("admin_request", default=None)


class AdminRequestMiddleware:
    """Keeps the request being served where the admin's read-only fields can ask who is
    looking (after the authentication middleware: the user is set)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        token = _serving.set(request)
        try:
            return self.get_response(request)  # a template response is rendered in here
        finally:
            _serving.reset(token)


class PermittedReadonlyField(helpers.AdminReadonlyField):
    def get_admin_url(self, remote_field, remote_obj):
        request = _serving.get()
        related = (self.model_admin.admin_site._registry.get(remote_field.model)
                   if self.model_admin is not None else None)
        if request is None or related is None \
                or not related.has_view_permission(request, remote_obj):
            return str(remote_obj)  # escaped by the caller, as Django's own fallback
        return super().get_admin_url(remote_field, remote_obj)


def install() -> None:
    """Every admin page's read-only fields are built as `helpers.AdminReadonlyField`."""
    helpers.AdminReadonlyField = PermittedReadonlyField
