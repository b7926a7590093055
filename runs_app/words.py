"""A text's words, whatever their case, spacing or punctuation: two texts with the same words
are the same text to whoever searches for them. `audits_app.publication.same_words` compares
texts by these; each generation keeps its text's key (`Generation.words_key`), so that the
texts with the words of a text a release holds blind are found by one indexed query
(`audits_app.pages.viewer.withheld_generations`). Here, in runs_app, because the generation
computes its own key when saved (dependencies run one way)."""

from __future__ import annotations

import hashlib
import re
import unicodedata

WORD = re.compile(r"\w+")


def text_words(body: str) -> list[str]:
    """The text's words: Unicode-normalised (NFKC), case-folded, without punctuation."""
    return WORD.findall(unicodedata.normalize("NFKC", body or "").casefold())


def words_key(body: str) -> str:
    """The text's words, whatever their case, spacing or punctuation, as a hash."""
    return _hashed(text_words(body))


def stored_words_key(body: str) -> str:
    """`words_key`, or "" for a text without words (a pending cell's, an empty reply's):
    nothing finds a text by no words, and no two empty texts are one text."""
    words = text_words(body)
    return _hashed(words) if words else ""


def _hashed(words: list[str]) -> str:
    return hashlib.sha256(" ".join(words).encode("utf-8")).hexdigest()
