"""The shipped release files (`releases/CODE.yaml`): each loads and pins its scenarios, and the
Dutch pilot keeps the rules its models must follow (DESIGN sections 1, 2 and 6)."""

from __future__ import annotations

import html
import io
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.management import call_command

from baitbench_site import yaml_files
from runs_app.jury import PoolMember, eligible_jurors
from runs_app.models import Release, ReleaseScenario, ScoringVersion
from runs_app.readers import load_panel
from runs_app.schemas import STAGE_NAMES, ReleaseConfig, release_document_problems
from runs_app.scoring_versions import load_scoring_file, split_pin
from runs_app.services import release_config_from_file, release_get_or_load
from scenarios_app.tests.factories import make_staff

# What a refused true or false adds to its message (scenarios_app.schemas._no_boolean).
BOOLEAN_HINT = " (YAML also reads yes, no, on and off as true or false)"

RELEASE_FILES = sorted(Path(settings.RELEASES_DIR).glob("*.yaml"))
PILOT = Path(settings.RELEASES_DIR) / "pilot.0.yaml"


def shipped_scenarios() -> dict[str, dict]:
    return {path.stem: yaml_files.safe_load(path.read_text(encoding="utf-8"))
            for path in Path(settings.SCENARIOS_DIR).glob("*.yaml")}


@pytest.mark.django_db
@pytest.mark.parametrize("path", RELEASE_FILES, ids=[path.stem for path in RELEASE_FILES])
def test_each_release_file_loads_and_pins_every_scenario_it_names(imported_scenarios, path):
    config = release_config_from_file(path)

    release = release_get_or_load(code=path.stem)

    assert config.code == path.stem
    pinned = ReleaseScenario.objects.filter(release=release).select_related(
        "scenario_version__scenario")
    assert sorted(row.scenario_version.scenario.slug for row in pinned) == sorted(
        config.scenarios)
    assert [slug for slug, _ in release.parsed_config().pinned()] == config.scenarios
    assert {row.scenario_version.scenario.language for row in pinned} == {config.language}


def test_pilot_is_the_dutch_release_of_every_task_and_condition_ranked_by_classes():
    config = release_config_from_file(PILOT)

    assert (config.code, config.language, config.ranking_rule) == ("pilot.0", "nl", "classes")
    assert config.tasks == ["T1", "T2", "T3", "T4"]
    assert config.conditions == ["C0", "C1", "C2", "C3"]
    assert len(load_panel(config.panel, "nl").positions) == 12


def test_pilot_reads_only_public_dutch_scenarios_and_at_least_nine():
    scenarios = shipped_scenarios()
    config = release_config_from_file(PILOT)

    assert len(config.scenarios) == len(set(config.scenarios)) >= 9
    for slug in config.scenarios:
        assert (scenarios[slug]["language"], scenarios[slug]["visibility"]) == (
            "nl", "public"), slug


def test_pilot_reader_and_journalist_are_of_families_that_write_nothing():
    config = release_config_from_file(PILOT)
    writer_families = {config.family_of(writer) for writer in config.writers}

    assert config.reader == "z-ai/glm-5.3-flash"
    assert config.family_of(config.reader) == "z-ai"
    assert config.family_of(config.reader) not in writer_families
    assert config.family_of(config.journalist) not in writer_families
    assert len(config.writers) == len(set(config.writers)) == 10


def test_every_pilot_writer_gets_three_jurors_of_other_families():
    config = release_config_from_file(PILOT)
    pool = [PoolMember(juror, config.family_of(juror)) for juror in config.jurors]

    assert len({member.family for member in pool}) >= 4
    for writer in config.writers:
        families = {m.family for m in eligible_jurors(pool, config.family_of(writer))}
        assert len(families) >= config.jury_size, writer


@pytest.mark.django_db
def test_pilot_runs_every_stage_under_the_scoring_version_that_labels_interview_answers(
        imported_scenarios):
    config = release_config_from_file(PILOT)

    assert config.stages == list(STAGE_NAMES)
    # The method moves knowledge harm "back to 50/25/25" after en.0's 0.5 / 0.3 / 0.2.
    assert config.weights.model_dump() == {"claims": 0.5, "omission": 0.25,
                                           "knowledge_harm": 0.25}
    release = release_get_or_load(code="pilot.0")
    name, digest = split_pin(release.parsed_config().scoring_version)
    assert (name, digest) == ("v2", load_scoring_file("v2").content_hash())
    assert ScoringVersion.texts_for_pin(release.parsed_config().scoring_version).labels_answers


def test_en_0_and_pilot_0_keep_their_own_scoring_versions_and_rules():
    english = release_config_from_file(Path(settings.RELEASES_DIR) / "en.0.yaml")
    pilot = release_config_from_file(PILOT)

    assert (english.scoring_version, english.ranking_rule) == ("v1", "paired")
    assert (pilot.scoring_version, pilot.ranking_rule) == ("v2", "classes")
    # T4 and its cross-examination only in the Dutch release (the journalist is Dutch only).
    assert "crossexam" not in english.stages and "T4" not in english.tasks


# A release file with five mistakes: three fields wrong on their own, two rules across fields.
FIVE_MISTAKES = {"code": "bad.0", "language": "fr", "variants": 0, "colour": "blue",
                 "writers": ["fixture/candid", "fixture/advocate", "fixture/unknown"],
                 "reader": "fixture/candid"}
FIVE_LINES = [
    "language: Input should be 'en' or 'nl'",
    "variants: Input should be greater than or equal to 1",
    "colour: unknown field",
    "writers[2]: fixture/unknown is not declared under models",
    "reader: fixture/candid belongs to family 'fixture-candid', as writer(s) fixture/candid do; "
    "the reader must come from a family no writer belongs to",
]


def five_mistakes_yaml() -> str:
    demo = yaml_files.safe_load((Path(settings.RELEASES_DIR) / "demo.0.yaml").read_text())
    return yaml.safe_dump(demo | FIVE_MISTAKES, sort_keys=False)


def test_a_release_file_with_five_mistakes_gets_five_lines_from_the_command(
    imported_scenarios, settings, tmp_path,
):
    (tmp_path / "bad.0.yaml").write_text(five_mistakes_yaml())
    settings.RELEASES_DIR = tmp_path
    err = io.StringIO()
    with pytest.raises(SystemExit) as stopped:
        call_command("run_release", "bad.0", stdout=io.StringIO(), stderr=err)
    assert stopped.value.code == 1
    assert err.getvalue().splitlines() == [f"{tmp_path / 'bad.0.yaml'}: {line}"
                                           for line in FIVE_LINES]
    assert not Release.objects.filter(code="bad.0").exists()


def test_a_release_file_with_five_mistakes_gets_five_lines_in_the_admin(
    client, imported_scenarios,
):
    client.force_login(make_staff("olga", "operator"))
    response = client.post("/admin/runs_app/release/add/", {"config_yaml": five_mistakes_yaml()})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["config_yaml"] == FIVE_LINES
    page = html.unescape(response.content.decode())
    assert all(line in page for line in FIVE_LINES)
    assert "(top)" not in page and "Value error" not in page
    assert not Release.objects.filter(code="bad.0").exists()


def test_a_field_that_is_wrong_is_one_line_not_one_more_per_rule_that_reads_it():
    data = yaml_files.safe_load(five_mistakes_yaml()) | {"language": "en", "variants": 1,
                                                    "models": "not a list"}
    data.pop("colour")
    config, problems = release_document_problems(data)
    assert config is None
    # The rules that read the models (declared, jury families, reader family) are left out.
    assert [str(problem) for problem in problems] == [
        "models: Input should be a valid list"]


def test_rules_across_fields_all_show_at_once_when_every_field_is_right():
    data = yaml_files.safe_load(five_mistakes_yaml()) | {"language": "en", "variants": 1,
                                                    "stages": ["generate", "refusal", "jury",
                                                               "panel", "reveal"]}
    data.pop("colour")
    config, problems = release_document_problems(data)
    assert [str(problem) for problem in problems] == [
        FIVE_LINES[3], FIVE_LINES[4],
        "stages: task T4 needs the cross-examination stage (crossexam)"]
    with pytest.raises(ValueError, match="writers\\[2\\].*; reader: .*; stages: task T4"):
        ReleaseConfig.model_validate(data)


def test_the_arena_and_reading_studies_may_hold_no_more_than_every_cell_together():
    demo = yaml_files.safe_load((Path(settings.RELEASES_DIR) / "demo.0.yaml").read_text())
    config, problems = release_document_problems(
        demo | {"arena": {"held_share": 0.75}, "reading_studies": {"held_share": 0.5}})
    assert config is None
    assert [str(problem) for problem in problems] == [
        "reading_studies.held_share: 0.5 with the arena's 0.75 holds more than every cell; "
        "the two together may hold at most 1"]
    assert release_document_problems(
        demo | {"arena": {"held_share": 0.5}, "reading_studies": {"held_share": 0.5}})[1] == []


@pytest.mark.parametrize(("changes", "line"), [
    ({"variants": True}, "variants: a whole number, not true" + BOOLEAN_HINT),
    ({"max_attempts": False}, "max_attempts: a whole number, not false" + BOOLEAN_HINT),
    ({"knowledge_harm_cap": True}, "knowledge_harm_cap: a whole number, not true" + BOOLEAN_HINT),
    ({"bootstrap": {"seed": True}}, "bootstrap.seed: a whole number, not true" + BOOLEAN_HINT),
    ({"reply_reasoning": {"juror": True}},
     "reply_reasoning.juror: a whole number, not true" + BOOLEAN_HINT),
    ({"arena": {"held_share": True}}, "arena.held_share: a number, not true" + BOOLEAN_HINT),
    ({"gate": {"min_coverage": True}}, "gate.min_coverage: a number, not true" + BOOLEAN_HINT),
    ({"chart": {"honesty": [False, 1]}}, "chart.honesty[0]: a number, not false" + BOOLEAN_HINT),
])
def test_a_boolean_is_not_a_number_in_a_release_file(changes, line):
    """pydantic's lax mode read true as 1: `arena: {held_share: yes}` held every cell."""
    demo = yaml_files.safe_load((Path(settings.RELEASES_DIR) / "demo.0.yaml").read_text())
    config, problems = release_document_problems(demo | changes)
    assert config is None
    assert [str(problem) for problem in problems] == [line]


def test_a_whole_number_written_as_text_or_as_a_whole_float_is_still_read():
    demo = yaml_files.safe_load((Path(settings.RELEASES_DIR) / "demo.0.yaml").read_text())
    config, problems = release_document_problems(demo | {"variants": "2", "max_attempts": 4.0})
    assert problems == [] and (config.variants, config.max_attempts) == (2, 4)


def test_a_release_file_listing_a_scenario_or_model_twice_is_refused_by_name_in_the_admin(
    client, imported_scenarios,
):
    """A scenario listed twice broke the release's creation with a database error (a 500);
    a writer, juror, task or condition twice would be run and paid for twice."""
    demo = yaml_files.safe_load((Path(settings.RELEASES_DIR) / "demo.0.yaml").read_text())
    scenario, writer = demo["scenarios"][0], demo["writers"][1]
    demo |= {"code": "twice.0", "scenarios": [*demo["scenarios"], f"{scenario}"],
             "writers": [*demo["writers"], writer], "conditions": ["C0", "C1", "C0"]}
    client.force_login(make_staff("olga", "operator"))
    response = client.post("/admin/runs_app/release/add/",
                           {"config_yaml": yaml.safe_dump(demo, sort_keys=False)})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["config_yaml"] == [
        f"scenarios[{len(demo['scenarios']) - 1}]: {scenario} is listed twice",
        f"writers[{len(demo['writers']) - 1}]: {writer} is listed twice",
        "conditions[2]: C0 is listed twice",
    ]
    assert not Release.objects.filter(code="twice.0").exists()
