"""Held texts that could be found by their words (DESIGN section 9: arena texts cannot be looked
up; section 10: nor can a reading study's).

Whole cells are held (`held_cells`), so no public page names a held text's writer by its id or
by a gap in a list. A held text whose words are those of a text outside its holder's cells
could still be found by searching for them: a writer may write the same words in two cells
(the same reply under two conditions or variants), or in another release (the same writers
on the same scenarios). The rule, which leaks nothing:

- A held text is *findable elsewhere* when its words (`words_key`: Unicode-normalised,
  case-folded, punctuation and spacing dropped) equal those of any text of the release
  outside its holder's cells: a public text, a text held by the other holder (public once
  that holder reveals, possibly while this one still needs it blind), or a text of a
  held-out scenario.
- Or when its words, or nearly its words, are those of a text anyone can read now in another
  published release: the same words, or a *near-copy*, a text on the same scenario holding at
  least NEAR_COPY_SHARE of its runs of RUN_WORDS words (a writer's same facts a word or two
  apart; texts of other scenarios tell of other organisations, and are not compared run by
  run). Texts another release still holds are not counted until it reveals them; publishing
  a release whose public texts copy texts held elsewhere is warned about on the publish page
  (`copies_on_publishing`).
- Its holder never shows it: the arena pairs no such text and a reading study gives none to
  read. It stays held, with its whole cell, until its holder reveals, so nothing public
  changes and no gap opens. (Holding the public duplicate instead would open a gap in that
  public cell naming the writer; holding the duplicate's whole cell would change the frozen
  draw and could find further duplicates in turn.)
- Staff see how many were left out: the arena's manage page, a study's progress page.

Cost: one hash per text, and for near-copies one set of hashed five-word runs per text of the
other releases' public scenarios, indexed by run; a held text is looked up run by run.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import QuerySet
from pydantic import TypeAdapter

from audits_app.arena.models import ArenaEvent
from audits_app.models import ImportedText, Publication, StudyTextsReveal
from audits_app.publication.held_cells import (
    Holder,
    held_cells,
    held_cells_draw,
    held_parts,
    text_cell,
    withheld_cells,
)
from audits_app.publication.snapshot_model import ReleaseSnapshot, TextEntry
from runs_app.models import Generation, WorkStatus
from runs_app.words import stored_words_key, words_key
from runs_app.words import text_words as _words
from scenarios_app.models import Visibility

RUN_WORDS = 5
# A held text sharing this share of its five-word runs with one text is a near-copy of it: a
# writer's text on one scenario under another cell shares 0.9 and more, texts on other
# scenarios under 0.5 (audits_app/arena/tests/test_blind_texts.py measures the world's).
NEAR_COPY_SHARE = 0.5


def word_runs(body: str) -> set[str]:
    """The text's runs of RUN_WORDS words (its whole words when it has fewer)."""
    words = _words(body)
    return {" ".join(words[i:i + RUN_WORDS])
            for i in range(max(len(words) - RUN_WORDS + 1, 1))}


def near_copy_share(body: str, other: str) -> float:
    """The share of `body`'s runs of five words that `other` has too."""
    runs = word_runs(body)
    return len(runs & word_runs(other)) / len(runs)


@dataclass
class WordsIndex:
    """Texts to look others up in: their words' hashes, and per scenario their runs (as the
    process's hashes of them: the index never leaves the process). `scenarios`, when given,
    are the only scenarios whose texts will be looked up run by run: the runs of texts on
    other scenarios are not kept (a 250-word text's runs cost about 40 KB)."""

    keys: set[str] = field(default_factory=set)
    runs: dict[str, dict[int, list[int]]] = field(default_factory=lambda: defaultdict(dict))
    count: int = 0
    scenarios: frozenset[str] | None = None

    def add(self, scenario: str, body: str) -> None:
        if not _words(body):
            return  # no words, nothing to find them by
        self.keys.add(words_key(body))
        if self.scenarios is not None and scenario not in self.scenarios:
            return
        number, self.count = self.count, self.count + 1
        by_run = self.runs[scenario]
        for run in word_runs(body):
            by_run.setdefault(hash(run), []).append(number)

    def finds(self, scenario: str, body: str) -> bool:
        """Has a text of the index these words, or (on the same scenario) nearly these?"""
        if not _words(body):
            return False
        if words_key(body) in self.keys:
            return True
        by_run = self.runs.get(scenario)
        if not by_run:
            return False
        runs = word_runs(body)
        shared = Counter(number for run in runs for number in by_run.get(hash(run), ()))
        return bool(shared) and max(shared.values()) >= NEAR_COPY_SHARE * len(runs)


def public_elsewhere_ids(release, generation_ids: Iterable[int]) -> set[int]:
    """Ids of the texts whose words, or nearly their words, anyone can read now in another
    published release, with their writer named (`public_elsewhere`): the same deterministic
    writers run again on the same scenarios write the same texts. Such a text cannot be
    checked blind: a spot-check batch never samples it (`spotcheck_batch_create`'s
    `leave_out`), and a pending check of one is withdrawn when opened (`review`).

    What that does to the figures: the spot-check sample, and every agreement rate estimated
    from it, are over the texts that could be checked blind, not over all the release's scored
    texts. Texts copied from another release are left out whatever the jury said of them; the
    batch says how many (`SpotCheckBatch.left_out_public`), so a reader can judge how much of
    the release the figures cover."""
    rows = list(Generation.objects.filter(pk__in=list(generation_ids)).values_list(
        "pk", "scenario_version__scenario__slug", "text"))
    if not rows:
        return set()
    elsewhere = public_elsewhere(release.code, frozenset(slug for _, slug, _ in rows))
    return {pk for pk, slug, text in rows if elsewhere.finds(slug, text)}


def findable_elsewhere(snapshot: ReleaseSnapshot, holder: Holder,
                       bodies: dict[int, str] | None = None) -> set[int]:
    """Ids of the texts in `holder`'s cells whose words equal those of a text of the release
    outside them, or those (or nearly those) of a text another published release shows
    now. `bodies` (id -> text) is read from the generations when not given."""
    held = held_cells(snapshot, holder)
    texts = snapshot.texts
    if not held or not texts:
        return set()
    if bodies is None:
        bodies = dict(Generation.objects.filter(pk__in=[text.id for text in texts])
                      .values_list("pk", "text"))
    inside = [text for text in texts if text_cell(text) in held]
    inside_ids = {text.id for text in inside}
    outside = {words_key(bodies.get(text.id, "")) for text in texts
               if text.id not in inside_ids}
    elsewhere = public_elsewhere(snapshot.release.code, frozenset(cell[0] for cell in held))
    return {text.id for text in inside
            if words_key(bodies.get(text.id, "")) in outside
            or elsewhere.finds(text.scenario, bodies.get(text.id, ""))}


# ---------------------------------------------------------------------------------------------
# Other published releases
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Published:
    release_id: int
    code: str
    texts: list[TextEntry]  # the snapshot's rows of its public scenarios' public texts
    withheld: set  # its cells still held back


def _reveals() -> tuple[frozenset[int], frozenset[int]]:
    """Ids of the releases whose arena closed, and of those whose study texts were revealed."""
    return (frozenset(ArenaEvent.objects.filter(action=ArenaEvent.Action.CLOSE)
                      .values_list("release_id", flat=True)),
            frozenset(StudyTextsReveal.objects.values_list("release_id", flat=True)))


# Another release's texts as its snapshot stores them, checked as `ReleaseSnapshot` checks them.
_TEXTS = TypeAdapter(list[TextEntry])


def _publications(other_than: str = "", reveals: tuple | None = None) -> list[_Published]:
    """Every published release but `other_than`, with its public scenarios' texts and the
    cells it still withholds. Three queries; only the parts of the snapshots needed."""
    closed, revealed_studies = reveals or _reveals()
    found = []
    for row in Publication.objects.exclude(release__code=other_than).values(
            "release_id", "release__code", "snapshot__texts", "snapshot__scenarios",
            "snapshot__arena", "snapshot__reading_studies"):
        public = {s.get("slug") for s in row["snapshot__scenarios"] or []
                  if s.get("visibility") == Visibility.PUBLIC}
        revealed = ({Holder.ARENA} if row["release_id"] in closed else set()) | (
            {Holder.READING_STUDIES} if row["release_id"] in revealed_studies else set())
        holds = held_parts({holder.value: row[f"snapshot__{holder.value}"] for holder in Holder})
        found.append(_Published(
            row["release_id"], row["release__code"],
            [text for text in _TEXTS.validate_python(row["snapshot__texts"] or [])
             if text.scenario in public and text.visibility == "public"],
            withheld_cells(holds, revealed)))
    return found


def _bodies(published: _Published, ids: Iterable[int]) -> dict[int, str]:
    """Texts by the ids the release's snapshot gives them (an imported release's are its
    original instance's: `ImportedText`)."""
    wanted = set(ids)
    renamed = dict(ImportedText.objects.filter(release_id=published.release_id,
                                               snapshot_id__in=wanted)
                   .values_list("generation_id", "snapshot_id"))
    rows = Generation.objects.filter(release_id=published.release_id).filter(
        pk__in=list(renamed) if renamed else wanted).values_list("pk", "text")
    return {renamed.get(pk, pk): text for pk, text in rows}


_kept: dict[tuple, WordsIndex] = {}
_kept_lock = threading.Lock()


# The indexes kept per process: one per caller's scenarios (the arena's and the studies').
KEPT_INDEXES = 4


def forget_indexes() -> None:
    """Drop the kept indexes and held texts' words (for tests, whose rolled-back worlds give
    the same publication ids and hashes to other texts: a published text never changes
    anywhere else)."""
    with _kept_lock:
        _kept.clear()
        _held_keys.clear()


# The words keys of the texts publications hold, by (publication id, snapshot hash, cells).
_held_keys: dict[tuple, frozenset[str]] = {}
KEPT_HELD_KEYS = 16


def held_words_keys(publication: tuple[int, str], cells: frozenset,
                    texts: QuerySet) -> frozenset[str]:
    """The words keys (`runs_app.words`) of the texts a publication holds in `cells` (`texts`
    are their rows): computed from their words, since a release published before
    `Generation.words_key` existed has none stored, and its rows never change. Kept per
    process by what decides them; a reveal shrinks the cells, and so the key."""
    key = (*publication, cells)
    with _kept_lock:
        if key in _held_keys:
            return _held_keys[key]
    found = frozenset(filter(None, map(stored_words_key,
                                       texts.values_list("text", flat=True).iterator())))
    with _kept_lock:
        while len(_held_keys) >= KEPT_HELD_KEYS:
            del _held_keys[next(iter(_held_keys))]
        _held_keys[key] = found
    return found


def public_elsewhere(code: str, scenarios: frozenset[str] | None = None) -> WordsIndex:
    """The texts anyone can read now in the published releases other than `code`, indexed
    (run by run only on `scenarios`, those `code`'s held texts are on, when given). Kept per
    process under what decides it (the publications and their reveals), since a publication
    never changes."""
    reveals = _reveals()
    key = (code, scenarios, reveals, tuple(Publication.objects.exclude(release__code=code)
                                .order_by("pk").values_list("pk", "snapshot_hash")))
    with _kept_lock:
        if key in _kept:
            return _kept[key]
    publications = _publications(other_than=code, reveals=reveals)
    index = WordsIndex(scenarios=scenarios)
    for published in publications:
        shown = [text for text in published.texts if text_cell(text) not in published.withheld]
        bodies = _bodies(published, [text.id for text in shown])
        for text in shown:
            index.add(text.scenario, bodies.get(text.id, ""))
    with _kept_lock:
        for stale in [old for old in _kept if old[0] == code and old[2:] != key[2:]]:
            del _kept[stale]  # publications or reveals moved on: never asked for again
        while len(_kept) >= KEPT_INDEXES:
            del _kept[next(iter(_kept))]
        _kept[key] = index
    return index


@dataclass(frozen=True)
class Copies:
    """What publishing a release would do to texts kept blind (the publish page's warning)."""

    held_copied: int  # this release's held texts already public elsewhere (never shown)
    held: int  # this release's held texts
    # (release code, how many): texts other releases still hold that this one makes public
    exposed: tuple[tuple[str, int], ...]

    @property
    def exposed_total(self) -> int:
        return sum(count for _, count in self.exposed)


def copies_on_publishing(release) -> Copies:
    """For a release about to be published: how many of the texts it will hold (the draw is
    seeded, so known before it is frozen) have their words, or nearly, among the public texts
    of other published releases, and how many texts other releases still hold its public
    texts would make public."""
    rows = list(Generation.objects.filter(release=release, status=WorkStatus.DONE).values_list(
        "pk", "scenario_version__scenario__slug", "scenario_version__content__visibility",
        "task", "condition", "variant", "text"))
    config = release.parsed_config()
    visibility = {slug: shown for _, slug, shown, *_ in rows}
    draws = held_cells_draw(config, [slug for slug, _ in config.pinned()
                                     if visibility.get(slug) == Visibility.PUBLIC])
    held_cells_all = {cell for cells in draws.values() for cell in cells}
    held = [(slug, text) for pk, slug, _, task, condition, variant, text in rows
            if (slug, task, condition, variant) in held_cells_all]
    elsewhere = public_elsewhere(release.code, frozenset(slug for slug, _ in held))
    mine = WordsIndex()
    for _, slug, visibility, task, condition, variant, text in rows:
        if visibility == Visibility.PUBLIC and (slug, task, condition, variant) \
                not in held_cells_all:
            mine.add(slug, text)
    exposed = []
    for published in _publications(other_than=release.code):
        kept = [text for text in published.texts if text_cell(text) in published.withheld]
        bodies = _bodies(published, [text.id for text in kept])
        found = sum(1 for text in kept if mine.finds(text.scenario, bodies.get(text.id, "")))
        exposed += [(published.code, found)] if found else []
    return Copies(held_copied=sum(1 for slug, text in held if elsewhere.finds(slug, text)),
                  held=len(held), exposed=tuple(sorted(exposed)))
