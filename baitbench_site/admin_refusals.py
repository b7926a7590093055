"""The admin reports a refused change (ImmutableError) as a message, not a server error.

The admin's permissions already keep people from changing what is frozen; this catches what
gets past them anyway (a race with publishing, a rule only the database knows), rolls the
attempt back and says why, in the words of the model or the database trigger.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.db import router, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from baitbench_site.immutability import ImmutableError


class RefusalsAsMessages:
    """Mixin for a ModelAdmin: saving, deleting and bulk actions that hit ImmutableError."""

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._refusal_as_message(request, super().changeform_view, *args, **kwargs)

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._refusal_as_message(request, super().delete_view, *args, **kwargs)

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._refusal_as_message(request, super().changelist_view, *args, **kwargs)

    def _refusal_as_message(self, request: HttpRequest, view: Callable[..., HttpResponse],
                            *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        try:
            # A savepoint: on PostgreSQL the refused statement would otherwise leave the
            # request's transaction unusable for rendering the message.
            with transaction.atomic(using=router.db_for_write(self.model)):
                return view(request, *args, **kwargs)
        except ImmutableError as refusal:
            self.message_user(request, "Nothing was changed: " + "; ".join(refusal.messages),
                              messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
