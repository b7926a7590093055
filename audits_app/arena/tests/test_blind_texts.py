"""Arena texts cannot be looked up (DESIGN section 9): the cells held for the arena keep their
texts off every public page, answer and archive until the arena closes, and the arena pairs
only those texts."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import pytest
from django.test import Client

from audits_app.arena import selectors
from audits_app.arena.models import ArenaPair, ArenaVoter
from audits_app.arena.selectors import arena_counts
from audits_app.arena.services import (
    ArenaError,
    arena_close,
    arena_open,
    showing_create,
    voter_create,
)
from audits_app.arena.tests.conftest import (
    PUBLIC,
    WRITERS,
    approve,
    public_text_ids,
    published_arena_release,
    same_words_as_public,
    staff_user,
)
from audits_app.models.archive import ArchiveKind, ReleaseArchive
from audits_app.pages.viewer import load_snapshot
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from audits_app.publication.same_words import NEAR_COPY_SHARE, findable_elsewhere, near_copy_share
from audits_app.publication.services import release_publish
from runs_app.models import Generation, RefusalCheck, Release, WorkStatus

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
    # (Openings an open text shares are left out: the fixture's refusals open alike.)
    shared = {" ".join(body.split()[:12]) for body in Generation.objects.filter(
        pk__in=open_ids).values_list("text", flat=True)}
    openings = {" ".join(body.split()[:12]) for body in bodies.values()} - shared
    assert openings
    for opening in openings:
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
def test_a_scenario_whose_texts_are_held_says_why_it_lists_none_and_links_no_empty_list(
        release, client, publisher):
    """The scenario page linked "The 0 texts of this scenario" to a text list that answers
    400 (no text has that scenario yet): it says why there are none instead, naming no text
    or writer. Arena texts first, then reading studies' once the arena has revealed its."""
    both = published_arena_release(CODE, held_share=0.5, study_share=0.5)
    snapshot = load_snapshot(both.publication)
    (arena_slug,) = {slug for slug, *_ in held_cells(snapshot, Holder.ARENA)}
    (study_slug,) = {slug for slug, *_ in held_cells(snapshot, Holder.READING_STUDIES)}
    list_url = f"/releases/{CODE}/texts/?scenario="
    for slug, held_for in ((arena_slug, "the release's arena, until the arena closes"),
                           (study_slug, "the release's reading studies, until they are "
                                        "revealed")):
        page = html.unescape(client.get(f"/releases/{CODE}/scenarios/{slug}/").content.decode())
        assert list_url not in page and "The 0 texts" not in page, slug
        assert (f"No text of this scenario is listed. Its texts are held for {held_for}: "
                "no page lists them before then.") in page, slug
        assert not any(name in page for name in ("fixture/", "candid", "spinner")), slug
    # Publishers see every text, with the link; so does everyone once the arena closes.
    client.force_login(publisher)
    assert list_url + arena_slug in client.get(
        f"/releases/{CODE}/scenarios/{arena_slug}/").content.decode()
    client.logout()
    arena_close(release=both, user=publisher, reason="No arena for this release after all.")
    page = client.get(f"/releases/{CODE}/scenarios/{arena_slug}/").content.decode()
    assert list_url + arena_slug in page
    assert client.get(f"{list_url}{arena_slug}").status_code == 200


@pytest.mark.django_db
def test_the_text_list_offers_only_scenarios_with_public_texts_and_says_some_are_held(
        release, client, publisher):
    """The Scenario filter listed every scenario, and choosing one whose texts are all held
    was a 400: it lists those with a text to show, and one sentence says how many are held
    back, naming no scenario, text or writer."""
    half = published_arena_release(CODE, held_share=0.5)
    (held_slug,) = {slug for slug, *_ in held_cells(load_snapshot(half.publication),
                                                     Holder.ARENA)}
    (open_slug,) = {"greenvale-listeria", "cobaltcloud-breach"} - {held_slug}
    note = ("The texts of 1 scenario are held back from the public pages, so the Scenario "
            "filter leaves it out.")

    page = html.unescape(client.get(f"/releases/{CODE}/texts/").content.decode())
    options = re.search(r'<select name="scenario">(.*?)</select>', page, re.S).group(1)
    assert f'value="{open_slug}"' in options and f'value="{held_slug}"' not in options
    assert note in page
    assert client.get(f"/releases/{CODE}/texts/?scenario={open_slug}").status_code == 200
    # Asked for by name (a link kept from before), the held scenario is said to be held: the
    # release does have texts on it (found by the user re-check: "no text has scenario").
    held_says = (f"the texts of scenario '{held_slug}' are held for the release's arena, "
                 f"until the arena closes; none of them is shown before that")
    for address in (f"/releases/{CODE}/texts/?scenario={held_slug}",
                    f"/api/v1/releases/{CODE}/texts/?scenario={held_slug}",
                    f"/api/v1/releases/{CODE}/texts.csv?scenario={held_slug}"):
        refused = client.get(address)
        assert refused.status_code == 400, address
        assert held_says in html.unescape(refused.content.decode()).lower(), address
    # Staff see every text, so every scenario and no such sentence; so does everyone once the
    # arena closes.
    client.force_login(publisher)
    staff_page = client.get(f"/releases/{CODE}/texts/").content.decode()
    assert f'value="{held_slug}"' in staff_page and "held back" not in staff_page
    client.logout()
    arena_close(release=half, user=publisher, reason="No arena for this release after all.")
    page = client.get(f"/releases/{CODE}/texts/").content.decode()
    assert f'value="{held_slug}"' in page and "held back" not in page


@pytest.mark.django_db
def test_the_model_filter_leaves_out_writers_whose_texts_are_all_held_and_says_how_many(
        release, client, publisher):
    """The Model filter listed every writer even when the arena held all their texts
    (choosing one was a 400, as for a held scenario): it lists writers with a text to show,
    and one sentence says how many are held back, naming none; once the arena closes every
    writer is listed again."""
    whole = published_arena_release("whole.0", held_share=1.0)
    note = (f"The texts of {len(WRITERS)} models are held back from the public pages, so the "
            f"Model filter leaves them out.")

    def model_options(page: str) -> str:
        return re.search(r'<select name="model">(.*?)</select>', page, re.S).group(1)

    page = html.unescape(client.get("/releases/whole.0/texts/").content.decode())
    assert not any(f'value="{writer}"' in model_options(page) for writer in WRITERS)
    assert note in page
    client.force_login(publisher)
    staff_page = client.get("/releases/whole.0/texts/").content.decode()
    assert all(f'value="{writer}"' in model_options(staff_page) for writer in WRITERS)
    assert "held back" not in staff_page
    client.logout()
    arena_close(release=whole, user=publisher, reason="No arena for this release after all.")
    page = client.get("/releases/whole.0/texts/").content.decode()
    assert all(f'value="{writer}"' in model_options(page) for writer in WRITERS)
    assert "held back" not in page


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


@pytest.mark.django_db
def test_no_held_text_has_a_near_copy_among_the_public_texts(half):
    """A near-copy (a writer's same facts under another condition, a word or two apart) names
    the writer as surely as the same words: every held text shares under half of its runs of
    five words with any public text. Held cell by cell, each had a twin above 0.9. Refusals
    are left out: a refusal is the same two sentences whatever the scenario."""
    snapshot = load_snapshot(half.publication)
    held = held_cells(snapshot, Holder.ARENA)
    bodies = dict(Generation.objects.filter(release=half).values_list("pk", "text"))
    inside = [text.id for text in snapshot.texts
              if text_cell(text) in held and text.refusal != "refused"]
    outside = [text.id for text in snapshot.texts
               if text_cell(text) not in held and text.visibility == "public"]
    assert inside and outside
    nearest = max(near_copy_share(bodies[a], bodies[b]) for a in inside for b in outside)
    assert nearest < NEAR_COPY_SHARE, nearest


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["operator", "curator", "auditor"])
def test_staff_who_do_not_publish_see_no_held_text_with_its_writer(half, client, publisher,
                                                                   role):
    """Only publishers may know the writers of blind pairs: an operator, curator or auditor
    reaches a held text nowhere (pages, filters by writer, API, CSV, archives, the generation
    admin), as an anonymous visitor does not, until the arena closes."""
    snapshot = load_snapshot(half.publication)
    held = held_cells(snapshot, Holder.ARENA)
    texts = [text for text in snapshot.texts if text.visibility == "public"]
    held_ids = {text.id for text in texts if text_cell(text) in held}
    writer = next(text for text in texts if text.id in held_ids).model
    client.force_login(staff_user(f"{role}-1", role))

    assert not public_text_ids(client, CODE) & held_ids
    for text_id in held_ids:
        assert client.get(f"/releases/{CODE}/texts/{text_id}/").status_code == 404
    listed = client.get(f"/releases/{CODE}/texts/", {"model": writer}).content.decode()
    assert not any(f"/texts/{text_id}/" in listed for text_id in held_ids)
    assert client.get(f"/releases/{CODE}/archive-staff.zip").status_code == 404
    assert "archive-staff.zip" not in client.get(f"/releases/{CODE}/").content.decode()
    if role == "operator":
        page = client.get("/admin/runs_app/generation/", {"release__id__exact": half.pk})
        shown = {int(pk) for pk in re.findall(r"/admin/runs_app/generation/(\d+)/change/",
                                              page.content.decode())}
        assert shown and not shown & held_ids
        assert client.get(f"/admin/runs_app/generation/{min(held_ids)}/change/"
                          ).status_code == 302, "a held text's admin page is not found"

    client.force_login(publisher)
    assert client.get(f"/releases/{CODE}/texts/{min(held_ids)}/").status_code == 200
    staff_zip = client.get(f"/releases/{CODE}/archive-staff.zip")
    assert staff_zip.status_code == 200
    assert "archive-staff.zip" in client.get(f"/releases/{CODE}/").content.decode()

    arena_close(release=half, user=publisher, reason="Pilot over.")
    client.force_login(staff_user(f"{role}-2", role))
    assert client.get(f"/releases/{CODE}/texts/{min(held_ids)}/").status_code == 200
    assert client.get(f"/releases/{CODE}/archive-staff.zip").status_code == 200


def _refusals_on_record(found: dict[str, set[int]]) -> Callable[[Release], None]:
    """A `before_publish` recording refusals its scores do not carry: the refusal check's
    verdict "refused" on every refuser text of the first held scenario, and a refusal the
    provider reported for one advocate text there (scores unchanged, "complied")."""
    from audits_app.publication.held_cells import held_cells_draw

    def change(release: Release) -> None:
        (slug, *_), *_ = held_cells_draw(release.parsed_config(), PUBLIC)[Holder.ARENA]
        texts = Generation.objects.filter(release=release,
                                          scenario_version__scenario__slug=slug)
        refuser = list(texts.filter(model__openrouter_id="fixture/refuser"))
        RefusalCheck.objects.bulk_create(
            RefusalCheck(release=release, generation=text, status=WorkStatus.DONE,
                         verdict=RefusalCheck.Verdict.REFUSED, reason="declines the brief")
            for text in refuser)
        advocate = texts.filter(model__openrouter_id="fixture/advocate").first()
        Generation.objects.filter(pk=advocate.pk).update(writer_refusal="I can't help.")
        found["refused"] = {text.pk for text in refuser} | {advocate.pk}

    return change


@pytest.mark.django_db
def test_no_pair_holds_a_text_a_refusal_stands_against(release, publisher):
    """A refusal is the same sentences on every scenario: whoever saw one knows its writer.
    The catalogue leaves out a text whose stored refusal check or provider says refused,
    even where its score says it complied."""
    found: dict[str, set[int]] = {}
    refusing = published_arena_release(CODE, held_share=0.5,
                                       before_publish=_refusals_on_record(found))
    snapshot = load_snapshot(refusing.publication)
    scored_complied = {text.id for text in snapshot.texts if text.refusal == "complied"}
    assert len(found["refused"] & scored_complied) >= 4, "refusals the scores let through"

    approve(refusing, publisher)
    arena_open(release=refusing, user=publisher, reason="Approved; pilot week.")
    pairs = ArenaPair.objects.filter(release=refusing)
    paired = set(pairs.values_list("generation_a", flat=True)) | set(
        pairs.values_list("generation_b", flat=True))
    assert paired, "the other held texts are paired"
    assert not paired & found["refused"]


def _copies_of(source: Release, copied: dict[str, int]) -> Callable[[Release], None]:
    """A `before_publish` for a second release of the same writers: its texts on the scenario
    `source` holds for the arena are other words, but for two of the spinner's texts `source`
    holds (their ids go into `copied`): one word for word, one a word apart (a near-copy)."""
    def change(release: Release) -> None:
        held = held_cells(load_snapshot(source.publication), Holder.ARENA)
        (slug,) = {cell[0] for cell in held}
        mine = Generation.objects.filter(release=release, scenario_version__scenario__slug=slug)
        theirs = {(g.model_id, g.task, g.condition, g.variant): g for g in Generation.objects
                  .filter(release=source, scenario_version__scenario__slug=slug)}
        for generation in mine.order_by("pk"):
            twin = theirs[(generation.model_id, generation.task, generation.condition,
                           generation.variant)]
            if generation.model.openrouter_id == "fixture/spinner" and \
                    generation.condition in ("C0", "C1"):
                near = generation.condition == "C1"
                words = twin.text.split()
                text = " ".join(["Notably,", *words[1:]]) if near else twin.text
                copied["near" if near else "same"] = twin.pk
            else:
                text = f"Another release's words on {slug}, number {generation.pk}."
            Generation.objects.filter(pk=generation.pk).update(text=text)

    return change


@pytest.mark.django_db
def test_held_texts_made_public_by_another_release_are_never_shown_and_the_publish_page_warns(
        half, client, publisher):
    """A second release of the same writers can make a held text public word for word, or a
    word apart: its publish page says so first, and afterwards the arena never shows a pair
    holding such a text (its catalogue was built before), nor pairs one when prepared."""
    approve(half, publisher)
    arena_open(release=half, user=publisher, reason="Approved; pilot week.")
    pairs = ArenaPair.objects.filter(release=half)
    copied: dict[str, int] = {}
    second = published_arena_release("copy.0", held_share=0.0, publish=False,
                                     before_publish=_copies_of(half, copied))
    assert set(copied) == {"same", "near"}
    # What the measure finds, text by text: a writer's texts on one scenario are near-copies
    # of each other, so a copy names more held texts than itself.
    held = held_cells(load_snapshot(half.publication), Holder.ARENA)
    held_texts = {pk: body for pk, body, *cell in Generation.objects.filter(release=half)
                  .values_list("pk", "text", "scenario_version__scenario__slug", "task",
                               "condition", "variant") if tuple(cell) in held}
    (slug,) = {cell[0] for cell in held}
    public = Generation.objects.filter(release=second, scenario_version__scenario__slug=slug
                                       ).values_list("text", flat=True)
    expected = {pk for pk, body in held_texts.items()
                if any(near_copy_share(body, other) >= NEAR_COPY_SHARE for other in public)}
    assert set(copied.values()) <= expected < set(held_texts)
    with_copy = {pk for pk, a, b in pairs.values_list("pk", "generation_a", "generation_b")
                 if {a, b} & expected}
    assert with_copy, "they were paired before the second release"

    client.force_login(publisher)
    page = client.get(f"/releases/{second.code}/publish/").content.decode()
    assert f'<span data-release="half.0">{len(expected)} of half.0</span>' in page
    release_publish(release=second)

    voter = voter_create()
    shown = set()
    while (showing := showing_create(release=half, voter=voter, background=False)) is not None:
        shown.add(showing.pair_id)
    assert shown == set(pairs.values_list("pk", flat=True)) - with_copy
    assert findable_elsewhere(load_snapshot(half.publication), Holder.ARENA) == expected


def _all_copies_of(source: Release) -> Callable[[Release], None]:
    """A `before_publish` for a second release of the same writers that shows every text
    `source` holds for the arena word for word."""
    def change(release: Release) -> None:
        held = held_cells(load_snapshot(source.publication), Holder.ARENA)
        theirs = {(g.scenario_version.scenario.slug, g.model_id, g.task, g.condition,
                   g.variant): g.text
                  for g in Generation.objects.filter(release=source).select_related(
                      "scenario_version__scenario")}
        for generation in Generation.objects.filter(release=release).select_related(
                "scenario_version__scenario"):
            slug = generation.scenario_version.scenario.slug
            if (slug, generation.task, generation.condition, generation.variant) in held:
                Generation.objects.filter(pk=generation.pk).update(text=theirs[(
                    slug, generation.model_id, generation.task, generation.condition,
                    generation.variant)])

    return change


@pytest.mark.django_db
def test_an_arena_whose_every_pair_was_made_public_elsewhere_invites_nobody(
        half, client, publisher, monkeypatch):
    """Another release showing every held text leaves no pair to show: the arena's page says
    there is nothing to vote on (no consent, no Start), consenting anyway makes no voter, and
    the manage page says no pairs remain and why."""
    monkeypatch.setattr(selectors, "SHOWN_REFRESH_SECONDS", 0.0)  # no wait for the refresh
    approve(half, publisher)
    arena_open(release=half, user=publisher, reason="Approved; pilot week.")
    pairs = ArenaPair.objects.filter(release=half).count()
    page = client.get(f"/arena/{CODE}/").content.decode()
    assert ">Start</button>" in page and "nothing to vote on" not in page
    early = Client()  # consented before, has seen no pair yet
    early.post(f"/arena/{CODE}/consent/", {"agree": "on"})
    published_arena_release("copy.0", held_share=0.0, before_publish=_all_copies_of(half))
    page = client.get(f"/arena/{CODE}/").content.decode()
    assert "nothing to vote on" in page and ">Start</button>" not in page
    assert 'name="agree"' not in page and "<strong>open</strong>" not in page
    refused = client.post(f"/arena/{CODE}/consent/", {"agree": "on"})
    assert refused.status_code == 400 and "nothing to vote on" in refused.content.decode()
    assert ArenaVoter.objects.count() == 1  # the early one's only
    told = early.get(f"/arena/{CODE}/pair/").content.decode()
    assert "There is nothing to vote on now" in told and "You have seen every pair" not in told
    assert showing_create(release=half, voter=voter_create(), background=False) is None
    client.force_login(publisher)
    manage = client.get(f"/arena/{CODE}/manage/").content.decode()
    left_out = arena_counts(half)["left_out"]
    assert pairs > 0 and left_out > 0
    assert f"No pairs remain to vote on: all {pairs} pairs hold a text" in manage
    assert f"({left_out} held texts left out of pairs" in manage
