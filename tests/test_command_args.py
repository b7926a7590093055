"""A release code or user name that is not UTF-8 text (a byte the shell could not decode, handed
to Python as a lone surrogate) is refused by the command line's parser in one line naming the
argument: the database could not look it up, and every such command ended in a
UnicodeEncodeError traceback."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db

BAD = "demo\udcff"  # what Python makes of the bytes b"demo\xff" in a UTF-8 locale

COMMANDS = [
    ("release_status", [BAD], "code"),
    ("preflight_release", [BAD], "code"),
    ("run_release", [BAD, "--sync"], "code"),
    ("contamination_check", [BAD], "code"),
    ("publish_release", [BAD], "code"),
    ("publish_release", ["demo.0", "--user", BAD], "--user"),
    ("export_release", [BAD], "code"),
    ("verify_release", [BAD], "code"),
    ("arena_classifier", [BAD], "code"),
    ("reading_study_simulate", [BAD, "2"], "code"),
    ("reading_study_reveal", [BAD, "--user", "pat"], "code"),
    ("reading_study_reveal", ["demo.0", "--user", BAD], "--user"),
    ("staff_add", [BAD, "--role", "auditor"], "NAME"),
]


@pytest.mark.parametrize(("command", "args", "argument"), COMMANDS,
                         ids=[f"{c}-{a}" for c, _, a in COMMANDS])
def test_an_argument_that_is_not_utf8_is_refused_naming_it(command, args, argument):
    with pytest.raises(CommandError) as refused:
        call_command(command, *args)
    message = str(refused.value)
    assert message == (f"Error: argument {argument}: 'demo\\xff' is not UTF-8 text (byte 0xff "
                       "could not be read): type it again in a UTF-8 terminal"), message
