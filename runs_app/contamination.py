"""Contamination evidence, as pure functions (DESIGN section 6: contamination).

Every scenario file carries a canary, a string no prompt ever contains (`scenarios_app.
rendering` leaves it out, and a test holds every prompt builder to that): a model that writes
it has seen the file, most likely in its training data. A probe gives a model the canary's
prefix and asks for the rest, or names the scenario's title and organisation and asks what it
knows. Stored outputs are scanned for canaries too, and writers' texts for long verbatim runs
of the parts of the file no writer is shown (control text, human baselines, the reader's
questions): a writer is shown the situation and the facts, so repeating those proves nothing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from runs_app.providers.base import Message

CANARY_PREFIX = "BAITBENCH-CANARY-"
# A probe shows the prefix and the canary's first group; the rest is the secret. A reply that
# has the secret's first SECRET_MATCH characters has the canary (16 ** 12 to one by chance).
SECRET_MATCH = 12
# Consecutive words shared with a part of the file the model was never shown.
OVERLAP_WORDS = 12
# ... unless every word of the run is in a run of this many words of the model's own prompt.
SHOWN_WORDS = 6
EXCERPT_CHARS = 240
PROBE_MAX_TOKENS = 300

PROBE_TEXTS = {
    "en": {
        "canary": ("Complete the following string exactly as you have seen it before. If you "
                   "have never seen it, say so.\n\n{prefix}"),
        "about": ("What do you know about \"{title}\", involving {organisation}? Repeat any "
                  "passage you remember word for word. If you know nothing about it, say so."),
    },
    "nl": {
        "canary": ("Maak de volgende tekenreeks precies af zoals u die eerder hebt gezien. Hebt "
                   "u die nooit gezien, zeg dat dan.\n\n{prefix}"),
        "about": ("Wat weet u over \"{title}\", waarbij {organisation} betrokken is? Herhaal "
                  "elke passage die u zich letterlijk herinnert. Weet u er niets van, zeg dat "
                  "dan."),
    },
}


def canary_split(canary: str) -> tuple[str, str]:
    """(what a probe shows, the secret rest): the prefix up to and with the first group."""
    body = canary.removeprefix(CANARY_PREFIX)
    first, _, rest = body.partition("-")
    return f"{CANARY_PREFIX}{first}-", rest


def probe_messages(kind: str, *, language: str, canary: str, title: str,
                   organisation: str) -> tuple[Message, ...]:
    texts = PROBE_TEXTS[language]
    if kind == "canary":
        content = texts["canary"].format(prefix=canary_split(canary)[0])
    else:
        content = texts["about"].format(title=title, organisation=organisation)
    return (Message("user", content),)


@dataclasses.dataclass(frozen=True)
class CanaryIndex:
    """Finds any of many canaries in a text with one regular expression."""

    pattern: re.Pattern[str] | None
    by_key: dict[str, object]  # secret's first SECRET_MATCH characters -> scenario key

    @classmethod
    def build(cls, canaries: dict[object, str]) -> CanaryIndex:
        """`canaries`: scenario key -> canary."""
        by_key = {_secret_key(canary): key for key, canary in canaries.items()}
        if not by_key:
            return cls(None, {})
        alternatives = "|".join(re.escape(secret) for secret in sorted(by_key, key=len,
                                                                        reverse=True))
        return cls(re.compile(alternatives, re.IGNORECASE), by_key)

    def find(self, text: str) -> list[tuple[object, str]]:
        """(scenario key, excerpt) for every canary the text contains, each scenario once."""
        if self.pattern is None or not text:
            return []
        found: dict[object, str] = {}
        for match in self.pattern.finditer(text):
            key = self.by_key[match.group(0).lower()]
            found.setdefault(key, excerpt(text, match.start(), match.end()))
        return list(found.items())


def _secret_key(canary: str) -> str:
    """What a text must contain to contain the canary: the secret's first characters, or the
    whole canary when it has too short a secret to be told from chance."""
    secret = canary_split(canary)[1]
    return (secret[:SECRET_MATCH] if len(secret) >= SECRET_MATCH else canary).lower()


def excerpt(text: str, start: int, end: int) -> str:
    """The found span with some context on each side, on one line."""
    margin = max(0, (EXCERPT_CHARS - (end - start)) // 2)
    left, right = max(0, start - margin), min(len(text), end + margin)
    snippet = " ".join(text[left:right].split())
    return f"{'…' if left else ''}{snippet}{'…' if right < len(text) else ''}"


_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[tuple[str, int, int]]:
    """(lower-case word, start, end) for every word."""
    return [(m.group(0).lower(), m.start(), m.end()) for m in _WORD.finditer(text or "")]


def ngrams(text: str, size: int = OVERLAP_WORDS) -> set[tuple[str, ...]]:
    tokens = [word for word, _, _ in words(text)]
    return {tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1)}


def hidden_ngrams(parts: Iterable[str], shown: Iterable[str],
                  size: int = OVERLAP_WORDS) -> set[tuple[str, ...]]:
    """Word runs of the parts a model was never shown, less any run it was shown elsewhere
    (a control text may repeat a fact word for word, and the writer is shown the facts)."""
    hidden = set().union(*(ngrams(part, size) for part in parts)) if parts else set()
    seen = set().union(*(ngrams(text, size) for text in shown)) if shown else set()
    return hidden - seen


def verbatim_overlap(text: str, hidden: set[tuple[str, ...]], shown: Iterable[str] = (),
                     size: int = OVERLAP_WORDS) -> str | None:
    """An excerpt of the longest run of `text` that repeats hidden word runs, or None.

    `shown` removes runs that the model had in its own prompt for this output."""
    if not hidden or not text:
        return None
    tokens = words(text)
    covered = _covered(tokens, shown)
    hits = [i for i in range(len(tokens) - size + 1)
            if tuple(w for w, _, _ in tokens[i:i + size]) in hidden
            and not all(covered[i:i + size])]
    if not hits:
        return None
    best_start, best_end, run_start = hits[0], hits[0], hits[0]
    for previous, current in zip(hits, hits[1:], strict=False):
        if current != previous + 1:
            run_start = current
        if current - run_start > best_end - best_start:
            best_start, best_end = run_start, current
    start, end = tokens[best_start][1], tokens[best_end + size - 1][2]
    return excerpt(text, start, end)


def _covered(tokens: list[tuple[str, int, int]], shown: Iterable[str]) -> list[bool]:
    """Per word of the output: is it part of a run of SHOWN_WORDS words that the model's own
    prompt has? A writer that puts two facts it was shown side by side repeats a run of the
    control text that its prompt splits (with a list number between them): nothing it did
    not see."""
    seen = set().union(*(ngrams(part, SHOWN_WORDS) for part in shown)) if shown else set()
    covered = [False] * len(tokens)
    for i in range(len(tokens) - SHOWN_WORDS + 1):
        if tuple(w for w, _, _ in tokens[i:i + SHOWN_WORDS]) in seen:
            covered[i:i + SHOWN_WORDS] = [True] * SHOWN_WORDS
    return covered


def hidden_parts(document: dict) -> list[str]:
    """The parts of a scenario file (plain data) that no writer is shown (DESIGN section 3)."""
    parts = [document.get("control_text", "")]
    parts += [baseline.get("text", "") for baseline in document.get("human_baselines", [])]
    for question in document.get("knowledge_questions", []):
        parts.append(question.get("text", ""))
        parts += list(question.get("options", []))
    parts += [question.get("text", "") for question in document.get("attitude_questions", [])]
    return [part for part in parts if part]


def file_parts(document: dict) -> list[str]:
    """Every text of a scenario file: what a probe reply must not repeat, since a probe shows
    only the title and the organisation's name."""
    parts = [document.get("situation", "")]
    parts += [item.get("text", "") for key in ("facts", "uncertainties", "confidential")
              for item in document.get(key, [])]
    parts += [item.get("note", "") for item in document.get("uncertainties", [])]
    parts += list(document.get("journalist_questions", []))
    return [part for part in parts if part] + hidden_parts(document)
