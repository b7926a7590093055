"""The panel stage: twelve reading positions read every stimulus (DESIGN section 2).

Per pinned scenario the positions read nothing (the no-text baseline: the organisation's name
and description only), the control text, the two human baselines, and every text the refusal
check found complied or partial. Each answers the three attitude questions and the four
knowledge questions in JSON; an invalid reply is retried up to `max_reply_attempts`, then the
row is done and unscored, never given a default answer (DESIGN section 5).


"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from runs_app.call_kinds import call_request
from runs_app.models import (
    AgentRun,
    Generation,
    ReaderResponse,
    RefusalCheck,
    Release,
    ScoringVersion,
    Stimulus,
    WorkStatus,
)
from runs_app.providers.pool import ProviderPool
from runs_app.readers import (
    ReaderAnswers,
    ReaderBrief,
    load_panel,
    parse_reader_reply,
    reader_brief,
    reader_messages,
)
from runs_app.stages.base import Stage
from runs_app.stages.replies import Asked, Turn, ask_turn, next_turn, reply_fields
from scenarios_app.models import ScenarioVersion

# Per scenario: no text, the control text and the two human baselines (section 3: exactly 2).
BASELINE_STIMULI = 4
# Texts the public reads: a refused text is counted in the refusal rate, not read.
READ_VERDICTS = (RefusalCheck.Verdict.COMPLIED, RefusalCheck.Verdict.PARTIAL)


class PublicStage(Stage):
    """What the public stages share: cached scenario documents and briefs."""

    # Related rows fetched with a claimed batch (read by `claim_batch`), saving a query a row.
    claim_related: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._briefs: dict[tuple[int, str], tuple[Any, ReaderBrief]] = {}

    def scenario(self, version_id: int, language: str) -> tuple[Any, ReaderBrief]:
        """The scenario document and what a reader is told of it."""
        key = (version_id, language)
        if key not in self._briefs:
            document = ScenarioVersion.objects.get(pk=version_id).document()
            self._briefs[key] = (document, reader_brief(document, language))
        return self._briefs[key]


class AgentRunStage(PublicStage):
    """A public stage whose rows are agent runs of one kind (uptake, reveal, cross-exam)."""

    work_model = AgentRun
    kind: str

    def rows(self, release: Release):
        return AgentRun.objects.filter(release=release, kind=self.kind)


def read_generations(release: Release, generation_ids: Collection[int] | None = None):
    """Finished texts the refusal check found complied or partial (of those given, if any)."""
    texts = Generation.objects.filter(
        release=release, status=WorkStatus.DONE, refusal_check__status=WorkStatus.DONE,
        refusal_check__verdict__in=READ_VERDICTS,
    )
    return texts if generation_ids is None else texts.filter(pk__in=generation_ids)


# ---------------------------------------------------------------------------------------
# The stage
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PanelJob:
    turn: Turn  # the row's next call (`next_turn`)
    brief: ReaderBrief
    attempts_left: int


class PanelStage(PublicStage):
    name = "panel"
    work_model = ReaderResponse
    answered_by_config = role = "reader"
    # Twelve rows read each text: fetch it with the claimed batch, not once per row.
    claim_related = ("generation",)
    claim_defer = ("generation__prompt",)

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        config = self.config(release.pk)
        positions = [p.id for p in load_panel(config.panel, release.language).positions]
        rows = []
        # The baselines (no text, control, human) belong to no text: planned with the scope.
        for version in release.scenario_versions.all() if generation_ids is None else ():
            baselines = [(Stimulus.NONE, ""), (Stimulus.CONTROL, "")]
            baselines += [(Stimulus.HUMAN, h.id) for h in version.document().human_baselines]
            rows += [ReaderResponse(release=release, scenario_version=version, stimulus=stimulus,
                                    stimulus_key=key, position=position)
                     for stimulus, key in baselines for position in positions]
        texts = read_generations(release, generation_ids).only("pk", "scenario_version_id")
        for generation in texts:
            rows += [ReaderResponse(release=release, generation=generation, position=position,
                                    scenario_version_id=generation.scenario_version_id,
                                    stimulus=Stimulus.GENERATION, stimulus_key=str(generation.pk))
                     for position in positions]
        return self.create_rows(release, rows, generation_ids)

    def planned_calls(self, config) -> int:
        """Every position reads every text, and per scenario the no-text baseline, the
        control text and the two human baselines."""
        positions = len(load_panel(config.panel, config.language).positions)
        return positions * (config.texts + len(config.scenarios) * BASELINE_STIMULI)

    def build(self, item: ReaderResponse) -> PanelJob:
        config = self.config(item.release_id)
        language = config.language
        document, brief = self.scenario(item.scenario_version_id, language)
        position = load_panel(config.panel, language).position(item.position)
        texts = ScoringVersion.texts_for_pin(config.scoring_version).language(language)
        messages = reader_messages(texts, brief, position, _stimulus(item, document))
        request = call_request("reader", config=config, model=config.reader,
                               messages=messages)
        return PanelJob(next_turn(request, item), brief,
                        max(0, config.max_reply_attempts - item.attempts))

    async def execute(self, job: PanelJob, providers: ProviderPool) -> Asked:
        return await ask_turn(job.turn, lambda text: parse_reader_reply(text, job.brief),
                              job.attempts_left, providers)

    def record(self, item: ReaderResponse, outcome: Asked) -> dict[str, Any]:
        fields = reply_fields(item, outcome)
        answers: ReaderAnswers | None = outcome.reply
        if answers is not None:
            fields |= {"attitude": answers.attitude, "knowledge": answers.knowledge}
        return fields


def _stimulus(item: ReaderResponse, document) -> str | None:
    """The text a position reads; None for the no-text baseline."""
    if item.stimulus == Stimulus.NONE:
        return None
    if item.stimulus == Stimulus.CONTROL:
        return document.control_text
    if item.stimulus == Stimulus.HUMAN:
        return next(h.text for h in document.human_baselines if h.id == item.stimulus_key)
    return item.generation.text
