"""A Dutch release through the whole chain (DESIGN sections 2, 7): the jury labels a Dutch
text's claims under its English instructions, and every other role gets its prompt in Dutch
from the scoring version, which the fixture provider reads and answers."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean

import pytest
from django.conf import settings

from runs_app.models import (
    AgentRun,
    Claim,
    CrossExamTurn,
    Generation,
    JurorVerdict,
    ReaderResponse,
    ReplyOutcome,
    TextScore,
    WorkStatus,
)
from runs_app.providers.fixture.readers import _trust
from runs_app.providers.pool import ProviderPool
from runs_app.readers import load_panel
from runs_app.schemas import ReleaseConfig
from runs_app.scoring_versions import load_scoring_file
from runs_app.services import release_config_from_file, release_create, release_freeze
from runs_app.stages import get_stage
from runs_app.stages.base import drain
from scenarios_app.models import Scenario

CHAIN = ("generate", "refusal", "jury", "panel", "uptake", "reveal", "crossexam")


class RecordingPool(ProviderPool):
    def __init__(self) -> None:
        super().__init__(default="fixture")
        self.requests = []

    async def complete(self, request):
        self.requests.append(request)
        return await super().complete(request)


@pytest.fixture
def dutch(imported_scenarios):
    """demo.0's models on the Dutch scenario, T1 and T4 under C0 and C2, run end to end."""
    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml")
    release = release_freeze(release=release_create(config=ReleaseConfig.model_validate(
        config.model_dump() | {"code": "nl-test.0", "language": "nl",
                               "scenarios": ["waterschap-dijkverzakking"],
                               "tasks": ["T1", "T4"], "conditions": ["C0", "C2"]})))
    pool = RecordingPool()
    for name in CHAIN:
        drain(get_stage(name), release, concurrency=16, providers=pool)
    return release, pool


def by_writer(release, field: str) -> dict[str, float]:
    values: dict[str, list[float]] = defaultdict(list)
    for score in TextScore.objects.filter(release=release, **{f"{field}__isnull": False}) \
            .select_related("generation__model"):
        values[score.generation.model.openrouter_id].append(getattr(score, field))
    return {writer: mean(items) for writer, items in values.items()}


@pytest.mark.django_db
def test_the_jury_labels_the_claims_of_a_dutch_text(dutch):
    release, _ = dutch
    document = Scenario.objects.get(slug="waterschap-dijkverzakking").current_version.document()
    incriminating = {fact.id for fact in document.facts if fact.label == "incriminating"}
    verdicts = JurorVerdict.objects.filter(release=release).select_related("generation__model")
    assert verdicts.exists()
    assert not verdicts.exclude(status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED).exists()
    labels = defaultdict(set)
    for verdict in verdicts:
        writer = verdict.generation.model.openrouter_id
        claims = Claim.objects.filter(verdict=verdict)
        assert claims.exists(), "every Dutch text has labelled claims"
        labels[writer] |= set(claims.values_list("label", flat=True))
        if writer == "fixture/candid" and verdict.generation.task == "T1":
            # A candid press release conveys every incriminating fact (an interview answer
            # has room for a few).
            assert incriminating <= set(verdict.facts_conveyed)
    assert labels["fixture/candid"] == {"supported"}
    assert {"exaggeration", "fabrication"} <= labels["fixture/spinner"]
    honesty = by_writer(release, "honesty_index")
    assert honesty["fixture/candid"] > honesty["fixture/advocate"] > honesty["fixture/spinner"]


@pytest.mark.django_db
def test_jurors_read_the_dutch_text_under_english_instructions(dutch):
    _, pool = dutch
    jury = load_scoring_file("v2").jury
    for request in pool.requests:
        if request.purpose in ("juror", "refusal"):
            system, user = request.messages
            assert system.content.startswith(jury.juror_system[:40]
                                             if request.purpose == "juror"
                                             else jury.refusal_system[:40])
    juror = next(r for r in pool.requests if r.purpose == "juror")
    assert "Op zaterdag 15 november 2025 verzakte" in juror.messages[-1].content


@pytest.mark.django_db
def test_every_other_role_is_asked_in_dutch_and_answers(dutch):
    release, pool = dutch
    nl = load_scoring_file("v2").language("nl")
    openings = {"reader": nl.reader.system.format(), "reveal": nl.reader.system.format(),
                "journalist": nl.journalist.system.format(),
                "frame_judge": nl.frame_judge.system.format(),
                "crossexam": nl.crossexam_journalist.system.format(),
                "answer_judge": nl.answer_judge.system[:60]}
    asked = {request.purpose for request in pool.requests}
    assert set(openings) <= asked
    for request in pool.requests:
        if request.purpose in openings:
            assert request.messages[0].content.startswith(openings[request.purpose])
    # The fixture understood every Dutch prompt: every row has a validated reply.
    assert not ReaderResponse.objects.filter(release=release).exclude(
        outcome=ReplyOutcome.SCORED).exists()
    runs = AgentRun.objects.filter(release=release)
    assert {run.kind for run in runs} == {"uptake", "reveal"}
    assert not runs.exclude(status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED).exists()
    turns = CrossExamTurn.objects.filter(release=release)
    assert turns.filter(kind="labels").count() == \
        TextScore.objects.filter(release=release, steadfastness__isnull=False).count() > 0
    assert not turns.exclude(status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED).exists()


@pytest.mark.django_db
def test_under_dutch_questioning_the_fixture_writers_behave_as_their_profiles(dutch):
    """Advocate holds its frame, candid concedes, spinner invents and contradicts itself: the
    same order as in English (test_crossexam)."""
    release, _ = dutch
    steady = by_writer(release, "steadfastness")
    honest = by_writer(release, "honesty_under_pressure")
    assert steady["fixture/advocate"] > steady["fixture/candid"] > steady["fixture/spinner"]
    assert honest["fixture/candid"] == honest["fixture/advocate"] == 1.0
    assert honest["fixture/spinner"] < 0.5


@pytest.mark.django_db
def test_the_fixture_reader_finds_its_trust_in_the_dutch_prompt(dutch):
    _, pool = dutch
    trust = {position.id: position.traits.trust_in_media
             for position in load_panel("v1", "nl").positions}
    summaries = {position.summary: position.id for position in load_panel("v1", "nl").positions}
    for request in pool.requests:
        if request.purpose == "reader":
            system = request.messages[0].content
            position = next(pid for summary, pid in summaries.items() if summary in system)
            assert _trust(system) == trust[position]


@pytest.mark.django_db
def test_every_model_gets_the_same_dutch_prompts_word_for_word(dutch):
    """DESIGN section 1: the brief and overlay are word for word the same for every model, and
    so is everything each scoring role is told; only the text under review differs."""
    release, pool = dutch
    prompts = defaultdict(set)
    for generation in Generation.objects.filter(release=release):
        prompts[(generation.scenario_version_id, generation.task, generation.condition)].add(
            (generation.prompt, generation.prompt_hash))
    assert len(prompts) == 4 and all(len(found) == 1 for found in prompts.values())

    nl = load_scoring_file("v2").language("nl")
    heading = f"\n{nl.crossexam_journalist.transcript}:\n"
    instructions, pictures = defaultdict(set), set()
    for request in pool.requests:
        if request.purpose == "write":
            # A follow-up answer opens with the cell's T4 prompt, the same for every writer.
            assert request.messages[0].content in {
                prompt for (prompt, _), in prompts.values()}
            continue
        if request.purpose not in ("reader", "reveal"):  # a reader's persona is its own
            instructions[request.purpose].add(request.messages[0].content)
        if request.purpose == "crossexam":
            pictures.add(request.messages[-1].content.split(heading)[0])
    assert {purpose: len(texts) for purpose, texts in instructions.items()} == {
        purpose: 1 for purpose in ("refusal", "juror", "journalist", "frame_judge", "crossexam",
                                   "answer_judge")}
    assert len(pictures) == 1  # one scenario: the interviewer knows the same of it every time
