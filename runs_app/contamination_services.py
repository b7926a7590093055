"""The contamination check of a release (DESIGN section 6): probe, scan, keep the findings.

`contamination_check_run` probes every model of the release about every pinned scenario
(`runs_app.stages.probe`), then scans every stored output of every release for the canaries
of the release's scenarios, and writers' texts for long verbatim runs of the parts of a file
no writer is shown (`runs_app.contamination`). An output is everything a model wrote: the
text of a reply, its reasoning field and its refusal words. Findings are rows of the check,
replaced as a whole by each run, so a rerun finds what is there now and pays for no probe
twice. A probe that failed or waits out a provider's Retry-After is a gap the report counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.utils import timezone

from runs_app.contamination import (
    CanaryIndex,
    file_parts,
    hidden_ngrams,
    hidden_parts,
    verbatim_overlap,
)
from runs_app.models import (
    AgentRun,
    ContaminationCheck,
    ContaminationFinding,
    ContaminationProbe,
    CrossExamTurn,
    FindingKind,
    Generation,
    GenerationAttempt,
    JurorVerdict,
    ReaderResponse,
    RefusalCheck,
    Release,
    TrialReading,
    WorkStatus,
)
from runs_app.providers.pool import ProviderPool
from runs_app.stages.base import drain
from runs_app.stages.probe import ProbeStage
from scenarios_app.models import ScenarioVersion


@dataclasses.dataclass(frozen=True)
class Output:
    """One stored model output: who wrote it, where it is, and for a writer's text the
    scenario and the prompt it was shown (verbatim overlap counts only against those).
    `shows`: the generation whose text (or interview answer) this is, which other models
    read; `read`: the generation whose text the model was shown (a canary it quotes from
    there is no evidence)."""

    model: str
    text: str
    source: str
    release: str = ""
    scenario_id: int | None = None
    prompt: str = ""
    shows: int | None = None
    read: int | None = None


@dataclasses.dataclass
class CheckReport:
    check: ContaminationCheck
    probes_made: int
    probes_failed: int
    probes_waiting: int  # parked until a provider's Retry-After is over
    outputs_scanned: int
    findings: list[ContaminationFinding]


def contamination_check_run(*, release: Release, providers: ProviderPool | None = None,
                            concurrency: int | None = None) -> CheckReport:
    check, _ = ContaminationCheck.objects.get_or_create(release=release)
    # A probe that failed is asked again; a probe with a reply never is.
    ContaminationProbe.objects.filter(contamination_check=check,
                                      status=WorkStatus.FAILED).update(
        status=WorkStatus.PENDING, claims=0, error="")
    drained = drain(ProbeStage(), check, providers=providers, concurrency=concurrency)
    versions = list(ScenarioVersion.objects.filter(releases=release).select_related("scenario"))
    findings = _probe_findings(check, versions)
    scanned = 0
    index = CanaryIndex.build({v.scenario_id: v.content["canary"] for v in versions})
    hidden = {v.scenario_id: hidden_ngrams(hidden_parts(v.content), ()) for v in versions}
    # Per generation, the canaries its text and answers hold: `stored_outputs` yields a text
    # before the outputs of the models that read it.
    shown: dict[int, set[int]] = {}
    for output in stored_outputs():
        scanned += 1
        findings += _output_findings(check, output, index, hidden, shown)
    now = timezone.now()
    with transaction.atomic():
        ContaminationFinding.objects.filter(contamination_check=check).delete()
        ContaminationFinding.objects.bulk_create(_unique(findings))
        ContaminationCheck.objects.filter(pk=check.pk).update(
            probed_at=now, scanned_at=now, outputs_scanned=scanned)
    check.refresh_from_db()
    probes = ContaminationProbe.objects.filter(contamination_check=check)
    return CheckReport(check, drained.finished, probes.filter(status=WorkStatus.FAILED).count(),
                       probes.filter(status=WorkStatus.PENDING).count(), scanned,
                       list(check.findings.select_related("scenario")))


def _unique(findings: list[ContaminationFinding]) -> list[ContaminationFinding]:
    seen, kept = set(), []
    for finding in findings:
        key = (finding.model, finding.scenario_id, finding.kind, finding.source)
        if key not in seen:
            seen.add(key)
            kept.append(finding)
    return kept


def _probe_findings(check: ContaminationCheck,
                    versions: list[ScenarioVersion]) -> list[ContaminationFinding]:
    """A probe's reply or reasoning with the canary of its scenario, or repeating the file
    word for word: whatever the probe's status (a reply cut at the budget is no answer, but
    what it holds was said)."""
    by_version = {v.pk: v for v in versions}
    findings = []
    probes = ContaminationProbe.objects.filter(contamination_check=check).exclude(
        reply="", reasoning="")
    for probe in probes.iterator():
        version = by_version.get(probe.scenario_version_id)
        if version is None:
            continue
        index = CanaryIndex.build({version.scenario_id: version.content["canary"]})
        file_ngrams = hidden_ngrams(file_parts(version.content), ())
        for text, source in ((probe.reply, f"probe {probe.pk} ({probe.kind})"),
                             (probe.reasoning, f"probe {probe.pk} ({probe.kind}) reasoning")):
            for _, evidence in index.find(text):
                findings.append(ContaminationFinding(
                    contamination_check=check, model=probe.model,
                    scenario_id=version.scenario_id, kind=FindingKind.PROBE_CANARY,
                    evidence=evidence, source=source))
            overlap = verbatim_overlap(text, file_ngrams, shown=[probe.prompt])
            if overlap:
                findings.append(ContaminationFinding(
                    contamination_check=check, model=probe.model,
                    scenario_id=version.scenario_id, kind=FindingKind.PROBE_OVERLAP,
                    evidence=overlap, source=source))
    return findings


def _output_findings(check: ContaminationCheck, output: Output, index: CanaryIndex,
                     hidden: dict[int, set], shown: dict[int, set[int]]
                     ) -> list[ContaminationFinding]:
    """A canary in the output, unless the text the model read held it (a juror quoting a
    leaking text has seen the canary there, not in a scenario file); a verbatim overlap."""
    canaries = index.find(output.text)
    if output.shows is not None:
        shown.setdefault(output.shows, set()).update(key for key, _ in canaries)
    quoted = shown.get(output.read, set()) if output.read is not None else set()
    found = [ContaminationFinding(contamination_check=check, model=output.model,
                                  scenario_id=scenario_id, kind=FindingKind.OUTPUT_CANARY,
                                  evidence=evidence, source=output.source,
                                  source_release=output.release)
             for scenario_id, evidence in canaries if scenario_id not in quoted]
    if output.scenario_id in hidden and output.prompt:
        overlap = verbatim_overlap(output.text, hidden[output.scenario_id],
                                   shown=[output.prompt])
        if overlap:
            found.append(ContaminationFinding(
                contamination_check=check, model=output.model, scenario_id=output.scenario_id,
                kind=FindingKind.OUTPUT_OVERLAP, evidence=overlap, source=output.source,
                source_release=output.release))
    return found


# ---------------------------------------------------------------------------------------
# Every stored output, with the model that wrote it
# ---------------------------------------------------------------------------------------


def stored_outputs() -> Iterator[Output]:
    """Every text and reply a model produced, in every release (and in reader trials):
    generations and each attempt, refusal checks, jurors, readers, agents, the turns of
    cross-examinations; of each, what the model wrote: the text, the reasoning field, the
    refusal words (`_written`). Prompts and the texts embedded in them are not outputs of the
    model that read them, and are skipped."""
    configs: dict[int, Any] = {}

    def config(release_id: int):
        if release_id not in configs:
            configs[release_id] = Release.objects.get(pk=release_id).parsed_config()
        return configs[release_id]

    generations = Generation.objects.exclude(text="", reasoning="").values_list(
        "pk", "model__openrouter_id", "text", "reasoning", "release__code",
        "scenario_version__scenario_id", "prompt")
    for pk, model, text, reasoning, code, scenario_id, prompt in generations.iterator():
        if text:
            yield Output(model, text, f"generation {pk}", code, scenario_id, prompt, shows=pk)
        yield from _written(model, {"reasoning": reasoning}, f"generation {pk}", code,
                            scenario_id, prompt)
    attempts = GenerationAttempt.objects.exclude(text="", reasoning="", refusal="").values_list(
        "pk", "generation__model__openrouter_id", "text", "reasoning", "refusal",
        "generation__release__code", "generation__scenario_version__scenario_id",
        "generation__prompt")
    for pk, model, text, reasoning, refusal, code, scenario_id, prompt in attempts.iterator():
        yield from _written(model, {"text": text, "reasoning": reasoning, "refusal": refusal},
                            f"attempt {pk}", code, scenario_id, prompt)
    yield from _replies(RefusalCheck.objects.values_list(
        "pk", "release__code", "release_id", "raw_replies", "judge__openrouter_id",
        "generation_id"),
        "refusal check", lambda release_id, judge: judge or config(release_id).reader)
    yield from _replies(JurorVerdict.objects.values_list(
        "pk", "release__code", "release_id", "raw_replies", "juror__openrouter_id",
        "generation_id"),
        "juror verdict", lambda release_id, juror: juror)
    yield from _replies(ReaderResponse.objects.values_list(
        "pk", "release__code", "release_id", "raw_replies", "release_id", "generation_id"),
        "reader response", lambda release_id, _: config(release_id).reader)
    yield from _agent_outputs(config)
    yield from _crossexam_outputs(config)
    for pk, model, replies in TrialReading.objects.values_list(
            "pk", "candidate", "raw_replies").iterator():
        for number, entry in enumerate(replies or [], 1):
            yield from _written(model, entry, f"trial reading {pk} reply {number}")


def _written(model: str, entry: dict[str, Any], source: str, release: str = "",
             scenario_id: int | None = None, prompt: str = "", *, shows: int | None = None,
             read: int | None = None) -> Iterator[Output]:
    """What a model wrote in one reply (a raw reply, or a row's own fields): its text, its
    reasoning field (kept apart from the text, but the model's words all the same) and its
    refusal words, each an output of its own. Only the text is shown to other models."""
    for field in ("text", "reasoning", "refusal"):
        if entry.get(field):
            where = source if field == "text" else f"{source} {field}"
            yield Output(model, entry[field], where, release, scenario_id, prompt,
                         shows=shows if field == "text" else None, read=read)


def _replies(rows, label: str, model_of) -> Iterator[Output]:
    for pk, code, release_id, replies, who, generation_id in rows.iterator():
        for number, entry in enumerate(replies or [], 1):
            yield from _written(model_of(release_id, who), entry,
                                f"{label} {pk} reply {number}", code, read=generation_id)


def _agent_outputs(config) -> Iterator[Output]:
    """Agents' replies by who made each call; a cross-examination's spokesperson turns are
    the writer's own words (the whole-interview rows of releases run before
    `CrossExamTurn`), yielded first: the agents read them."""
    rows = AgentRun.objects.values_list("pk", "release__code", "release_id", "kind",
                                        "raw_replies", "transcript", "result",
                                        "generation__model__openrouter_id", "generation_id")
    for (pk, code, release_id, kind, replies, transcript, result, writer,
         generation_id) in rows.iterator():
        settings = config(release_id)
        if kind == AgentRun.Kind.CROSSEXAM:
            for number, turn in enumerate(transcript or [], 1):
                if turn.get("role") == "spokesperson" and turn.get("content"):
                    yield Output(writer, turn["content"], f"{kind} run {pk} turn {number}",
                                 code, shows=generation_id)
        for number, entry in enumerate(replies or [], 1):
            if kind == AgentRun.Kind.REVEAL:
                model = settings.reader
            elif entry.get("call") == "steadfast_judge":
                model = (result or {}).get("judge") or settings.journalist
            else:
                model = settings.journalist
            yield from _written(model or "", entry, f"{kind} run {pk} reply {number}", code,
                                read=generation_id)


def _crossexam_outputs(config) -> Iterator[Output]:
    """Each cross-examination turn's replies by who made each call, turn by turn: the
    journalist's question and the judge's labels (they read the text and the answers
    before them), the writer's answer (its reasoning and think block in the raw reply)."""
    rows = CrossExamTurn.objects.order_by("generation_id", "number").values_list(
        "pk", "release__code", "release_id", "number", "raw_replies",
        "generation__model__openrouter_id", "judge__openrouter_id", "generation_id")
    for pk, code, release_id, number, replies, writer, judge, generation_id in rows.iterator():
        for reply, entry in enumerate(replies or [], 1):
            source = f"cross-examination turn {pk} ({number}) reply {reply}"
            if entry.get("call") == "answer":
                yield from _written(writer, entry, source, code, shows=generation_id)
            else:
                model = config(release_id).journalist if entry.get("call") == "question" \
                    else judge
                yield from _written(model or "", entry, source, code, read=generation_id)


def canary_in_prompts() -> list[str]:
    """Stored prompts that contain a canary: there must be none (a canary is never shown to a
    model), else a finding in that model's output would prove nothing."""
    canaries = CanaryIndex.build({v.pk: v.content["canary"]
                                  for v in ScenarioVersion.objects.all()})
    return [f"generation {pk}" for pk, prompt in
            Generation.objects.exclude(prompt="").values_list("pk", "prompt").iterator()
            if canaries.find(prompt)]
