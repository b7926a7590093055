"""Contamination probes, drained like a stage (DESIGN section 6: contamination).

Each model of a release (writers, jurors, reader, journalist) is asked, per pinned scenario,
to complete the canary's prefix and what it knows about the scenario's title and
organisation. The rows belong to the release's contamination check, not to the release, so a
published release can be probed; a rerun never asks a probe that has a reply again.

A probe is one call, as every stage's (DESIGN section 5): a provider error that outlasts the
provider's own retries fails it (the next check asks it again), and a Retry-After longer
than a call waits parks it. A reply is only an answer if it ended: one cut at the token
budget (a reasoning model may think the whole budget away) or with no words fails too, a
gap the check reports, never a clean probe; asked again at once at temperature 0 it would
end the same way. Whatever came back, its text and its reasoning field are kept and scanned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from runs_app.call_kinds import call_request
from runs_app.contamination import probe_messages
from runs_app.costs import recorded_cost
from runs_app.models import ContaminationCheck, ContaminationProbe, ProbeKind, WorkStatus
from runs_app.providers.base import CompletionRequest, CompletionResult, ProviderError
from runs_app.providers.pool import ProviderPool
from runs_app.stages.base import Stage, parked
from scenarios_app.models import ScenarioVersion


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
    # Seconds the provider said to wait, longer than a call waits: the probe is parked.
    retry_after: float | None = None
    # What failed attempts billed (a 200 that was still an error): paid means recorded.
    paid: CompletionResult | None = None


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
        # Greedy decoding, and a declared reasoning model's reasoning capped (call_kinds):
        # a reply the model thinks away is a gap, asked again only at the next check.
        return ProbeJob(call_request("probe", config=self.config(item.contamination_check
                                                                 .release_id),
                                     model=item.model, messages=messages))

    async def execute(self, job: ProbeJob, providers: ProviderPool) -> ProbeOutcome:
        try:
            return ProbeOutcome(await providers.complete(job.request))
        except ProviderError as error:
            return ProbeOutcome(error=f"{'permanent ' if error.permanent else ''}provider "
                                      f"error: {error.message}", retry_after=error.retry_after,
                                paid=error.paid)

    def record(self, item: ContaminationProbe, outcome: ProbeOutcome) -> dict[str, Any]:
        fields: dict[str, Any] = {"prompt": "\n\n".join(m.content for m in
                                                        self.build(item).request.messages)}
        billed = outcome.result or outcome.paid
        if billed is not None:
            fields |= _usage(item, billed)
        if outcome.retry_after is not None:
            # Throttled: no model call was made, so no attempt is used up.
            return fields | parked(outcome.retry_after, outcome.error)
        fields["attempts"] = item.attempts + 1
        result = outcome.result
        if result is None:
            return fields | {"status": WorkStatus.FAILED, "error": outcome.error}
        fields |= {
            "reply": result.text or result.refusal, "reasoning": result.reasoning,
            "finish_reason": result.finish_reason or "",
            "native_finish_reason": result.native_finish_reason or "",
            "latency_ms": result.latency_ms, "upstream_provider": result.upstream_provider,
            "provider_generation_id": result.generation_id or "",
        }
        unanswered = unanswered_reason(result)
        if unanswered:
            return fields | {"status": WorkStatus.FAILED, "error": unanswered}
        return fields | {"status": WorkStatus.DONE, "error": ""}


def _usage(item: ContaminationProbe, billed: CompletionResult) -> dict[str, Any]:
    """The probe's usage with this call's added: a reply that reports no cost is estimated
    from the models list's prices and marked so (DESIGN section 5), never a known $0."""
    cost = recorded_cost(item.model, billed)
    return {"prompt_tokens": item.prompt_tokens + billed.prompt_tokens,
            "completion_tokens": item.completion_tokens + billed.completion_tokens,
            "reasoning_tokens": item.reasoning_tokens + billed.reasoning_tokens,
            "cost_usd": (item.cost_usd or 0.0) + cost,
            "cost_estimated": item.cost_estimated or billed.cost_usd is None}


def unanswered_reason(result: CompletionResult) -> str:
    """Why a probe's reply is no answer ("" when it is one): cut at the token budget, or no
    words at all (a refusal's words are an answer)."""
    if result.finish_reason == "length":
        spent = (f" after {result.reasoning_tokens} reasoning tokens"
                 if result.reasoning_tokens else "")
        return f"stopped at the token budget{spent} before its reply ended"
    if not (result.text.strip() or result.refusal.strip()):
        return f"no reply (finish_reason {result.finish_reason})"
    return ""
