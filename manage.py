#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    if sys.argv[1:2] == ["demo"]:
        # The demo is a local development run by definition: its development key and
        # printed staff login are what a demo needs and what production refuses.
        os.environ.setdefault("BAITBENCH_DEV", "1")
    from django.core.management import execute_from_command_line
    from django.db import DatabaseError

    from baitbench_site.apps import admin_for_command
    from baitbench_site.production import UnsafeSettings

    admin_for_command(sys.argv)

    try:
        execute_from_command_line(sys.argv)
    except UnsafeSettings as error:
        # One line naming what to set, not a traceback through Django's internals.
        sys.exit(f"error: {error}")
    except DatabaseError as error:
        # A fresh checkout has no database yet; a command that needs one says so in a line.
        sys.exit(f"error: database: {error} (DATABASE_URL; on a new machine run "
                 f"`python manage.py migrate` first)")


if __name__ == "__main__":
    main()
