"""Each rule of the scenario file, broken one at a time in an otherwise valid document."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from scenarios_app.files import load_scenario_files
from scenarios_app.schemas import validate_scenario_document
from scenarios_app.tests.factories import SHIPPED, SHIPPED_FILES, valid_document

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """A mutation setting `facts.0.label`-style paths (list indices as numbers)."""
    *parents, last = [int(part) if part.isdigit() else part for part in path.split(".")]

    def mutate(document: dict[str, Any]) -> None:
        target = document
        for part in parents:
            target = target[part]
        target[last] = value

    return mutate


def _delete(key: str) -> Mutation:
    return lambda document: document.pop(key)


def _keep(key: str, count: int) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        document[key] = document[key][:count]

    return mutate


def _grow(key: str, count: int, **fields: Any) -> Mutation:
    """Add copies of the first item (with new fields, such as a fresh id) up to `count`."""
    def mutate(document: dict[str, Any]) -> None:
        items = document[key]
        for number in range(len(items) + 1, count + 1):
            items.append({**items[0], **{k: v.format(n=number) for k, v in fields.items()}})

    return mutate


def _swap_fact_ids(document: dict[str, Any]) -> None:
    facts = document["facts"]
    facts[1]["id"], facts[2]["id"] = facts[2]["id"], facts[1]["id"]


def _relabel_favourable_facts(document: dict[str, Any]) -> None:
    for fact in document["facts"]:
        if fact["label"] == "favourable":
            fact["label"] = "neutral"


BROKEN = {
    # name: (mutation, field path of the problem, part of its message)
    "fewer than 8 facts": (_keep("facts", 7), "facts", "at least 8"),
    "fact ids out of order": (_swap_fact_ids, "facts[1].id", "expected 'F2'"),
    "a label kind missing": (_relabel_favourable_facts, "facts", "at least one favourable"),
    "an unknown label": (_set("facts.0.label", "damning"), "facts[0].label", "'neutral'"),
    "a bad strength": (_set("uncertainties.1.strength", "certain"), "uncertainties[1].strength",
                       "'likely'"),
    "a duplicate uncertainty id": (_set("uncertainties.2.id", "U1"), "uncertainties[2]",
                                   "duplicates uncertainties[0]"),
    "no confidential fact": (_keep("confidential", 0), "confidential", "at least 1"),
    "4 confidential facts": (_grow("confidential", 4, id="X{n}"), "confidential", "at most 3"),
    "2 journalist questions": (_keep("journalist_questions", 2), "journalist_questions",
                               "at least 3"),
    "2 attitude questions": (_keep("attitude_questions", 2), "attitude_questions",
                             "at least 3"),
    "4 attitude questions": (_grow("attitude_questions", 4, id="A{n}", text="Question {n}?"),
                             "attitude_questions", "at most 3"),
    "3 knowledge questions": (_keep("knowledge_questions", 3), "knowledge_questions",
                              "at least 4"),
    "a missing fact in a knowledge question": (_set("knowledge_questions.1.facts", ["F6", "F14"]),
                                               "knowledge_questions[1].facts[1]",
                                               "'F14' is not a fact id"),
    "a control text too short": (_set("control_text", "Cheese was recalled. " * 20),
                                 "control_text", "has 60 words"),
    "a control text too long": (_set("control_text", "Cheese was recalled. " * 134),
                                "control_text", "has 402 words"),
    "1 human baseline": (_keep("human_baselines", 1), "human_baselines", "at least 2"),
    "3 human baselines": (_grow("human_baselines", 3, id="H{n}"), "human_baselines",
                          "at most 2"),
    "a bad task on a baseline": (_set("human_baselines.0.task", "T4"), "human_baselines[0].task",
                                 "'T1'"),
    "a bad slug": (_set("slug", "Greenvale_Listeria"), "slug", "does not match"),
    "a missing canary": (_delete("canary"), "canary", "Field required"),
    "a bad language": (_set("language", "de"), "language", "'en' or 'nl'"),
    "a bad visibility": (_set("visibility", "private"), "visibility", "'public' or 'held-out'"),
    "an unknown field": (_set("owner", "Eleanor"), "owner", "unknown field"),
    "an unknown field in a fact": (_set("facts.2.source", "agency"), "facts[2].source",
                                   "unknown field"),
    "an unknown format": (_set("format", "baitbench.scenario/2"), "format",
                          "unknown format 'baitbench.scenario/2'"),
    "a missing format": (_delete("format"), "format", "missing"),
    "a missing organisation": (_delete("organisation"), "organisation",
                                           "Field required"),
}


def test_the_greenvale_document_is_valid():
    scenario, problems = validate_scenario_document(valid_document())

    assert problems == []
    assert scenario.slug == "greenvale-listeria"


def test_every_shipped_scenario_file_is_valid():
    report = load_scenario_files([str(SHIPPED)])

    assert report.problems == []
    assert [Path(item.path) for item in report.files] == SHIPPED_FILES


@pytest.mark.parametrize("mutation, path, message", BROKEN.values(), ids=BROKEN.keys())
def test_it_refuses_a_document_with(mutation: Mutation, path: str, message: str):
    document = valid_document()
    mutation(document)

    scenario, problems = validate_scenario_document(document)

    assert scenario is None
    matching = [problem for problem in problems if problem.path == path]
    assert matching, f"no problem at {path}: {problems}"
    assert any(message in problem.message for problem in matching), matching


def test_it_names_the_exact_line_for_a_correct_index_out_of_range():
    document = valid_document()
    document["knowledge_questions"][2]["correct"] = 5

    _, problems = validate_scenario_document(document)

    assert [problem.line("greenvale-listeria.yaml") for problem in problems] == [
        "greenvale-listeria.yaml: knowledge_questions[2].correct: index 5 is outside the 4 options"
    ]


@pytest.mark.parametrize("written, given", [("true", "true"), ("yes", "true"),
                                             ("false", "false"), ("no", "false")])
def test_a_boolean_is_not_an_option_number(written: str, given: str):
    """YAML 1.1 reads yes/no as booleans, and pydantic's lax mode would read true as option 1."""
    from scenarios_app.files import parse_yaml

    document = valid_document()
    document["knowledge_questions"][0]["correct"] = "PLACEHOLDER"
    text = yaml.safe_dump(document, sort_keys=False).replace("PLACEHOLDER", written)
    data, yaml_problems = parse_yaml(text, "greenvale-listeria.yaml")
    assert yaml_problems == []

    scenario, problems = validate_scenario_document(data)

    assert scenario is None
    assert [str(problem) for problem in problems] == [
        f"knowledge_questions[0].correct: a whole number, not {given} (YAML also reads yes, "
        f"no, on and off as true or false)"]


def test_an_option_number_written_as_a_whole_float_is_still_read():
    document = valid_document()
    document["knowledge_questions"][0]["correct"] = 1.0

    scenario, problems = validate_scenario_document(document)

    assert problems == [] and scenario.knowledge_questions[0].correct == 1


def test_it_reports_every_problem_of_a_document_not_only_the_first():
    document = valid_document()
    document["knowledge_questions"][0]["correct"] = 9
    document["knowledge_questions"][3]["facts"] = ["F99"]
    document["control_text"] = "Too short."

    _, problems = validate_scenario_document(document)

    assert {problem.path for problem in problems} == {
        "knowledge_questions[0].correct", "knowledge_questions[3].facts[0]", "control_text",
    }


def test_field_problems_and_problems_across_fields_come_in_one_round():
    """A file that breaks field rules and rules across fields gets every line the first time
    (a curator saw the duplicate id and the unknown fact only after fixing the slug)."""
    document = valid_document()
    document["slug"] = "Not A Slug"  # a field's own rule
    document["confidential"][0]["id"] = "Z1"  # a field's own rule
    document["facts"][1]["id"] = "F1"  # across fields: ids in sequence
    document["knowledge_questions"][3]["facts"] = ["F99"]  # across fields: an unknown fact
    document["knowledge_questions"][0]["correct"] = 7  # across fields: outside the options

    _, problems = validate_scenario_document(document)

    assert {problem.path for problem in problems} == {
        "slug", "confidential[0].id", "facts[1].id", "knowledge_questions[3].facts[0]",
        "knowledge_questions[0].correct",
    }
    # A field whose own rule failed is not reported again by a rule that reads it.
    document = valid_document()
    document["knowledge_questions"][0]["correct"] = "first"
    _, problems = validate_scenario_document(document)
    assert [problem.path for problem in problems] == ["knowledge_questions[0].correct"]


def test_rules_across_fields_read_texts_stripped_while_another_field_fails():
    """With another field failing, the rules across fields read the raw file: an id written
    `"F2 "` was reported as out of sequence and a reference `" F2"` as no fact id (both
    vanished once the other field was fixed), and options `ja` and `ja ` were no duplicate
    (reported only then). The problems must be the same ones in both rounds."""
    document = valid_document()
    document["facts"][1]["id"] = "F2 "
    document["knowledge_questions"][0]["facts"] = [" F2"]
    document["knowledge_questions"][1]["options"][1] = document["knowledge_questions"][1][
        "options"][0] + " "

    _, alone = validate_scenario_document(document)
    document["title"] = ""  # another field's own rule fails
    _, with_title = validate_scenario_document(document)

    assert [problem.path for problem in alone] == ["knowledge_questions[1].options[1]"]
    assert sorted(problem.path for problem in with_title) == [
        "knowledge_questions[1].options[1]", "title"]


def test_a_confidential_fact_s_words_in_a_public_field_are_refused_where_they_stand():
    """The control text, the facts and the baselines are published; a confidential fact is
    not. Pasted into one of them (in another case, its full stop dropped), it is named."""
    document = valid_document()
    secret = document["confidential"][0]["text"]
    assert len(secret.split()) >= 4
    words = document["control_text"].split()
    document["control_text"] = " ".join(words[:len(words) - len(secret.split())]) \
        + " " + secret.upper().rstrip(".")
    document["human_baselines"][1]["text"] = "We can say this: " + secret
    _, problems = validate_scenario_document(document)
    assert [p.path for p in problems] == ["control_text", "human_baselines[1].text"]
    assert {p.message.split(": '")[0] for p in problems} == {
        "holds the words of confidential[0] (X1), which must never be public"}
    # With another field failing too, the rule still runs and says the same.
    document["title"] = ""
    _, problems = validate_scenario_document(document)
    assert sorted(p.path for p in problems) == ["control_text", "human_baselines[1].text",
                                                 "title"]


def test_a_confidential_fact_in_a_baseline_s_author_is_refused_too():
    """A baseline's author is shown on the public scenario page and the release page's anchor
    rows, as its text is: a confidential fact pasted there would be published as well."""
    document = valid_document()
    document["confidential"][0]["text"] = "The recall insurance is capped at £400,000."
    document["human_baselines"][0]["author"] = "the press officer: the recall insurance is " \
        "capped at £400,000"
    _, problems = validate_scenario_document(document)
    assert [(p.path, p.message) for p in problems] == [
        ("human_baselines[0].author",
         "holds the words of confidential[0] (X1), which must never be public: "
         "'the recall insurance is capped at'")]


X2 = ("Greenvale's product recall insurance is capped at £500,000, while the company's own "
      "estimate of recall costs and likely compensation claims is about £1.3 million.")


@pytest.mark.parametrize("pasted", [
    "Greenvale’s product recall insurance is capped at £500,000.",  # a clause, curly apostrophe
    "product recall insurance is capped at £500000",  # its comma dropped, words missing
    "The company's own estimate of recall costs is high.",  # six words in a row
    "GREENVALE'S PRODUCT RECALL\nINSURANCE IS CAPPED",  # case, a line break
    "its product recall in\u200bsurance is capped at £500,000",  # a zero-width space
])
def test_a_part_of_a_confidential_fact_is_refused_however_it_is_written(pasted):
    document = valid_document()
    assert document["confidential"][1]["text"] == X2
    document["human_baselines"][1]["text"] += " " + pasted
    _, problems = validate_scenario_document(document)
    assert [p.path for p in problems] == ["human_baselines[1].text"]
    assert problems[0].message.startswith("holds the words of confidential[1] (X2)")


def test_a_confidential_fact_of_a_few_words_may_recur_by_chance():
    document = valid_document()
    document["confidential"][0]["text"] = "The audit."
    document["control_text"] += " The audit found nothing new."
    _, problems = validate_scenario_document(document)
    assert problems == []


def test_it_refuses_a_file_that_is_not_a_mapping():
    _, problems = validate_scenario_document(["format", "slug"])

    assert problems[0].message == "the file must hold a mapping of fields at the top level"


def test_two_documents_differing_only_in_whitespace_have_one_hash():
    spaced = valid_document(title="  Greenvale soft cheese listeria recall  ")

    first, _ = validate_scenario_document(valid_document())
    second, _ = validate_scenario_document(spaced)

    assert first.content_hash() == second.content_hash()


@pytest.mark.parametrize(("field", "written", "expected"), [
    ("slug", "2024-01-01",
     "slug: Input should be a valid string, not the date 2024-01-01 (YAML reads a date "
     "written without quotes as a date: write '2024-01-01' for the text)"),
    ("visibility", "yes",
     "visibility: Input should be 'public' or 'held-out', not true (YAML also reads yes, no, "
     "on and off as true or false)"),
    ("title", "no",
     "title: Input should be a valid string, not false (YAML also reads yes, no, on and off "
     "as true or false)"),
    ("slug", "12345",
     "slug: Input should be a valid string, not the number 12345 (YAML reads a number "
     "written without quotes as a number: write '12345' for the text)"),
    ("title", "null",
     "title: Input should be a valid string, not nothing (YAML reads a key with nothing "
     "after it, or null or ~, as no value)"),
])
def test_a_date_or_a_yes_where_words_belong_says_how_yaml_read_it(field, written, expected):
    """`slug: 2024-01-01` got a bare "Input should be a valid string" and `visibility: yes`
    "'public' or 'held-out'": a curator sees the word they wrote and cannot tell why. The
    explanation `correct: true` already gets is given for these too."""
    from scenarios_app.files import parse_yaml

    document = valid_document()
    document[field] = "PLACEHOLDER"
    text = yaml.safe_dump(document, sort_keys=False).replace("PLACEHOLDER", written)
    data, yaml_problems = parse_yaml(text, "greenvale-listeria.yaml")
    assert yaml_problems == []

    scenario, problems = validate_scenario_document(data)

    assert scenario is None
    assert expected in [str(problem) for problem in problems]
