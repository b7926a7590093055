"""`manage.py staff_add NAME --role ROLE [--role ROLE ...] [--update]`: a staff login by role.

The password never comes from an argument (which would land in the shell's history and in
the process list): it is read from BAITBENCH_STAFF_PASSWORD when that is set, else asked for
twice at the terminal.
"""

from __future__ import annotations

import getpass
import os
import sys

from django.core.management.base import BaseCommand, CommandError

from baitbench_site import command_args
from baitbench_site.roles import ROLE_NAMES
from baitbench_site.staff import StaffError, staff_add

PASSWORD_VARIABLE = "BAITBENCH_STAFF_PASSWORD"


class Command(BaseCommand):
    help = (f"Create a staff login with one or more roles ({', '.join(ROLE_NAMES)}), or with "
            f"--update set an existing login's roles. The password is read from "
            f"{PASSWORD_VARIABLE}, else asked for at the terminal.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("username", metavar="NAME", type=command_args.text)
        parser.add_argument("--role", action="append", default=[], dest="roles",
                            metavar="ROLE", help=f"one of {', '.join(ROLE_NAMES)}; repeat "
                            f"for several")
        parser.add_argument("--update", action="store_true",
                            help="the login exists: give it exactly these roles (its password "
                                 "stays unless --set-password)")
        parser.add_argument("--set-password", action="store_true",
                            help=f"with --update: set a new password too ({PASSWORD_VARIABLE} "
                                 f"or the terminal)")

    def handle(self, *args, username: str, roles: list[str], update: bool,
               set_password: bool, **options) -> None:
        wants_password = set_password or not update
        try:
            login = staff_add(username=username, roles=roles, update=update,
                              password=self._password() if wants_password else None)
        except StaffError as error:
            raise CommandError(str(error)) from None
        done = "created" if login.created else "updated"
        password = "password set" if login.password_set else "password unchanged"
        self.stdout.write(self.style.SUCCESS(
            f"{done} staff login {login.username!r}: role(s) {', '.join(login.roles)}, "
            f"{password}; log in at /admin/login/, lands on {login.lands_on}"))

    def _password(self) -> str:
        password = os.environ.get(PASSWORD_VARIABLE)
        if password is not None:
            return password
        if not sys.stdin.isatty():
            raise CommandError(f"no password: set {PASSWORD_VARIABLE}, or run this in a "
                               f"terminal to be asked for one")
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Password (again): "):
            raise CommandError("the two passwords differ")
        return first
