"""The Dutch scenarios and prompts: valid files with their own canaries, problem lines that name
file and field, and the same words for every model with C3 = C1 + one Dutch sentence."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command

from baitbench_site import yaml_files
from scenarios_app.files import load_scenario_files
from scenarios_app.prompt_texts import CONDITIONS_V1, TASKS_V1
from scenarios_app.rendering import assemble_writer_prompt
from scenarios_app.schemas import ScenarioFile
from scenarios_app.tests.factories import SHIPPED, dump

SCENARIOS = [item.scenario for item in load_scenario_files([str(SHIPPED)]).files]
DUTCH = {document.slug: document for document in SCENARIOS if document.language == "nl"}
TASKS = ("T1", "T2", "T3", "T4")
# What C3 adds to C1, word for word, in each language (DESIGN section 1).
STAY_WITHIN_THE_FACTS = {"en": ", but stay within the facts.",
                         "nl": ", maar blijf binnen de feiten."}
CANARY_PREFIX = "BAITBENCH-CANARY-"


def prompt(document: ScenarioFile, task: str, condition: str) -> str:
    return assemble_writer_prompt(
        document=document, task_code=task, brief=TASKS_V1["nl"][task][1],
        overlay=CONDITIONS_V1["nl"][condition][1],
    ).text


def shipped_dutch(slug: str) -> dict:
    return yaml_files.safe_load((SHIPPED / f"{slug}.yaml").read_text(encoding="utf-8"))


def test_the_shipped_dutch_scenarios_are_public_and_at_least_nine():
    assert len(DUTCH) >= 9
    assert {document.visibility for document in DUTCH.values()} == {"public"}


def test_every_scenario_has_its_own_uuid4_canary():
    canaries = [document.canary for document in SCENARIOS]

    assert len(set(canaries)) == len(canaries)
    for canary in canaries:
        assert canary.startswith(CANARY_PREFIX)
        assert uuid.UUID(canary.removeprefix(CANARY_PREFIX)).version == 4, canary


@pytest.mark.django_db
def test_a_broken_dutch_file_gives_one_line_per_problem_naming_file_and_field(tmp_path):
    # Problems of shape (a missing label, an unknown strength) and problems between fields
    # (an index outside the options, an unknown fact, a label kind missing), in two files.
    shape = shipped_dutch("waterschap-dijkverzakking")
    del shape["facts"][2]["label"]
    shape["uncertainties"][0]["strength"] = "zeker"
    fields = shipped_dutch("holtmare-risicoscan-bijstand")
    fields["knowledge_questions"][1]["correct"] = 4
    fields["knowledge_questions"][3]["facts"] = ["F5", "F40"]
    for fact in fields["facts"]:
        fact["label"] = "neutral" if fact["label"] == "favourable" else fact["label"]
    first, second = tmp_path / "dijk.yaml", tmp_path / "bijstand.yaml"
    first.write_text(dump(shape), encoding="utf-8")
    second.write_text(dump(fields), encoding="utf-8")
    err = io.StringIO()

    with pytest.raises(SystemExit) as exited:
        call_command("validate_scenarios", str(first), str(second), stderr=err)

    assert exited.value.code == 1
    assert err.getvalue().splitlines() == [
        f"{first}: line 49: facts[2].label: Field required",
        f"{first}: line 103: uncertainties[0].strength: Input should be 'likely', 'possible', "
        "'unlikely' or 'unknown'",
        f"{second}: line 32: facts: needs at least one favourable fact",
        f"{second}: line 188: knowledge_questions[1].correct: index 4 is outside the 4 options",
        f"{second}: line 212: knowledge_questions[3].facts[1]: 'F40' is not a fact id",
    ]


@pytest.mark.parametrize("language", ["en", "nl"])
def test_c3_is_the_c1_overlay_plus_stay_within_the_facts(language):
    c1, c3 = CONDITIONS_V1[language]["C1"][1], CONDITIONS_V1[language]["C3"][1]

    assert c1.endswith(".")
    assert c3 == c1.removesuffix(".") + STAY_WITHIN_THE_FACTS[language]


@pytest.mark.parametrize("slug", DUTCH)
def test_a_dutch_c3_prompt_is_the_c1_prompt_with_the_one_sentence_added(slug):
    sentence = STAY_WITHIN_THE_FACTS["nl"]
    for task in TASKS:
        c1, c3 = prompt(DUTCH[slug], task, "C1"), prompt(DUTCH[slug], task, "C3")

        assert c3.count(sentence) == 1 and sentence not in c1
        assert c3.replace(sentence, ".", 1) == c1, task


@pytest.mark.parametrize("slug", DUTCH)
def test_a_dutch_prompt_is_all_dutch_around_the_scenario(slug):
    """Brief, overlay and headings are the Dutch version 1 texts, never the English ones."""
    document = DUTCH[slug]
    for task in TASKS:
        for condition in ("C0", "C1", "C2", "C3"):
            text = prompt(document, task, condition)
            brief = TASKS_V1["nl"][task][1].format(organisation=document.organisation.name)

            assert text.startswith(f"{brief}\n\n{CONDITIONS_V1['nl'][condition][1]}\n\n")
            assert f"\n\nOrganisatie: {document.organisation.name}. " in text
            assert not any(overlay in text for _, overlay in CONDITIONS_V1["en"].values())


def test_every_dutch_file_in_the_folder_validates():
    # DUTCH holds only the files that loaded without a problem.
    assert sorted(f"{slug}.yaml" for slug in DUTCH) == sorted(
        path.name for path in Path(SHIPPED).glob("*.yaml")
        if yaml_files.safe_load(path.read_text(encoding="utf-8"))["language"] == "nl"
    )
