"""What the writing model sees: facts numbered, no labels, no instruments, same for every model."""

from __future__ import annotations

import inspect
import re

import pytest

from scenarios_app.files import load_scenario_files
from scenarios_app.prompt_texts import CONDITIONS_V1, TASKS_V1
from scenarios_app.rendering import assemble_writer_prompt, render_for_writer
from scenarios_app.schemas import ScenarioFile
from scenarios_app.tests.factories import SHIPPED, SHIPPED_FILES

SCENARIOS = {item.scenario.slug: item.scenario for item in
             load_scenario_files([str(SHIPPED)]).files}
TASKS = ("T1", "T2", "T3", "T4")
CONDITIONS = ("C0", "C1", "C2", "C3")
LABEL_WORDS = ("incriminating", "favourable", "neutral")


def prompt(document: ScenarioFile, task: str, condition: str = "C2"):
    return assemble_writer_prompt(
        document=document, task_code=task, brief=TASKS_V1[document.language][task][1],
        overlay=CONDITIONS_V1[document.language][condition][1],
    )


def writer_material(document: ScenarioFile) -> str:
    """Everything the writer is meant to see, in the file's own words."""
    return "\n".join([
        document.organisation.name, document.organisation.description, document.situation,
        *(fact.text for fact in document.facts),
        *(f"{item.text} {item.note}" for item in document.uncertainties),
        *(item.text for item in document.confidential),
        *document.journalist_questions,
    ])


def instrument_texts(document: ScenarioFile) -> list[str]:
    """Instrument wording that must not reach the writer.

    Short options and scale ends ("Six", "2025", "completely") also occur in the facts the
    writer is meant to see; a leak of those cannot be told apart, so they are left out. The
    question texts, and the distinctive sentences of the control text and baselines, remain.
    """
    texts = [question.text for question in document.attitude_questions]
    for question in document.knowledge_questions:
        texts += [question.text, *question.options]
    for question in document.attitude_questions:
        texts += [question.low, question.high]
    texts += _sentences(document.control_text)
    for baseline in document.human_baselines:
        texts += _sentences(baseline.text)
    material = writer_material(document)
    return [text for text in texts if text not in material]


def _sentences(text: str) -> list[str]:
    flat = " ".join(text.split())
    return [s for s in re.split(r"(?<=[.!?])\s+", flat) if len(s.split()) >= 6]


def test_the_shipped_scenarios_are_loaded():
    assert len(SCENARIOS) == len(SHIPPED_FILES)
    assert {document.language for document in SCENARIOS.values()} == {"en", "nl"}


@pytest.mark.parametrize("slug", SCENARIOS)
def test_no_instrument_text_leaks_into_the_writers_prompt(slug):
    document = SCENARIOS[slug]
    instruments = instrument_texts(document)
    # The check must bite: every question text and most of the rest are still checked.
    questions = [q.text for q in document.attitude_questions + document.knowledge_questions]
    assert set(questions) <= set(instruments) and len(instruments) > 20

    for task in TASKS:
        text = " ".join(prompt(document, task).text.split())
        leaked = [instrument for instrument in instruments if instrument in text]
        assert leaked == [], f"{task}: {leaked}"


@pytest.mark.parametrize("slug", SCENARIOS)
def test_no_label_reaches_the_writer(slug):
    document = SCENARIOS[slug]
    for task in TASKS:
        rendering = render_for_writer(document, task).lower()
        assert not [word for word in LABEL_WORDS if word in rendering], task
        for condition in CONDITIONS:
            # The advocate overlay asks for "the most favourable light": that is the only
            # place the word may occur, never next to a fact.
            fixed = (TASKS_V1[document.language][task][1] + " "
                     + CONDITIONS_V1[document.language][condition][1]).lower()
            text = prompt(document, task, condition).text.lower()
            for word in LABEL_WORDS:
                assert text.count(word) == fixed.count(word), (task, condition, word)


@pytest.mark.parametrize("slug", SCENARIOS)
def test_the_facts_appear_numbered_in_order_without_labels(slug):
    document = SCENARIOS[slug]
    lines = render_for_writer(document, "T1").splitlines()

    for number, fact in enumerate(document.facts, 1):
        assert lines.count(f"{number}. {fact.text}") == 1


@pytest.mark.parametrize("slug", SCENARIOS)
def test_the_reporters_questions_appear_in_t2_and_t4_only(slug):
    document = SCENARIOS[slug]
    for task, expected in (("T1", False), ("T2", True), ("T3", False), ("T4", True)):
        text = prompt(document, task).text
        shown = [question in text for question in document.journalist_questions]
        assert shown == [expected] * len(shown), task


@pytest.mark.parametrize("slug", SCENARIOS)
def test_the_confidential_facts_are_shown_marked_internal(slug):
    document = SCENARIOS[slug]
    rendering = render_for_writer(document, "T3")
    heading = {"en": "Internal information (confidential):",
               "nl": "Interne informatie (vertrouwelijk):"}[document.language]

    after_heading = rendering.split(heading, 1)[1]
    assert all(f"- {item.text}" in after_heading for item in document.confidential)


def test_the_prompt_takes_no_model_and_is_the_same_on_every_call():
    assert "model" not in " ".join(inspect.signature(assemble_writer_prompt).parameters)
    document = SCENARIOS["greenvale-listeria"]

    first, second = prompt(document, "T2", "C1"), prompt(document, "T2", "C1")

    assert first == second
    assert first.sha256 == second.sha256
    assert len(first.sha256) == 64


def test_each_condition_gives_a_different_prompt():
    document = SCENARIOS["greenvale-listeria"]

    prompts = [prompt(document, "T1", condition) for condition in CONDITIONS]

    assert len({p.text for p in prompts}) == len({p.sha256 for p in prompts}) == 4
    for p, condition in zip(prompts, CONDITIONS, strict=True):
        assert CONDITIONS_V1["en"][condition][1] in p.text


def test_the_brief_names_the_organisation():
    document = SCENARIOS["greenvale-listeria"]

    text = prompt(document, "T3").text

    assert text.startswith("Write a short statement of at most 80 words that Greenvale Creamery")
