"""A reader cannot look up the text they read (DESIGN section 10): a study gives only texts of
the cells its release holds for reading studies, and no public page, answer or archive shows
those texts, or their writers, until a publisher reveals them once no study is open."""

from __future__ import annotations

import pytest

from audits_app.arena.services import arena_close
from audits_app.arena.tests.conftest import (
    public_text_ids,
    published_arena_release,
    same_words_as_public,
)
from audits_app.calibration.studies import services
from audits_app.calibration.studies.tests.conftest import (
    plan,
    published_study_release,
    study_approve,
)
from audits_app.models import StudyStimulus
from audits_app.pages.viewer import load_snapshot
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from runs_app.models import Generation

CODE = "halfstudy.0"


@pytest.fixture
def half(scenarios_imported):
    """The named world with half of its public scenarios held for reading studies."""
    return published_study_release(CODE, study_share=0.5)


def public_texts(release) -> list[dict]:
    snapshot = load_snapshot(release.publication)
    return [text for text in snapshot.texts if text.visibility == "public"]


def held_ids(release) -> set[int]:
    held = held_cells(load_snapshot(release.publication), Holder.READING_STUDIES)
    return {text.id for text in public_texts(release) if text_cell(text) in held}


def studies_scenarios(release) -> list[str]:
    """The public scenarios held for reading studies: the only ones a study may give."""
    held = held_cells(load_snapshot(release.publication), Holder.READING_STUDIES)
    return sorted({slug for slug, *_ in held})


def pages_anyone_opens(client, text_ids: set[int]) -> list[str]:
    pages = [client.get(path).content.decode() for path in (
        f"/releases/{CODE}/", f"/releases/{CODE}/texts/", f"/releases/{CODE}/method/")]
    return pages + [client.get(f"/releases/{CODE}/texts/{text_id}/").content.decode()
                    for text_id in text_ids]


@pytest.mark.django_db
def test_no_public_path_leads_to_a_text_a_study_gives_until_the_publisher_reveals_them(
        half, client, publisher):
    study = services.study_create(release=half, user=publisher,
                                  plan=plan(scenarios=studies_scenarios(half)))
    given = set(StudyStimulus.objects.filter(study=study, kind=StudyStimulus.Kind.TEXT)
                .values_list("generation_id", flat=True))
    held = held_ids(half)
    open_ids = {text.id for text in public_texts(half)} - held
    assert given and open_ids
    assert given <= held, "a study gives only texts of the cells held for reading studies"

    assert public_text_ids(client, CODE) == open_ids
    for text_id in held:
        assert client.get(f"/releases/{CODE}/texts/{text_id}/").status_code == 404
    # Nor by the words: no held text's opening on any page anyone can open.
    pages = pages_anyone_opens(client, open_ids)
    # (Openings an open text shares are left out: the fixture's refusals open alike.)
    def openings(ids):
        return {" ".join(body.split()[:12])
                for body in Generation.objects.filter(pk__in=ids).values_list("text", flat=True)}
    held_openings = openings(held) - openings(open_ids)
    assert held_openings
    for opening in held_openings:
        assert not any(opening in page for page in pages)
    # Staff see every text, as before.
    client.force_login(publisher)
    assert client.get(f"/releases/{CODE}/texts/{min(given)}/").status_code == 200
    client.logout()

    study_approve(study, publisher)
    services.study_open(study=study, user=publisher)
    with pytest.raises(services.StudyError, match="is open: close it first"):
        services.study_texts_reveal(release=half, user=publisher, reason="Done.")
    services.study_close(study=study, user=publisher, reason="Enough readers.")
    assert public_text_ids(client, CODE) == open_ids, "closing a study reveals nothing"

    services.study_texts_reveal(release=half, user=publisher, reason="Studies over.")
    assert public_text_ids(client, CODE) == held | open_ids
    assert client.get(f"/releases/{CODE}/texts/{min(given)}/").status_code == 200
    # For good: texts that can be looked up never make a blind study again.
    with pytest.raises(services.StudyError, match="have been public since"):
        services.study_open(study=study, user=publisher)
    with pytest.raises(services.StudyError, match="have been public since"):
        services.study_create(release=half, user=publisher, plan=plan(title="Another"))
    with pytest.raises(services.StudyError, match="public already"):
        services.study_texts_reveal(release=half, user=publisher, reason="Again.")


@pytest.mark.django_db
def test_a_release_that_holds_no_cells_for_studies_can_have_no_study(scenarios_imported,
                                                                      publisher):
    none_held = published_study_release("open.0", study_share=0.0)
    assert "reading_studies" not in none_held.config, "stored as before the field existed"
    with pytest.raises(services.StudyError,
                       match=r"holds no cells for reading studies .* would read blind"):
        services.study_create(release=none_held, user=publisher, plan=plan())


@pytest.mark.django_db
def test_the_arena_and_reading_studies_hold_other_cells_and_reveal_them_apart(
        scenarios_imported, client, publisher):
    both = published_arena_release(CODE, held_share=0.5, study_share=0.5)
    snapshot = load_snapshot(both.publication)
    arena, studies = (held_cells(snapshot, holder) for holder in Holder)
    # Two public scenarios of four cells, one whole scenario for each: every cell held,
    # none by both.
    assert len(arena) == len(studies) == 4 and not arena & studies
    texts = public_texts(both)
    assert public_text_ids(client, CODE) == set()

    arena_close(release=both, user=publisher, reason="No arena for this release.")
    assert public_text_ids(client, CODE) == {
        text.id for text in texts if text_cell(text) in arena}
    services.study_texts_reveal(release=both, user=publisher, reason="No study either.")
    assert public_text_ids(client, CODE) == {text.id for text in texts}


@pytest.mark.django_db
def test_a_held_text_with_the_words_of_a_text_outside_the_studies_cells_is_never_given(
        scenarios_imported, client, publisher):
    """A reader could find its writer by searching for its words: no study gives it, it stays
    held with its cell (nothing public changes), and staff see how many were left out. The
    arena holds the other half of the cells: a text it holds counts as outside too, since it
    becomes public when the arena closes, perhaps while a study still needs its duplicate."""
    found: dict[str, int] = {}
    both = published_arena_release(
        CODE, held_share=0.5, study_share=0.5,
        before_publish=same_words_as_public(Holder.READING_STUDIES, found))
    snapshot = load_snapshot(both.publication)
    arena = held_cells(snapshot, Holder.ARENA)
    source = next(text for text in snapshot.texts if text.id == found["public"])
    assert text_cell(source) in arena, "in this world every cell is held: the arena has it"
    held = held_ids(both)
    assert found["held"] in held

    study = services.study_create(release=both, user=publisher,
                                  plan=plan(scenarios=studies_scenarios(both)))
    given = set(StudyStimulus.objects.filter(study=study, kind=StudyStimulus.Kind.TEXT)
                .values_list("generation_id", flat=True))
    assert given and given <= held - {found["held"]}
    assert services.study_texts_left_out(snapshot) == 1
    assert found["held"] not in public_text_ids(client, CODE)

    client.force_login(publisher)
    page = client.get(f"/studies/{study.pk}/progress/").content.decode()
    assert "left out of its stimuli" in page and ": 1." in page


@pytest.mark.django_db
def test_the_fixture_writers_leave_no_study_text_findable_by_its_words(half):
    assert services.study_texts_left_out(load_snapshot(half.publication)) == 0
