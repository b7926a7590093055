"""When every held text's words are public elsewhere, nothing can be shown blind: the arena's
publisher and a reading study's author are told that, not to prepare again nor that the
scenario is not held (the tryout's misleading messages)."""

from __future__ import annotations

import html
from collections.abc import Callable

import pytest

from audits_app.arena import tasks
from audits_app.arena.selectors import arena_texts
from audits_app.arena.tests.conftest import PUBLIC, approve, published_arena_release
from audits_app.calibration.studies import services as studies
from audits_app.calibration.studies.tests.conftest import plan
from audits_app.pages.viewer import load_snapshot
from audits_app.publication.held_cells import Holder, held_cells, text_cell
from runs_app.models import Generation, Release

pytestmark = pytest.mark.django_db


def _words_of(source: Release) -> Callable[[Release], None]:
    """A `before_publish` giving each text the words of `source`'s text of the same writer
    and cell: `source` shows them all, so every text held is public elsewhere."""
    def change(release: Release) -> None:
        def key(g: Generation) -> tuple:
            return (g.scenario_version.scenario.slug, g.model_id, g.task, g.condition,
                    g.variant)

        theirs = {key(g): g.text for g in Generation.objects.filter(
            release=source).select_related("scenario_version__scenario")}
        for generation in Generation.objects.filter(release=release).select_related(
                "scenario_version__scenario"):
            if key(generation) in theirs:
                Generation.objects.filter(pk=generation.pk).update(text=theirs[key(generation)])

    return change


def test_opening_an_arena_prepared_without_pairs_says_why(release, client, publisher):
    source = published_arena_release("shown.0", held_share=0.0)
    copied = published_arena_release("copied.0", held_share=1.0,
                                     before_publish=_words_of(source))
    snapshot = load_snapshot(copied.publication)
    held = held_cells(snapshot, Holder.ARENA)
    texts = [text for text in arena_texts(snapshot) if text_cell(text) in held]
    approve(copied, publisher)
    client.force_login(publisher)
    assert tasks.prepare_arena("copied.0", publisher.pk) == 0

    page = html.unescape(client.get("/arena/copied.0/manage/").content.decode())
    refused = client.post("/arena/copied.0/manage/", {"action": "open", "reason": "Ready"})
    said = html.unescape(refused.content.decode())
    assert refused.status_code == 400 and "prepare the arena first" not in said
    why = (f"of the {len(texts)} texts in the arena's held cells, every one of them has words "
           f"a public text outside the arena's cells also has (here or in another published "
           f"release), so a voter could find its writer by searching for them: none is left "
           f"to pair")
    assert f"the arena has no pairs to vote on: preparing ran and built none, because {why}" \
        in said
    assert f"Preparing ran and built no pairs, so the arena cannot open: {why}." in page


def test_a_release_holding_no_arena_cells_says_so_and_offers_no_preparing(release, client,
                                                                         publisher):
    """Preparing was offered and queued, then failed in the worker where nobody read why
    (found by the user re-check): the page says why at once, and a POST is refused with it."""
    published_arena_release("shown.0", held_share=0.0)
    client.force_login(publisher)
    why = ("release shown.0 holds no cells for an arena (`arena.held_share` is 0 in its "
           "file): every text of it is public, so no pair of them would be blind")
    page = html.unescape(client.get("/arena/shown.0/manage/").content.decode())
    assert f"There can be no arena: {why}." in page
    assert "Prepare the arena" not in page and "Open the arena" not in page
    refused = client.post("/arena/shown.0/manage/", {"action": "prepare"})
    assert refused.status_code == 400 and why in html.unescape(refused.content.decode())


def test_a_study_of_a_held_scenario_whose_texts_are_public_elsewhere_says_so(release):
    source = published_arena_release("shown.0", held_share=0.0)
    copied = published_arena_release("copied.0", held_share=0.0, study_share=1.0,
                                     before_publish=_words_of(source))
    problems = studies.study_plan_problems(release=copied, plan=plan(scenarios=[PUBLIC[0]]))
    assert not any("is not a public scenario" in problem for problem in problems)
    assert any(problem.startswith(f"scenarios: {PUBLIC[0]} is held for reading studies, but "
                                  f"every one of its ") and "has words that a public text "
               "outside those cells also has" in problem for problem in problems), problems


def test_a_study_names_each_other_reason_a_scenario_gives_no_text(release):
    half = published_arena_release("halfstudy.0", held_share=0.0, study_share=0.5)
    (held,) = {slug for slug, *_ in held_cells(load_snapshot(half.publication),
                                               Holder.READING_STUDIES)}
    (other,) = set(PUBLIC) - {held}
    problems = studies.study_plan_problems(
        release=half, plan=plan(scenarios=[held, other, "no-such-scenario"]))
    assert [problem for problem in problems if problem.startswith("scenarios:")] == [
        f"scenarios: {other} holds no cells for reading studies: halfstudy.0's "
        f"`reading_studies.held_share` drew other scenarios at publication, and only held "
        f"texts may be read",
        "scenarios: no-such-scenario is not a scenario of halfstudy.0"]
