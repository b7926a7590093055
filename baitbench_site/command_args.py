"""Command-line values that go to the database: a release code, a user name.

A shell in another encoding than UTF-8 (or a byte typed in the wrong one) hands Python an
argument with a lone surrogate for each byte it could not decode; the database cannot store or
look up such a string, and every command that asked for `--user` or a release code ended in a
UnicodeEncodeError traceback. As the argument's `type`, `text` refuses it first, with argparse's
own one line naming the argument. `shown` is the same rule for what a command prints: a file
name's undecodable byte shows as `\\xe9`, not as the lone surrogate `\\udce9` Python made of it."""

from __future__ import annotations

import argparse


def text(value: str) -> str:
    """The argument as given, when it is UTF-8 text; else argparse's error naming it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise argparse.ArgumentTypeError(
            f"'{shown(value)}' is not UTF-8 text (byte 0x{ord(value[error.start]) - 0xDC00:02x}"
            " could not be read): type it again in a UTF-8 terminal") from None
    return value


def shown(value: str) -> str:
    """`value` as a terminal can show it: each byte that was not UTF-8 (a lone surrogate, as
    Python decodes a file name or an argument) as its `\\xNN`; any other lone surrogate as
    its `\\udNNN`."""
    try:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no undecodable byte made
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
