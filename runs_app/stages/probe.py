"""Contamination probes, drained like a stage (DESIGN section 6: contamination).

Each model of a release (writers, jurors, reader, journalist) is asked, per pinned scenario,
to complete the canary's prefix and what it knows about the scenario's title and
organisation. The rows belong to the release's contamination check, not to the release, so a
published release can be probed; a rerun never asks a probe that has a reply again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from runs_app.contamination import PROBE_MAX_TOKENS, probe_messages
from runs_app.models import ContaminationCheck, ContaminationProbe, ProbeKind, WorkStatus
from runs_app.providers.base import CompletionRequest, CompletionResult, ProviderError
from runs_app.providers.pool import ProviderPool
from runs_app.stages.base import Stage
from scenarios_app.models import ScenarioVersion

# A probe is retried after a transient provider error at most this many times in one claim.
PROBE_ATTEMPTS = 3


def release_models(config) -> list[str]:
    """Every model the release calls, in the order of its roles, each once."""
    journalist = [config.journalist] if config.journalist else []
    return list(dict.fromkeys([*config.writers, *config.jurors, config.reader, *journalist]))


@dataclasses.dataclass(frozen=True)
class ProbeJob:
    request: CompletionRequest


@dataclasses.dataclass
class ProbeOutcome:
    result: CompletionResult | None = None
    error: str = ""
    attempts: int = 0


class ProbeStage(Stage):
    name = "contamination_probe"
    work_model = ContaminationProbe
    claim_related = ("contamination_check__release", "scenario_version")

    def rows(self, check: ContaminationCheck):
        return ContaminationProbe.objects.filter(contamination_check=check)

    def plan(self, check: ContaminationCheck,
             generation_ids: Collection[int] | None = None) -> int:
        models = release_models(check.release.parsed_config())
        versions = ScenarioVersion.objects.filter(releases=check.release).only("pk")
        rows = [ContaminationProbe(contamination_check=check, model=model,
                                   scenario_version=version, kind=kind)
                for model in models for version in versions for kind in ProbeKind.values]
        return self.create_rows(check, rows)

    def planned_calls(self, config) -> int:
        return len(release_models(config)) * len(config.scenarios) * len(ProbeKind.values)

    def build(self, item: ContaminationProbe) -> ProbeJob:
        content = item.scenario_version.content
        messages = probe_messages(
            item.kind, language=content["language"], canary=content["canary"],
            title=content["title"], organisation=content["organisation"]["name"])
        # Greedy decoding: a memorised string is most likely to come out unchanged.
        return ProbeJob(CompletionRequest(model=item.model, messages=messages,
                                          max_tokens=PROBE_MAX_TOKENS, temperature=0.0,
                                          purpose="probe"))

    async def execute(self, job: ProbeJob, providers: ProviderPool) -> ProbeOutcome:
        outcome = ProbeOutcome()
        for _ in range(PROBE_ATTEMPTS):
            outcome.attempts += 1
            try:
                outcome.result = await providers.complete(job.request)
                outcome.error = ""
                return outcome
            except ProviderError as error:
                outcome.error = f"{'permanent ' if error.permanent else ''}provider error: " \
                                f"{error.message}"
                if error.permanent:
                    return outcome
        return outcome

    def record(self, item: ContaminationProbe, outcome: ProbeOutcome) -> dict[str, Any]:
        fields: dict[str, Any] = {"attempts": item.attempts + outcome.attempts,
                                  "prompt": "\n\n".join(m.content for m in
                                                        self.build(item).request.messages)}
        result = outcome.result
        if result is None:
            return fields | {"status": WorkStatus.FAILED, "error": outcome.error}
        cost = (item.cost_usd or 0.0) + (result.cost_usd or 0.0)
        return fields | {
            "status": WorkStatus.DONE, "error": "", "reply": result.text,
            "prompt_tokens": item.prompt_tokens + result.prompt_tokens,
            "completion_tokens": item.completion_tokens + result.completion_tokens,
            "reasoning_tokens": item.reasoning_tokens + result.reasoning_tokens,
            "cost_usd": cost, "latency_ms": result.latency_ms,
            "upstream_provider": result.upstream_provider,
            "provider_generation_id": result.generation_id or "",
        }
