"""Held texts that could be found by their words (DESIGN section 9: arena texts cannot be looked
up; section 10: nor can a reading study's).

Whole cells are held (`held_cells`), so no public page names a held text's writer by its id or
by a gap in a list. A held text whose words are those of a text outside its holder's cells
could still be found by searching for them: a writer may write the same words in two cells
(the same reply under two conditions or variants). The rule, which leaks nothing:

- A held text is *findable elsewhere* when its words (`words_key`: Unicode-normalised,
  case-folded, punctuation and spacing dropped) equal those of any text of the release
  outside its holder's cells: a public text, a text held by the other holder (public once
  that holder reveals, possibly while this one still needs it blind), or a text of a
  held-out scenario.
- Its holder never shows it: the arena pairs no such text and a reading study gives none to
  read. It stays held, with its whole cell, until its holder reveals, so nothing public
  changes and no gap opens. (Holding the public duplicate instead would open a gap in that
  public cell naming the writer; holding the duplicate's whole cell would change the frozen
  draw and could find further duplicates in turn.)
- Staff see how many were left out: the arena's manage page, a study's progress page.

Only the release's own texts are compared: another release's texts are not.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from audits_app.publication.held_cells import Holder, held_cells, text_cell
from audits_app.publication.snapshot_model import ReleaseSnapshot
from runs_app.models import Generation

WORD = re.compile(r"\w+")


def words_key(body: str) -> str:
    """The text's words, whatever their case, spacing or punctuation, as a hash."""
    words = WORD.findall(unicodedata.normalize("NFKC", body or "").casefold())
    return hashlib.sha256(" ".join(words).encode("utf-8")).hexdigest()


def findable_elsewhere(snapshot: ReleaseSnapshot, holder: Holder,
                       bodies: dict[int, str] | None = None) -> set[int]:
    """Ids of the texts in `holder`'s cells whose words equal those of a text of the release
    outside them. `bodies` (id -> text) is read from the generations when not given."""
    held = held_cells(snapshot, holder)
    texts = snapshot.texts
    if not held or not texts:
        return set()
    if bodies is None:
        bodies = dict(Generation.objects.filter(pk__in=[text.id for text in texts])
                      .values_list("pk", "text"))
    inside = {text.id for text in texts if text_cell(text) in held}
    outside = {words_key(bodies.get(text.id, "")) for text in texts
               if text.id not in inside}
    return {text_id for text_id in inside if words_key(bodies.get(text_id, "")) in outside}
