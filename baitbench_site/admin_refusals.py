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


class DeletesOnlyWhatItMay:
    """Mixin for a ModelAdmin: no Delete button, page or bulk deletion for an object whose
    deletion would be refused anyway, by the rules of its page (`delete_refusal`), by rows
    that keep it (PROTECT) or by rows that would go with it and that nobody may delete here.
    A bulk deletion that includes such an object deletes nothing and says, per object, why
    (instead of Django's page listing the kinds of objects one may not delete)."""

    def delete_refusal(self, request: HttpRequest, obj: Any) -> str:
        """Why `obj` may not be deleted ("" when it may): what would stop its deletion."""
        return related_refusal(request, obj, self.admin_site)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        if not allowed or obj is None:
            return allowed
        return not self.delete_refusal(request, obj)

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        if "delete_selected" in actions:
            _, name, description = actions["delete_selected"]
            actions[name] = (_delete_selected_or_say_why, name, description)
        return actions


def _delete_selected_or_say_why(modeladmin, request: HttpRequest, queryset) -> Any:
    from django.contrib.admin.actions import delete_selected

    refused = []
    for obj in queryset:
        why = modeladmin.delete_refusal(request, obj)
        if not why and not modeladmin.has_delete_permission(request, obj):
            why = "you may not delete it"
        if why:
            refused.append(f"{obj}: {why}")
    if refused:
        modeladmin.message_user(request, "Nothing was deleted: " + "; ".join(refused),
                                messages.ERROR)
        return None
    return delete_selected(modeladmin, request, queryset)


def related_refusal(request: HttpRequest, obj: Any, admin_site) -> str:
    """Why deleting `obj` would be refused by its related rows ("" when it would not): rows
    that keep it (on_delete PROTECT or RESTRICT), or rows that would be deleted with it whose
    own admin page lets this user delete none. One EXISTS query per kind of related row."""
    from django.db import models

    reasons = []
    for relation in obj._meta.related_objects:
        if not (relation.one_to_many or relation.one_to_one):
            continue
        related = relation.related_model
        rows = related._base_manager.filter(**{relation.field.name: obj})
        name = related._meta.verbose_name_plural
        if relation.on_delete in (models.PROTECT, models.RESTRICT):
            if rows.exists():
                reasons.append(f"it has {name}, which are kept")
        elif relation.on_delete is models.CASCADE:
            related_admin = admin_site._registry.get(related)
            if (related_admin is not None and not related_admin.has_delete_permission(request)
                    and rows.exists()):
                reasons.append(f"it has {name}, which nobody deletes here")
    return ", and ".join(reasons)
