"""Was a reply written by the model that was asked? (DESIGN section 5)

OpenRouter names the model that answered in the reply's `model` field (kept as
`served_model`). It rarely repeats the asked slug letter for letter: it names a dated
snapshot of it (`openai/gpt-4o` -> `openai/gpt-4o-2024-08-06`, `mistralai/mistral-large`
-> `mistralai/mistral-large-2411`), a canonical slug with the words in another order
(`anthropic/claude-sonnet-4` -> `anthropic/claude-4-sonnet-20250522`), and may keep or drop
a routing variant (`:free`, `:nitro`). Those are the model that was asked. Another vendor
or another model of the family (`openai/gpt-4o-mini` for `openai/gpt-4o`) is not.
"""

from __future__ import annotations

import re

# A trailing word that dates or numbers a snapshot: 2024, 08, 20240620, 0324, 001.
SNAPSHOT_WORD = re.compile(r"\d{2,8}")


def served_as_asked(asked: str, served: str) -> bool:
    """True unless the reply names another model than `asked`.

    An empty `served` is unknown (the fixture provider, providers that send no name), not a
    mismatch. Otherwise both names are compared without case and without a `:variant`. A
    served name with a vendor must have the asked vendor (one without names none), and its
    words (split at `-` or `.`), once its trailing snapshot words (all digits, two to eight of
    them) are set aside, must be the asked name's words in any order."""
    if not served.strip():
        return True
    asked_vendor, asked_words = _vendor_and_words(asked)
    served_vendor, served_words = _vendor_and_words(served)
    if served_vendor and served_vendor != asked_vendor:
        return False
    return sorted(asked_words) == sorted(_without_snapshot(served_words, len(asked_words)))


def _vendor_and_words(slug: str) -> tuple[str, list[str]]:
    """`Vendor/Name-Words:variant` -> ("vendor", ["name", "words"]). A version's dot
    separates words as a dash does: OpenRouter's canonical slug for `claude-3.7-sonnet` is
    `claude-3-7-sonnet-20250219`."""
    vendor, _, name = slug.strip().lower().rpartition("/")
    return vendor, re.split(r"[-.]", name.split(":", 1)[0])


def _without_snapshot(words: list[str], keep: int) -> list[str]:
    """The words without their trailing snapshot words, never fewer than `keep`: a dated
    asked slug (`mistral-large-2411`) must be served with its own date, not another."""
    end = len(words)
    while end > keep and SNAPSHOT_WORD.fullmatch(words[end - 1]):
        end -= 1
    return words[:end]
