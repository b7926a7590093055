"""A password rule Django's four validators leave out (settings.AUTH_PASSWORD_VALIDATORS).

`MinimumLengthValidator` counts characters, not choices: `aaaaaaaaaaaaaaaa`,
`passwordpassword`, `qwertyuiopasdfgh` or the login name typed twice are long enough and in no
list of common passwords, yet each is among the first things a guesser tries. A staff login
reaches unpublished releases and the writers of blind pairs, so these are refused too.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError

# Runs a guesser walks: keyboard rows (QWERTY and AZERTY), the alphabet and the digits.
SEQUENCES = ("qwertyuiopasdfghjklzxcvbnm", "azertyuiopqsdfghjklmwxcvbn",
             "abcdefghijklmnopqrstuvwxyz", "01234567890")
MIN_DIFFERENT = 6


class PatternValidator:
    """Refuses a password that is one short part repeated, a run along the keyboard or the
    alphabet (either way), has fewer than MIN_DIFFERENT different characters, or contains
    the login name."""

    def validate(self, password: str, user=None) -> None:
        lowered = password.lower()
        problems = []
        if _repeated(lowered):
            problems.append("This password is one short part repeated.")
        if any(lowered in sequence or lowered in sequence[::-1] for sequence in SEQUENCES):
            problems.append("This password is a run along the keyboard or the alphabet.")
        if len(set(lowered)) < MIN_DIFFERENT:
            problems.append(f"This password has fewer than {MIN_DIFFERENT} different "
                            f"characters.")
        name = (user.get_username() if user is not None else "").lower()
        if len(name) >= 3 and name in lowered:
            problems.append("This password contains the login name.")
        if problems:
            raise ValidationError(problems, code="password_pattern")

    def get_help_text(self) -> str:
        return (f"Your password can't be one short part repeated, a run along the keyboard or "
                f"the alphabet, have fewer than {MIN_DIFFERENT} different characters, or "
                f"contain your login name.")


def _repeated(text: str) -> bool:
    """Whether `text` is a shorter string said two or more times ("abcabc")."""
    return any(len(text) % size == 0 and text == text[:size] * (len(text) // size)
               for size in range(1, len(text) // 2 + 1))
