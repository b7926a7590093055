"""Arena texts cannot be looked up (DESIGN section 9): the cells held for the arena keep their
texts off every public page, answer and archive until the arena closes, and the arena pairs
only those texts."""

from __future__ import annotations

import re

import pytest

from audits_app.arena.models import ArenaPair
from audits_app.arena.selectors import arena_counts
from audits_app.arena.services import ArenaError, arena_close, arena_open
from audits_app.arena.tests.conftest import (
    approve,
    public_text_ids,
    published_arena_release,
    same_words_as_public,
)
from audits_app.models.archive import ArchiveKind, ReleaseArchive
from audits_app.pages.viewer import load_snapshot
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from runs_app.models import Generation

CODE = "half.0"


@pytest.fixture
def half(release):
    """The arena world again, with half of its public scenarios held."""
    return published_arena_release(CODE, held_share=0.5)


@pytest.mark.django_db
def test_held_cells_are_every_cell_of_whole_public_scenarios(half):
    """A writer's texts on one scenario are near-copies of each other (the same facts under
    another condition): held cell by cell, a held text had a public twin naming its writer."""
    snapshot = load_snapshot(half.publication)
    held = held_cells(snapshot, Holder.ARENA)
    slugs = {slug for slug, *_ in held}
    # Half of the two public scenarios: one, with all four of its cells (T1 x C0-C3).
    assert len(slugs) == 1 and slugs < {"greenvale-listeria", "cobaltcloud-breach"}
    (slug,) = slugs
    assert held == {(slug, "T1", condition, 0) for condition in ("C0", "C1", "C2", "C3")}
    assert held_cells(load_snapshot(
        published_arena_release("again.0", held_share=0.5).publication), Holder.ARENA) == held, \
        "the draw is seeded by the release's seed"


@pytest.mark.django_db
def test_no_public_path_leads_to_a_text_held_for_the_arena_until_it_closes(
        half, client, publisher):
    snapshot = load_snapshot(half.publication)
    held = held_cells(snapshot, Holder.ARENA)
    texts = [text for text in snapshot.texts if text.visibility == "public"]
    held_ids = {text.id for text in texts if text_cell(text) in held}
    open_ids = {text.id for text in texts} - held_ids
    assert held_ids and open_ids

    approve(half, publisher)
    arena_open(release=half, user=publisher, reason="Approved; pilot week.")
    pairs = ArenaPair.objects.filter(release=half)
    paired = set(pairs.values_list("generation_a", flat=True)) | set(
        pairs.values_list("generation_b", flat=True))
    assert paired and paired <= held_ids, "the arena pairs only the held texts"

    reachable = public_text_ids(client, CODE)
    assert reachable == open_ids
    for text_id in held_ids:
        assert client.get(f"/releases/{CODE}/texts/{text_id}/").status_code == 404
    # Nor by the words: no held text's body on any listing or text page anyone can open.
    bodies = dict(Generation.objects.filter(pk__in=held_ids).values_list("pk", "text"))
    pages = [client.get(f"/releases/{CODE}/texts/").content.decode()]
    pages += [client.get(f"/releases/{CODE}/texts/{text_id}/").content.decode()
              for text_id in open_ids]
    for body in bodies.values():
        opening = " ".join(body.split()[:12])
        assert not any(opening in page for page in pages)
    # Staff see every text, as before.
    client.force_login(publisher)
    assert client.get(f"/releases/{CODE}/texts/{min(held_ids)}/").status_code == 200
    client.logout()

    arena_close(release=half, user=publisher, reason="Pilot over.")
    assert public_text_ids(client, CODE) == held_ids | open_ids
    # Each public archive built once and kept: the one without the arena's texts, then the
    # whole one.
    assert sorted(ReleaseArchive.objects.filter(release=half).values_list("kind", flat=True)) \
        == sorted([ArchiveKind.PUBLIC_WITHOUT_ARENA, ArchiveKind.PUBLIC])
    assert client.get(f"/releases/{CODE}/texts/{min(held_ids)}/").status_code == 200
    with pytest.raises(ArenaError, match="texts have been public since"):
        arena_open(release=half, user=publisher, reason="Once more.")


@pytest.mark.django_db
def test_a_release_that_holds_no_cells_can_have_no_arena(release, publisher):
    none_held = published_arena_release("open.0", held_share=0.0)
    approve(none_held, publisher)
    with pytest.raises(ArenaError, match="holds no cells for an arena"):
        arena_open(release=none_held, user=publisher, reason="Approved.")


@pytest.mark.django_db
def test_an_arena_that_never_opened_may_close_and_its_texts_become_public(half, client,
                                                                          publisher):
    before = public_text_ids(client, CODE)
    arena_close(release=half, user=publisher, reason="No arena for this release after all.")
    after = public_text_ids(client, CODE)
    assert before < after
    with pytest.raises(ArenaError, match="closed already"):
        arena_close(release=half, user=publisher, reason="Again.")


@pytest.mark.django_db
def test_a_held_text_with_the_words_of_a_public_text_is_never_paired(release, client,
                                                                      publisher):
    """Its writer could be found by searching a public page for its words: the arena leaves
    it out of every pair, keeps it held with its cell (no gap opens in a public list), and
    tells staff how many it left out."""
    found: dict[str, int] = {}
    same = published_arena_release(CODE, held_share=0.5,
                                   before_publish=same_words_as_public(Holder.ARENA, found))
    snapshot = load_snapshot(same.publication)
    held = held_cells(snapshot, Holder.ARENA)
    texts = [text for text in snapshot.texts if text.visibility == "public"]
    held_ids = {text.id for text in texts if text_cell(text) in held}
    open_ids = {text.id for text in texts} - held_ids
    assert found["held"] in held_ids and found["public"] in open_ids

    approve(same, publisher)
    arena_open(release=same, user=publisher, reason="Approved; pilot week.")
    pairs = ArenaPair.objects.filter(release=same)
    paired = set(pairs.values_list("generation_a", flat=True)) | set(
        pairs.values_list("generation_b", flat=True))
    assert found["held"] not in paired
    assert paired and paired <= held_ids - {found["held"]}, "the other held texts are paired"
    assert public_text_ids(client, CODE) == open_ids, "nothing public changes"
    assert client.get(f"/releases/{CODE}/texts/{found['held']}/").status_code == 404

    assert arena_counts(same)["left_out"] == 1
    client.force_login(publisher)
    page = client.get(f"/arena/{CODE}/manage/").content.decode()
    assert "Held texts left out of pairs" in page


@pytest.mark.django_db
def test_the_fixture_writers_leave_no_held_text_findable_by_its_words(half, publisher):
    """The world's writers write other words in every cell, so the arena leaves none out."""
    approve(half, publisher)
    arena_open(release=half, user=publisher, reason="Approved; pilot week.")
    assert arena_counts(half)["left_out"] == 0


def _shingles(body: str, size: int = 5) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", body.casefold())
    return {tuple(words[i:i + size]) for i in range(max(len(words) - size + 1, 1))}


@pytest.mark.django_db
def test_no_held_text_has_a_near_copy_among_the_public_texts(half):
    """A near-copy (a writer's same facts under another condition, a word or two apart) names
    the writer as surely as the same words: every held text shares under half of its runs of
    five words with any public text. Held cell by cell, each had a twin above 0.9. Refusals
    are left out: a refusal is the same two sentences whatever the scenario."""
    snapshot = load_snapshot(half.publication)
    held = held_cells(snapshot, Holder.ARENA)
    bodies = dict(Generation.objects.filter(release=half).values_list("pk", "text"))
    runs = {text.id: _shingles(bodies[text.id]) for text in snapshot.texts}
    inside = [text.id for text in snapshot.texts
              if text_cell(text) in held and text.refusal != "refused"]
    outside = [text.id for text in snapshot.texts
               if text_cell(text) not in held and text.visibility == "public"]
    assert inside and outside
    nearest = max(len(runs[a] & runs[b]) / len(runs[a]) for a in inside for b in outside)
    assert nearest < 0.5, nearest
