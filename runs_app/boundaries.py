"""The one boundary between a prompt and the untrusted text it embeds (DESIGN section 5).

Texts under review, juror quotes, journalist articles and interview answers are data, never
instructions. Every prompt builder puts such a text in a block with `embed`:

    <<<BEGIN TEXT>>>
    ...the text...
    <<<END TEXT>>>

and `embed` makes sure the text cannot open or close a block or start a turn of a transcript,
however it is spelled. What a model might read as a marker is found on a *skeleton* of the text:
NFKC (full-width and compatibility forms), Unicode's confusables (letters, colons and angle
brackets that look alike, via `confusable_homoglyphs`, plus the angle brackets of
`_BRACKETS`), case folded, with whitespace, zero-width, format, control and combining
characters ignored. On that skeleton:

- a block marker needs three angle brackets in a row; `embed` turns every run of two or more
  bracket characters (spaces and invisible characters between them count as part of the
  run), and any one character worth three ("⋘"), into a single bracket;
- a turn label is a line that starts with a role's label and a colon (`JOURNALIST:`); `embed`
  breaks the colon of any such line (`JOURNALIST -`).

So the only markers and turn labels in a built prompt are the builder's own. A transcript is
structured turns: each turn is its role's label on its own line (from the data, never parsed
from a reply), then the turn's words in their own block (`transcript`).

The marker syntax is code, not part of a scoring version: it is the safety of every prompt,
and a fix to it applies to every release.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence

BEGIN = "<<<BEGIN {label}>>>"
END = "<<<END {label}>>>"

# Angle brackets that look like "<" or ">", after NFKC, with how many each is worth
# ("«" reads as "<<"). Unicode's confusables list misses several of them.
_LEFT = {"<": 1, "‹": 1, "˂": 1, "˱": 1, "ᐸ": 1, "〈": 1, "⟨": 1, "❬": 1, "❮": 1, "❰": 1,
         "⧼": 1, "⦑": 1, "⋖": 1, "«": 2, "《": 2, "⟪": 2, "≪": 2, "⋘": 3}
_RIGHT = {">": 1, "›": 1, "˃": 1, "˲": 1, "ᐳ": 1, "〉": 1, "⟩": 1, "❭": 1, "❯": 1, "❱": 1,
          "⧽": 1, "⦒": 1, "⋗": 1, "»": 2, "》": 2, "⟫": 2, "≫": 2, "⋙": 3}
_BRACKETS = {char: "<" * n for char, n in _LEFT.items()} | {
    char: ">" * n for char, n in _RIGHT.items()}
# Characters a reader does not see, or sees as space: they never separate a marker's parts.
_IGNORED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Mn", "Me", "Zs", "Zl", "Zp"})


@functools.cache
def _lookalikes() -> dict[str, str]:
    """Non-ASCII character -> the ASCII letter, digit, colon or bracket it can pass for."""
    from confusable_homoglyphs.confusables import confusables_data

    wanted = {char for char in map(chr, range(128)) if char.isalnum() or char in "<>:"}
    table: dict[str, str] = {}
    for key, homoglyphs in confusables_data.items():
        for entry in homoglyphs:
            other = entry["c"].replace("\u200e", "")
            if len(key) == 1 == len(other):
                if key in wanted and not other.isascii():
                    table.setdefault(other, key)
                elif other in wanted and not key.isascii():
                    table.setdefault(key, other)
    return table | _BRACKETS


def _ignored(char: str) -> bool:
    return unicodedata.category(char) in _IGNORED_CATEGORIES


@functools.lru_cache(maxsize=4096)
def skeleton(char: str) -> str:
    """What one character can be read as: "" when invisible, else ASCII where it looks so."""
    if _ignored(char):
        return ""
    table = _lookalikes()
    parts = []
    for part in unicodedata.normalize("NFKC", char):
        if not _ignored(part):
            parts.append(table.get(part, part))
    return "".join(parts).casefold()


def _direction(char: str) -> str:
    """'<' or '>' when the character is made of angle brackets only, else ''."""
    shape = skeleton(char)
    return shape[0] if shape and set(shape) <= {shape[0]} and shape[0] in "<>" else ""


def _brackets(char: str) -> int:
    return len(skeleton(char)) if _direction(char) else 0


# ---------------------------------------------------------------------------------------
# Neutralising an untrusted text
# ---------------------------------------------------------------------------------------


def _collapse_bracket_runs(text: str) -> str:
    """Every run of two or more angle brackets of one direction becomes one bracket."""
    # Each distinct character is looked at once: a text has a few dozen, and most texts have
    # no bracket at all (per character, this check cost more than a model call's overhead).
    directions = {char: _direction(char) for char in set(text)}
    if not any(directions.values()):
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        direction = directions[text[index]]
        if not direction:
            out.append(text[index])
            index += 1
            continue
        count, chars, last, probe = _brackets(text[index]), 1, index, index + 1
        while probe < len(text) and (_ignored(text[probe]) or directions[text[probe]]):
            if directions[text[probe]] == direction:
                count, chars, last = count + _brackets(text[probe]), chars + 1, probe
            elif directions[text[probe]]:
                break
            probe += 1
        # A lone "«" stays as written (it is a quotation mark in several languages).
        out.append(direction if chars >= 2 or count >= 3 else text[index:last + 1])
        index = last + 1
    return "".join(out)


def _label_colon(line: str, labels: Iterable[str]) -> int | None:
    """The index of the colon when `line` reads as `LABEL:` for one of `labels`."""
    read = ""
    for index, char in enumerate(line):
        shape = skeleton(char)
        if not shape:
            continue
        if shape == ":" and read in labels:
            return index
        read += shape
        if not any(label.startswith(read) for label in labels):
            return None
    return None


def _break_turn_labels(text: str, turn_labels: Iterable[str]) -> str:
    labels = {_label_key(label) for label in turn_labels}
    if not labels:
        return text
    lines = text.split("\n")
    for number, line in enumerate(lines):
        colon = _label_colon(line, labels)
        if colon is not None:
            lines[number] = f"{line[:colon]} -{line[colon + 1:]}"
    return "\n".join(lines)


def _label_key(label: str) -> str:
    return "".join(skeleton(char) for char in label)


def neutralise(text: str, turn_labels: Iterable[str] = ()) -> str:
    """The text with nothing left that reads as a block marker or a turn label.

    Line breaks of every kind become "\\n" first, so a line start is a line start for the
    model too.
    """
    text = "\n".join(text.splitlines())
    return _break_turn_labels(_collapse_bracket_runs(text), turn_labels)


def embed(text: str, label: str, *, turn_labels: Iterable[str] = ()) -> str:
    """The untrusted `text` in a block named `label` (upper-case words, e.g. "TEXT")."""
    return "\n".join([BEGIN.format(label=label), neutralise(text, turn_labels).strip(),
                      END.format(label=label)])


def transcript(turns: Sequence[tuple[str, str]], *, turn_labels: Iterable[str]) -> str:
    """(role label, words) pairs: each label on its own line, the words in block `TURN n`."""
    labels = tuple(turn_labels)
    return "\n\n".join(f"{role}:\n{embed(words, f'TURN {number}', turn_labels=labels)}"
                       for number, (role, words) in enumerate(turns, 1))


# ---------------------------------------------------------------------------------------
# Reading a built prompt back (the fixture provider and the tests)
# ---------------------------------------------------------------------------------------


def block_content(prompt: str, label: str) -> str | None:
    """The words inside block `label` of a prompt built here, or None."""
    begin, end = BEGIN.format(label=label), END.format(label=label)
    start = prompt.find(begin + "\n")
    stop = prompt.find("\n" + end, start) if start >= 0 else -1
    return None if stop < 0 else prompt[start + len(begin) + 1:stop]


def transcript_turns(prompt: str, turn_labels: Iterable[str]) -> list[tuple[str, str]]:
    """(role label, words) of every turn of a transcript built by `transcript`."""
    roles = "|".join(map(re.escape, turn_labels))
    pattern = re.compile(rf"^({roles}):\n<<<BEGIN TURN (\d+)>>>\n(.*?)\n<<<END TURN \2>>>$",
                         re.MULTILINE | re.DOTALL)
    return [(found[1], found[3]) for found in pattern.finditer(prompt)]


_MARKER = re.compile(r"<<<(begin|end)([a-z0-9]*)>>>")


def markers_in(prompt: str) -> list[tuple[str, str]]:
    """Every block marker a model could read in `prompt`, as (begin|end, label skeleton)."""
    shape = "".join(skeleton(char) for char in prompt)
    return [(found[1], found[2]) for found in _MARKER.finditer(shape)]


def turn_lines_in(prompt: str, turn_labels: Iterable[str]) -> int:
    """How many lines of `prompt` a model could read as the start of a turn."""
    labels = {_label_key(label) for label in turn_labels}
    return sum(_label_colon(line, labels) is not None for line in "\n".join(
        prompt.splitlines()).split("\n"))
