"""The generation stage: one text per cell of a release (DESIGN sections 1 and 5)."""

from __future__ import annotations

import dataclasses
import itertools
import secrets
from collections.abc import Collection
from typing import Any

from django.db.models import Count, Q

from runs_app.call_kinds import call_request, writer_seed
from runs_app.costs import recorded_cost
from runs_app.models import Generation, GenerationAttempt, LlmModel, Release, WorkStatus
from runs_app.providers.base import CompletionRequest, CompletionResult, Message, ProviderError
from runs_app.providers.pool import ProviderPool
from runs_app.reply_reader import UNCLOSED_THINK
from runs_app.stages.base import Stage, given_back, parked
from runs_app.words import stored_words_key
from runs_app.writer_text import NotAText, WriterText, take_think, writer_text
from scenarios_app.models import Condition, ScenarioVersion, Task
from scenarios_app.rendering import assemble_writer_prompt


@dataclasses.dataclass(frozen=True)
class GenerationJob:
    request: CompletionRequest
    prompt_text: str
    prompt_hash: str
    attempts_left: int
    language: str = "en"


@dataclasses.dataclass
class AttemptRecord:
    outcome: str  # GenerationAttempt.Outcome
    result: CompletionResult | None = None
    error: str = ""
    text: WriterText | None = None  # the text to score, for an accepted attempt


@dataclasses.dataclass
class GenerationOutcome:
    job: GenerationJob
    attempts: list[AttemptRecord]
    accepted: CompletionResult | None = None
    failure: str = ""
    retry_after: float | None = None  # the provider said to wait this long (seconds)


def classify(result: CompletionResult, language: str, *, spoken: bool = False
             ) -> AttemptRecord:
    """What one writer reply is (DESIGN section 5): a text cut off by the budget, no text, a
    chat wrapper that cannot be taken off or another language does not count; a refusal
    (the refusal field, a content filter) is the writer refusing the cell; else the text,
    with its reasoning and any wrapper kept apart. The cross-examination reads its answers
    here too (`spoken`: see `runs_app.writer_text`)."""
    Outcome = GenerationAttempt.Outcome
    if result.finish_reason == "length":
        return AttemptRecord(Outcome.LENGTH, result,
                             "stopped at the token budget (finish_reason: length"
                             + (f", native {result.native_finish_reason}"
                                if result.native_finish_reason else "") + ")")
    if result.refusal or result.finish_reason == "content_filter":
        # The words of the refusal, its thinking (a think block the content leaked) apart.
        thought, said, _ = take_think(result.text)
        if UNCLOSED_THINK.match(said):  # stopped mid-thought: no words of its own
            thought, said = said, ""
        words = result.refusal or said.strip()
        reasoning = "\n\n".join(part for part in (result.reasoning, thought.strip()) if part)
        return AttemptRecord(Outcome.REFUSED, result, text=WriterText(words, reasoning))
    try:
        text = writer_text(result.text, language, spoken=spoken)
    except NotAText as problem:
        return AttemptRecord(problem.kind, result, str(problem))
    reasoning = "\n\n".join(part for part in (result.reasoning, text.reasoning) if part)
    return AttemptRecord(Outcome.OK, result, text=dataclasses.replace(text, reasoning=reasoning))


class GenerateStage(Stage):
    name = "generate"
    work_model = Generation
    answered_by = writer_path = "model__openrouter_id"
    role = "writer"
    # The release's configuration is cached per stage (`config`); the row needs only its id.
    claim_related = ("model",)

    def state_filters(self) -> dict[str, Q]:
        # A text has no reply outcome: it was written (scored here), or the writer refused.
        done = Q(status=WorkStatus.DONE)
        refused = self.refused_filter()
        return {"scored": done & ~refused, "refused": refused, "unscored": Q(pk__in=[])}

    def refused_filter(self) -> Q:
        return Q(status=WorkStatus.DONE) & ~Q(writer_refusal="")

    def __init__(self) -> None:
        self._documents: dict[int, Any] = {}
        self._texts: dict[tuple[str, str, str, int], str] = {}
        self._kept: dict[int, int] = {}
        self._prompts: dict[tuple[int, int, str, str], Any] = {}

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        if generation_ids is not None:
            return 0  # the first stage: every cell is planned at once, from the config
        config = release.parsed_config()
        writers = list(LlmModel.objects.filter(openrouter_id__in=config.writers))
        versions = list(release.scenario_versions.all())
        cells = list(itertools.product(
            writers, versions, config.tasks, config.conditions, range(config.variants)
        ))
        # Every cell has its row already (the other drains of a run found them planned by
        # the first): one count instead of building and inserting them all again. The keys
        # are unique and a frozen release's cells cannot change, so as many rows as cells
        # is every cell.
        if self.rows(release).count() == len(cells):
            return 0
        # Inserted in a random order, so that ids (in links, lists and titles) do not run in
        # blocks per writer: an id must never help tell who wrote a text under blind review.
        secrets.SystemRandom().shuffle(cells)
        return self.create_rows(release, (
            Generation(release=release, model=model, scenario_version=version, task=task,
                       condition=condition, variant=variant)
            for model, version, task, condition, variant in cells
        ))

    def planned_calls(self, config) -> int:
        return config.texts

    def texts_of(self, items) -> set[int]:
        # Only a text that counts moves on; a regenerated one is still pending.
        return {item.pk for item in items}

    def prepare(self, items: list[Generation]) -> None:
        """How many attempts each claimed cell has kept so far, in one query: the next ones
        are numbered after them. Only the claim holder adds attempts, so the count holds
        until its result is written."""
        counts = dict(GenerationAttempt.objects.filter(generation_id__in=[i.pk for i in items])
                      .values("generation_id").annotate(kept=Count("pk"))
                      .values_list("generation_id", "kept"))
        self._kept.update({item.pk: counts.get(item.pk, 0) for item in items})

    def build(self, item: Generation) -> GenerationJob:
        config = self.config(item.release_id)
        prompt = self._prompt(item, config)
        # Each attempt of a cell is asked with the next seed (`writer_seed`), numbered after
        # every attempt kept, an operator's retry included: the request that gave a text
        # that does not count is never sent again.
        earlier = self._kept.get(item.pk)
        if earlier is None:
            earlier = GenerationAttempt.objects.filter(generation=item).count()
        request = call_request(
            "write", config=config, model=item.model.openrouter_id,
            seed=writer_seed(item.variant, earlier, config.variants),
            messages=(Message(role, content) for role, content in prompt.messages))
        return GenerationJob(request, prompt.text, prompt.sha256,
                             attempts_left=max(0, config.max_attempts - item.attempts),
                             language=config.language)

    async def execute(self, job: GenerationJob, providers: ProviderPool) -> GenerationOutcome:
        """One call per claim. Each attempt is written as soon as it returns, and a text that
        does not count goes back to pending for the next one: a worker killed mid-cell never
        loses (and so never pays again for) an attempt it already made."""
        outcome = GenerationOutcome(job=job, attempts=[])
        if job.attempts_left <= 0:
            outcome.failure = "no attempts left (max_attempts reached earlier)"
            return outcome
        try:
            result = await providers.complete(job.request)
        except ProviderError as error:
            # With what the failed call billed, if anything: it is counted in the row's usage.
            outcome.attempts.append(AttemptRecord("error", error.paid, error=error.message))
            if error.permanent:
                outcome.failure = f"permanent provider error: {error.message}"
            outcome.retry_after = error.retry_after
            return outcome
        attempt = classify(result, job.language)
        outcome.attempts.append(attempt)
        if attempt.outcome in (GenerationAttempt.Outcome.OK, GenerationAttempt.Outcome.REFUSED):
            outcome.accepted = attempt
        return outcome

    @staticmethod
    def _attempt_reason(attempt: AttemptRecord) -> str:
        if attempt.outcome == "error":
            return f"provider error: {attempt.error}"
        return attempt.error or attempt.outcome

    def record(self, item: Generation, outcome: GenerationOutcome) -> dict[str, Any]:
        # Numbered after every attempt kept so far: an operator's retry resets the budget
        # (`attempts`) but never the log.
        kept = self._kept.pop(item.pk, None)
        if kept is None:
            kept = GenerationAttempt.objects.filter(generation=item).count()
        self.add_children(
            _attempt_row(item, kept + number, attempt, outcome.job.request.seed)
            for number, attempt in enumerate(outcome.attempts, 1)
        )
        fields: dict[str, Any] = {
            "attempts": item.attempts + len(outcome.attempts),
            "prompt": outcome.job.prompt_text,
            "prompt_hash": outcome.job.prompt_hash,
            # A failed cell was paid for too, and so were the runs before an operator's retry.
            **_usage(item, outcome.attempts),
        }
        accepted = outcome.accepted
        if outcome.retry_after is not None:
            # Throttled for longer than a call waits: no model call was made, so no attempt
            # is used up; the cell is claimed again after the wait (logged all the same).
            return fields | {"attempts": item.attempts} | parked(
                outcome.retry_after, f"provider error: {outcome.attempts[-1].error}")
        if outcome.failure:
            return fields | {"status": WorkStatus.FAILED, "error": outcome.failure}
        if accepted is None:
            reason = self._attempt_reason(outcome.attempts[-1])
            if len(outcome.attempts) >= outcome.job.attempts_left:
                return fields | {"status": WorkStatus.FAILED, "error": (
                    f"{fields['attempts']} attempt(s), the last {reason}")}
            # Not counted: back to pending, for the next attempt by whichever worker.
            return fields | given_back() | {"error": f"last attempt {reason}"}
        result, text = accepted.result, accepted.text
        refused = accepted.outcome == GenerationAttempt.Outcome.REFUSED
        return fields | _provider_fields(result) | {
            "status": WorkStatus.DONE, "error": "", "text": text.text,
            "seed": outcome.job.request.seed, "words_key": stored_words_key(text.text),
            "reasoning": text.reasoning, "stripped": list(text.stripped),
            "writer_refusal": (text.text or f"(no words; finish_reason {result.finish_reason})")
            if refused else "",
        }

    def _prompt(self, item: Generation, config):
        """The writer's prompt of a cell: the same words for every writer (and variant), so
        it is assembled once per cell."""
        key = (item.release_id, item.scenario_version_id, item.task, item.condition)
        if key not in self._prompts:
            self._prompts[key] = assemble_writer_prompt(
                document=self._document(item.scenario_version_id), task_code=item.task,
                brief=self._text("task", item.task, config.language, config.task_version),
                overlay=self._text("condition", item.condition, config.language,
                                   config.condition_version),
            )
        return self._prompts[key]

    def _document(self, version_id: int):
        if version_id not in self._documents:
            self._documents[version_id] = ScenarioVersion.objects.get(pk=version_id).document()
        return self._documents[version_id]

    def _text(self, kind: str, code: str, language: str, version: int) -> str:
        key = (kind, code, language, version)
        if key not in self._texts:
            if kind == "task":
                row = Task.objects.get(code=code, language=language, version=version)
                self._texts[key] = row.brief
            else:
                row = Condition.objects.get(code=code, language=language, version=version)
                self._texts[key] = row.overlay
        return self._texts[key]


def _usage(item: Generation, attempts: list[AttemptRecord]) -> dict[str, Any]:
    """Tokens and cost of every attempt, added to what the row already counts: a
    regenerated text costs what all its tries cost, earlier runs included."""
    results = [attempt.result for attempt in attempts if attempt.result is not None]
    costs = [_cost(result, item.model.openrouter_id) for result in results]
    if item.cost_usd is not None:
        costs.append(item.cost_usd)
    return {
        "cost_estimated": item.cost_estimated or any(r.cost_usd is None for r in results),
        "prompt_tokens": item.prompt_tokens + sum(r.prompt_tokens for r in results),
        "completion_tokens": item.completion_tokens + sum(r.completion_tokens for r in results),
        "reasoning_tokens": item.reasoning_tokens + sum(r.reasoning_tokens for r in results),
        "cost_usd": sum(costs) if costs else None,
        "latency_ms": results[-1].latency_ms if results else item.latency_ms,
    }


def _provider_fields(result: CompletionResult) -> dict[str, Any]:
    """What the provider said about the accepted call, beyond usage."""
    return {
        "finish_reason": result.finish_reason or "",
        "native_finish_reason": result.native_finish_reason or "",
        "upstream_provider": result.upstream_provider,
        "provider_generation_id": result.generation_id or "",
        "served_model": result.served_model, "system_fingerprint": result.system_fingerprint,
        "cached_tokens": result.cached_tokens, "http_attempts": result.http_attempts,
    }


def _cost(result: CompletionResult, model_id: str) -> float:
    return recorded_cost(model_id, result)


def _attempt_row(item: Generation, number: int, attempt: AttemptRecord,
                 seed: int | None) -> GenerationAttempt:
    result = attempt.result
    row = GenerationAttempt(generation=item, number=number, outcome=attempt.outcome,
                            error=attempt.error, seed=seed)
    if result is not None:
        for name, value in _provider_fields(result).items():
            setattr(row, name, value)
        row.text = result.text
        row.reasoning = result.reasoning
        row.refusal = result.refusal
        row.prompt_tokens = result.prompt_tokens
        row.completion_tokens = result.completion_tokens
        row.reasoning_tokens = result.reasoning_tokens
        row.cost_usd = _cost(result, item.model.openrouter_id)
        row.cost_estimated = result.cost_usd is None
        row.latency_ms = result.latency_ms
    return row
