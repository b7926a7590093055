"""Staff logins by role (DESIGN section 8): the one service behind `manage.py staff_add`.

A login is a Django user with `is_staff` and one or more of the four role groups
(`baitbench_site.roles`); what it may then do follows from the groups alone. Superusers are
made with Django's own `createsuperuser`.
"""

from __future__ import annotations

import dataclasses

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from baitbench_site.navigation import landing_url
from baitbench_site.roles import ROLE_NAMES


class StaffError(Exception):
    """A login that cannot be made as asked; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class StaffLogin:
    username: str
    roles: tuple[str, ...]
    created: bool
    password_set: bool
    lands_on: str


def staff_roles_parse(roles: list[str]) -> tuple[str, ...]:
    """The roles asked for, each known, in the order of ROLE_NAMES, without repeats."""
    if not roles:
        raise StaffError(f"no role given: name one or more with --role "
                         f"({', '.join(ROLE_NAMES)})")
    unknown = [role for role in roles if role not in ROLE_NAMES]
    if unknown:
        raise StaffError(f"unknown role {', '.join(map(repr, unknown))}: the roles are "
                         f"{', '.join(ROLE_NAMES)}")
    return tuple(role for role in ROLE_NAMES if role in roles)


@transaction.atomic
def staff_add(*, username: str, roles: list[str], password: str | None,
              update: bool = False) -> StaffLogin:
    """Create a staff login with exactly `roles`, or with `update` give an existing one
    exactly these roles (again and again: the same call changes nothing the second time).
    A new login needs a password; an updated one keeps its own unless one is given."""
    chosen = staff_roles_parse(roles)
    username = username.strip()
    if not username:
        raise StaffError("the user name is empty")
    model = get_user_model()
    user = model.objects.filter(username=username).first()
    if user is not None and not update:
        held = ", ".join(user.groups.order_by("name").values_list("name", flat=True)) or "none"
        raise StaffError(f"user {username!r} already exists (roles: {held}); add --update to "
                         f"give it the roles {', '.join(chosen)}")
    created = user is None
    if created and update and password is None:
        raise StaffError(f"no user {username!r} to update: leave out --update to create it")
    if created:
        _check_username(username, model)
        if not password:
            raise StaffError("a new login needs a password")
        user = model(username=username)
    if password is not None:
        _check_password(password, user)
        user.set_password(password)
    user.is_staff = user.is_active = True
    user.save()
    user.groups.set(Group.objects.filter(name__in=chosen))
    return StaffLogin(username=username, roles=chosen, created=created,
                      password_set=password is not None, lands_on=landing_url(
                          model.objects.get(pk=user.pk)))  # fresh: no cached permissions


def _check_username(username: str, model) -> None:
    """The rules Django's own user forms apply to a new user name (its characters, its
    length)."""
    try:
        model._meta.get_field(model.USERNAME_FIELD).run_validators(username)
    except ValidationError as error:
        raise StaffError(f"the user name {username!r} is refused: "
                         f"{' '.join(error.messages)}") from None


def _check_password(password: str, user) -> None:
    if not password:
        raise StaffError("the password is empty")
    try:
        validate_password(password, user)
    except ValidationError as error:
        raise StaffError(f"the password is refused: {' '.join(error.messages)}") from None
