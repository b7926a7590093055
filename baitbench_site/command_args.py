"""Command-line values that go to the database: a release code, a user name.

A shell in another encoding than UTF-8 (or a byte typed in the wrong one) hands Python an
argument with a lone surrogate for each byte it could not decode; the database cannot store or
look up such a string, and every command that asked for `--user` or a release code ended in a
UnicodeEncodeError traceback. As the argument's `type`, `text` refuses it first, with argparse's
own one line naming the argument."""

from __future__ import annotations

import argparse


def text(value: str) -> str:
    """The argument as given, when it is UTF-8 text; else argparse's error naming it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise argparse.ArgumentTypeError(
            f"'{shown}' is not UTF-8 text (byte 0x{ord(value[error.start]) - 0xDC00:02x}"
            " could not be read): type it again in a UTF-8 terminal") from None
    return value
