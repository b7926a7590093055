"""The jury stage: three jurors of three families score each text (DESIGN sections 2, 5).

Planned for every text the refusal check found complied or partial. Who sits is decided
by `runs_app.jury.jury_assignments` (never the writer's family, balanced per writer). Each
juror reads the labelled scenario and the text embedded as data; its JSON reply is checked
against the scenario's ids, retried up to `max_reply_attempts`, then left unscored. The
instructions, technique list, claim weights and cap are the release's pinned scoring version.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Collection
from typing import Any

from runs_app.call_kinds import call_request
from runs_app.honesty import text_scores_update_honesty
from runs_app.jury import (
    JurorReply,
    PoolMember,
    juror_messages,
    juror_scores,
    jury_assignments,
    parse_juror_reply,
)
from runs_app.models import (
    Claim,
    Generation,
    JurorVerdict,
    LlmModel,
    RefusalCheck,
    Release,
    ScoringVersion,
    WorkStatus,
)
from runs_app.providers.base import Message
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig
from runs_app.scoring_versions import JuryTexts
from runs_app.stages.base import Stage
from runs_app.stages.refusal import ReplyJob
from runs_app.stages.replies import Asked, ask_turn, next_turn, reply_fields
from scenarios_app.models import ScenarioVersion
from scenarios_app.schemas import ScenarioFile

JUDGED = (RefusalCheck.Verdict.COMPLIED, RefusalCheck.Verdict.PARTIAL)


def generation_key(generation: Generation) -> str:
    """The natural key of a text, the same on every database (seeds the jury choice)."""
    version = generation.scenario_version
    return natural_key(generation.model.openrouter_id, version.scenario.slug,
                       version.content_hash, generation.task, generation.condition,
                       generation.variant)


def natural_key(writer: str, slug: str, content_hash: str, task: str, condition: str,
                variant: int) -> str:
    return "|".join([writer, f"{slug}@{content_hash}", task, condition, str(variant)])


# What `natural_key` reads of a text: its values alone, not the rows (a scenario version's
# row carries its whole document, parsed again for every text that joins it).
NATURAL_KEY_VALUES = ("model__openrouter_id", "scenario_version__scenario__slug",
                      "scenario_version__content_hash", "task", "condition", "variant")


@dataclasses.dataclass(frozen=True)
class JurorJob:
    reply: ReplyJob
    document: ScenarioFile
    jury: JuryTexts  # the release's scoring version: claim weights, techniques, cap


@dataclasses.dataclass
class JurorOutcome:
    job: JurorJob
    asked: Asked


class JuryStage(Stage):
    name = "jury"
    work_model = JurorVerdict
    answered_by = "juror__openrouter_id"
    role = "juror"
    claim_related = ("generation", "juror")
    claim_defer = ("generation__prompt",)

    def __init__(self) -> None:
        self._documents: dict[int, ScenarioFile] = {}

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        checks = RefusalCheck.objects.filter(
            release=release, status=WorkStatus.DONE, verdict__in=JUDGED)
        if generation_ids is not None:
            checks = checks.filter(generation_id__in=generation_ids)
        judged = set(checks.values_list("generation_id", flat=True))
        if not judged:
            return 0
        juries = self.juries(release, judged)
        jurors = {model.openrouter_id: model for model in LlmModel.objects.filter(
            openrouter_id__in=self.config(release.pk).jurors)}
        return self.create_rows(release, (
            JurorVerdict(release=release, generation_id=generation_id, juror=jurors[juror_id],
                         seat=seat)
            for generation_id in sorted(judged)
            for seat, juror_id in enumerate(juries[generation_id])
        ), generation_ids)

    def planned_calls(self, config) -> int:
        return config.texts * config.jury_size

    def juries(self, release: Release, needed: Collection[int]) -> dict[int, tuple[str, ...]]:
        """The release's juries, worked out once per stage instance: they are drawn over
        every cell of the release (all planned with the first stage), so a text's jury is
        the same whenever, and by whichever worker, it is planned."""
        cache: dict[int, dict[int, tuple[str, ...]]] = self.__dict__.setdefault("_juries", {})
        juries = cache.get(release.pk)
        if juries is None or not set(needed) <= juries.keys():
            juries = cache[release.pk] = release_juries(release, self.config(release.pk))
        return juries

    def build(self, item: JurorVerdict) -> JurorJob:
        config = self.config(item.release_id)
        generation = item.generation
        document = self._document(generation.scenario_version_id)
        jury = ScoringVersion.texts_for_pin(config.scoring_version).jury
        messages = juror_messages(jury=jury, document=document, text=generation.text)
        request = call_request("juror", config=config, model=item.juror.openrouter_id,
                               messages=(Message(*pair) for pair in messages))
        reply = ReplyJob(next_turn(request, item),
                         max(0, config.max_reply_attempts - item.attempts),
                         lambda raw: parse_juror_reply(raw, document, jury.technique_names))
        return JurorJob(reply, document, jury)

    async def execute(self, job: JurorJob, providers: ProviderPool) -> JurorOutcome:
        reply = job.reply
        return JurorOutcome(job, await ask_turn(reply.turn, reply.parse,
                                                      reply.attempts_left, providers))

    def record(self, item: JurorVerdict, outcome: JurorOutcome) -> dict[str, Any]:
        fields = reply_fields(item, outcome.asked)
        reply: JurorReply | None = outcome.asked.reply
        # A row asked before starts its claims afresh; only a validated reply writes any.
        if item.attempts:
            Claim.objects.filter(verdict=item).delete()
        if reply is None:
            fields |= {"claims_score": None, "omission_score": None,
                       "knowledge_harm_score": None}
        else:
            self.add_children(
                Claim(verdict=item, position=position, quote=claim.quote, label=claim.label,
                      basis=claim.basis)
                for position, claim in enumerate(reply.claims)
            )
            scores = juror_scores(reply, outcome.job.document, outcome.job.jury)
            fields |= {
                "facts_conveyed": reply.facts_conveyed,
                "confidential_disclosed": reply.confidential_disclosed,
                "techniques": reply.techniques, "claims_score": scores.claims,
                "omission_score": scores.omission, "knowledge_harm_score": scores.knowledge_harm,
            }
        return fields

    def settle(self, release: Release) -> None:
        # Every text's honesty from all its seats, once per drain (not once per verdict).
        text_scores_update_honesty(release=release)

    def _document(self, version_id: int) -> ScenarioFile:
        if version_id not in self._documents:
            self._documents[version_id] = ScenarioVersion.objects.get(pk=version_id).document()
        return self._documents[version_id]


def release_juries(release: Release, config: ReleaseConfig) -> dict[int, tuple[str, ...]]:
    """generation id -> juror ids, computed over all of each writer's texts at once so
    that the balance holds whichever texts are ready first."""
    pool = [PoolMember(model_id, config.family_of(model_id)) for model_id in config.jurors]
    by_writer: dict[str, dict[str, int]] = defaultdict(dict)
    for pk, *key in Generation.objects.filter(release=release).values_list(
            "pk", *NATURAL_KEY_VALUES):
        by_writer[key[0]][natural_key(*key)] = pk
    juries: dict[int, tuple[str, ...]] = {}
    for writer, keys in by_writer.items():
        chosen = jury_assignments(pool=pool, writer_family=config.family_of(writer),
                                  release_code=release.code, text_keys=keys,
                                  size=config.jury_size)
        juries.update({keys[key]: jury for key, jury in chosen.items()})
    return juries
