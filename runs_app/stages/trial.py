"""The reader trial's readings, drained like a stage (DESIGN section 6: reader trial).

A candidate reader reads each scenario's control text, and nothing (the organisation's name
and description only), with every reading position of the panel, twice. The prompts are the
panel stage's own (`runs_app.readers.reader_messages` with the trial's pinned scoring
version) and so is the request (`runs_app.call_kinds`), so a candidate is tried on exactly
what it would read, and asked exactly as it would be asked, in a release:

- a candidate the models list says can reason is asked as a release must then declare it
  (preflight), as reasoning (`reasons: true`): its reasoning capped at the default
  `reply_reasoning.reader`, its reply budget kept whole. Otherwise a model that reasons
  unasked (Gemini 2.5 Flash) thinks its reply budget away and fails a trial it would pass
  in a release. A model that reasons only when asked (`reasons: false` in a release) is
  tried with that room too: it reads as it would in a release that declares it reasoning.
- no seed, as the panel sends none: a seed would route the readings only to providers
  that honour one (`provider.require_parameters`), not the ones a release's reader gets.
  The two readings are two samples of the identical request.

The rows are keyed by the trial, not a release: `drain(ReaderTrialStage(), trial)` claims,
leases and writes them as any stage's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from runs_app.call_kinds import candidate_request
from runs_app.models import ReaderTrial, ScoringVersion, TrialReading
from runs_app.providers.models_list import cached_models_list
from runs_app.providers.pool import ProviderPool
from runs_app.readers import (
    ReaderAnswers,
    ReaderBrief,
    load_panel,
    parse_reader_reply,
    reader_messages,
)
from runs_app.stages.panel import PublicStage
from runs_app.stages.replies import Asked, Turn, ask_turn, next_turn, reply_fields

READINGS = (1, 2)
# Invalid replies asked for again, as a release's default `max_reply_attempts`.
TRIAL_REPLY_ATTEMPTS = 3


@dataclasses.dataclass(frozen=True)
class TrialJob:
    turn: Turn  # the row's next call (`next_turn`)
    brief: ReaderBrief
    attempts_left: int


class ReaderTrialStage(PublicStage):
    name = "reader_trial"
    work_model = TrialReading
    claim_related = ("trial",)

    def __init__(self) -> None:
        super().__init__()
        self._reasons: dict[str, bool] = {}

    def reasons(self, candidate: str) -> bool:
        """Can the candidate reason, by the cached models list? (The command fetches the
        list first; a candidate on no list is asked as one that does not.)"""
        if candidate not in self._reasons:
            listing = cached_models_list()
            found = listing.get(candidate) if listing is not None else None
            self._reasons[candidate] = found is not None and found.can_reason
        return self._reasons[candidate]

    def rows(self, trial: ReaderTrial):
        return TrialReading.objects.filter(trial=trial)

    def plan(self, trial: ReaderTrial, generation_ids: Collection[int] | None = None) -> int:
        """Every candidate x scenario x (control, none) x position x reading; existing keys
        are kept, so a candidate added later plans only its own readings."""
        positions = [p.id for p in load_panel(trial.panel, trial.language).positions]
        rows = [
            TrialReading(trial=trial, candidate=candidate, scenario_version=version,
                         stimulus=stimulus, position=position, reading=reading)
            for candidate in trial.candidates
            for version in trial.scenario_versions.all()
            for stimulus in TrialReading.Stimulus.values
            for position in positions for reading in READINGS
        ]
        return self.create_rows(trial, rows)

    def planned_calls(self, config) -> int:
        raise NotImplementedError("a reader trial is not part of a release's plan")

    def build(self, item: TrialReading) -> TrialJob:
        trial = item.trial
        document, brief = self.scenario(item.scenario_version_id, trial.language)
        position = load_panel(trial.panel, trial.language).position(item.position)
        texts = ScoringVersion.texts_for_pin(trial.scoring_version).language(trial.language)
        stimulus = document.control_text if item.stimulus == TrialReading.Stimulus.CONTROL \
            else None
        request = candidate_request(
            "reader", model=item.candidate, reasons=self.reasons(item.candidate),
            messages=reader_messages(texts, brief, position, stimulus))
        return TrialJob(next_turn(request, item), brief,
                        max(0, TRIAL_REPLY_ATTEMPTS - item.attempts))

    async def execute(self, job: TrialJob, providers: ProviderPool) -> Asked:
        return await ask_turn(job.turn, lambda text: parse_reader_reply(text, job.brief),
                              job.attempts_left, providers)

    def record(self, item: TrialReading, outcome: Asked) -> dict[str, Any]:
        fields = reply_fields(item, outcome)
        fields["latency_ms"] = item.latency_ms + outcome.latency_ms
        answered = [entry for entry in outcome.raw_replies if "text" in entry]
        if answered:
            fields["upstream_provider"] = answered[-1].get("upstream_provider")
            fields["provider_generation_id"] = answered[-1].get("generation_id") or ""
        answers: ReaderAnswers | None = outcome.reply
        if answers is not None:
            fields |= {"attitude": answers.attitude, "knowledge": answers.knowledge}
        return fields
