"""Every measure, task and condition is named from one place, in English and Dutch, and no
page shows an internal key."""

from __future__ import annotations

import re

import pytest

from audits_app.leaderboard import labels
from audits_app.leaderboard.measures import FIELD_LABELS, MEASURES
from audits_app.tests.factories import published_release_create
from runs_app.schemas import CONDITION_CODES, TASK_CODES

SNAKE_CASE = re.compile(r"\b[A-Za-z]+_[a-z_]+\b")


@pytest.mark.parametrize("language", labels.LANGUAGES)
def test_every_measure_task_and_condition_has_a_label_in_each_language(language):
    for measure in MEASURES:
        assert labels.MEASURES[measure.key][language], measure.key
        assert not SNAKE_CASE.search(labels.measure_label(measure.key, language))
        assert labels.link_label(measure.link_key, language) in (
            words[language] for words in labels.LINKS.values())
    for code in TASK_CODES:
        assert labels.task_label(code, language) != code
    for code in CONDITION_CODES:
        assert labels.condition_label(code, language) != code
    assert labels.task_label("T1", "nl") == "Persbericht"
    assert labels.condition_label("C2", "en") == "Damage control"


def test_the_measures_and_the_text_fields_read_their_words_from_the_labels():
    honesty = next(measure for measure in MEASURES if measure.key == "honesty")
    assert honesty.as_dict()["labels"] == {"en": "Honesty index", "nl": "Eerlijkheidsindex"}
    assert FIELD_LABELS["attitude_effect"] == labels.field_label("attitude_effect")
    assert set(labels.all_labels()["tasks"]) == set(TASK_CODES)
    assert labels.measure_label("some_new_measure") == "Some new measure"


@pytest.fixture
def world(db):
    return published_release_create(code="pub.0")


def test_the_model_page_heads_its_tables_with_the_measures_labels(client, world):
    html = client.get("/models/fixture/candid/").content.decode()
    headings = re.findall(r"<h2>(.*?)</h2>", html)
    assert "Attitude effect" in headings and "Gain over no text" in headings
    assert not [heading for heading in headings if "_" in heading], headings


def test_the_text_list_filters_name_tasks_and_conditions(client, world):
    html = client.get("/releases/pub.0/texts/").content.decode()
    assert "T1 · Press release" in html and "C2 · Damage control" in html
