"""The texts the staff admin hides from a viewer, as querysets of generation ids: runs_app's
generation admin and contamination findings read them, and audits_app adds the texts a
person is checking blind and the texts a release holds back (runs_app knows nothing of
spot-checks or holders: dependencies run one way). A module of its own so that both admin
modules read the one list without importing each other."""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet
from django.http import HttpRequest

HIDDEN_GENERATIONS: list[Callable[[HttpRequest], QuerySet]] = []


def hidden_generations(request: HttpRequest, queryset: QuerySet) -> QuerySet:
    """`queryset` of generations without those hidden from this viewer."""
    for hidden in HIDDEN_GENERATIONS:
        queryset = queryset.exclude(pk__in=hidden(request))
    return queryset


def hidden_generation_ids(request: HttpRequest) -> set[int]:
    """The ids of every generation hidden from this viewer."""
    found: set[int] = set()
    for hidden in HIDDEN_GENERATIONS:
        found |= set(hidden(request).values_list("pk", flat=True))
    return found
