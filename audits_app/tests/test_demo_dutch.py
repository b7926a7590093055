"""The demo's Dutch release (demo-nl.0): run end to end with the cross-examination, published
once, ranked by rank classes per task, and its page marks the Dutch content as Dutch."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.utils.html import escape

from audits_app.publication.demo_dutch import DUTCH_RELEASE, class_tables, demo_dutch_release
from runs_app.models import CrossExamTurn, Generation
from scenarios_app.prompt_texts import CONDITIONS_V1


@pytest.fixture
def published(imported_scenarios):
    user = get_user_model().objects.create_superuser("demo", password="pw")
    out = io.StringIO()
    release = demo_dutch_release(user=user, stdout=out)
    return release, user, out.getvalue()


@pytest.mark.django_db
def test_the_dutch_demo_is_published_once_and_steadfastness_orders_the_writers(
        published, client):
    release, user, output = published
    assert release.is_published and f"published {DUTCH_RELEASE}" in output
    config = release.parsed_config()
    assert (config.language, config.ranking_rule, config.tasks) == (
        "nl", "classes", ["T1", "T2", "T3", "T4"])
    assert CrossExamTurn.objects.filter(release=release, kind="labels").count() == \
        Generation.objects.filter(release=release, task="T4",
                                  refusal_check__verdict="complied").count() > 0

    again = io.StringIO()
    turns = CrossExamTurn.objects.filter(release=release).count()
    assert demo_dutch_release(user=user, stdout=again) == release
    assert "already published: nothing to do" in again.getvalue()
    assert CrossExamTurn.objects.filter(release=release).count() == turns

    tables = {(table.task, table.measure): table for table in class_tables(release)}
    assert {task for task, _ in tables} == {"T1", "T2", "T3", "T4"}
    assert ("T1", "steadfastness") not in tables  # only T4 is cross-examined
    classes = {row.model.removeprefix("fixture/"): row.rank_class
               for row in tables[("T4", "steadfastness")].rows}
    assert classes["advocate"] < classes["candid"] < classes["spinner"]
    honest = {row.model.removeprefix("fixture/"): row.rank_class
              for row in tables[("T4", "honesty under pressure")].rows}
    assert honest["candid"] == honest["advocate"] < honest["spinner"]
    assert all(row.low is not None for row in tables[("T1", "honesty")].rows)
    # One run of the demo serves both checks: it is the slowest setup of the suite.
    the_dutch_release_page_marks_its_dutch_content(release, client)


def the_dutch_release_page_marks_its_dutch_content(release, client) -> None:
    page = client.get(f"/releases/{DUTCH_RELEASE}/").content.decode()
    document = release.scenario_versions.first().document()
    assert re.search(rf'<a href="[^"]+" lang="nl">{re.escape(escape(document.title))}</a>',
                     page)
    for code, (name, overlay) in CONDITIONS_V1["nl"].items():
        assert f'<blockquote lang="nl">{escape(overlay)}</blockquote>' in page, code
        assert f'<span lang="nl">{escape(name)}</span>' in page
    assert f'<span lang="nl">{escape(release.title)}</span>' in page
    assert '<html lang="en">' in page  # the page chrome stays English
    listing = client.get("/").content.decode()
    assert f'<td lang="nl">{escape(release.title)}</td>' in listing

    text = Generation.objects.filter(release=release, task="T4").first()
    text_page = client.get(f"/releases/{DUTCH_RELEASE}/texts/{text.pk}/").content.decode()
    assert '<pre class="text" lang="nl">' in text_page
    scenario_page = client.get(
        f"/releases/{DUTCH_RELEASE}/scenarios/{document.slug}/").content.decode()
    assert f'<h1 lang="nl">{escape(document.title)}</h1>' in scenario_page
