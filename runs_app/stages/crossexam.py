"""The cross-examination stage: does a T4 message hold over six answers? (DESIGN section 2)

One row per T4 text the refusal check found complied or partial. The text is the
spokesperson's first answer; then five times the journalist agent (`config.journalist`) asks a
follow-up in JSON and the writer model itself answers, seeing its original prompt, its earlier
answers (as assistant messages) and the questions (as user messages). Finally a judge, the
first juror of the text's jury (never the writer's family), rates the whole transcript;
steadfastness is `runs_app.crossexam.steadfastness`. Calls per text: 5 + 5 + 1 = 11, plus
retries.

The whole exchange of a row runs in one `execute`, so a worker lost mid-interview loses the
row's calls and the row is interviewed again from the start (bounded by MAX_CLAIMS).
Every call gets its own budget: a writer answer cut at the token budget or empty is asked
again within `max_attempts` (section 5), an invalid journalist or judge reply within
`max_reply_attempts`, after which the row is unscored, never defaulted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from django.db import transaction

from runs_app.crossexam import (
    FOLLOW_UPS,
    JOURNALIST,
    JUDGE_MAX_TOKENS,
    QUESTION_MAX_TOKENS,
    SPOKESPERSON,
    JournalistPicture,
    SteadfastVerdict,
    Turn,
    journalist_messages,
    journalist_picture,
    judge_messages,
    parse_question,
    parse_verdict,
    steadfastness,
    writer_messages,
)
from runs_app.jury import InvalidReply
from runs_app.models import (
    AgentRun,
    Release,
    ReplyOutcome,
    ScoringVersion,
    TextScore,
    WorkStatus,
)
from runs_app.providers.base import CompletionRequest
from runs_app.providers.pool import ProviderPool
from runs_app.scoring_versions import LanguageTexts
from runs_app.stages.jury import release_juries
from runs_app.stages.panel import AgentRunStage, read_generations
from runs_app.stages.replies import Asked, ask_structured, reply_fields, usage_fields
from scenarios_app.schemas import ScenarioFile


@dataclasses.dataclass(frozen=True)
class CrossExamJob:
    writer: str
    writer_prompt: str
    first_answer: str
    seed: int
    picture: JournalistPicture
    document: ScenarioFile
    texts: LanguageTexts  # the release's scoring version, in the release's language
    journalist: str
    judge: str
    writer_max_tokens: int
    writer_attempts: int
    reply_attempts: int


@dataclasses.dataclass
class Call:
    purpose: str  # "crossexam" (journalist), "write", "steadfast_judge"
    turn: int  # the answer it leads to (1-5 follow-ups), 6 for the judge
    asked: Asked


@dataclasses.dataclass
class CrossExamOutcome:
    job: CrossExamJob
    turns: list[Turn]
    calls: list[Call] = dataclasses.field(default_factory=list)

    @property
    def last(self) -> Call:
        return self.calls[-1]

    @property
    def verdict(self) -> SteadfastVerdict | None:
        last = self.last
        return last.asked.reply if last.purpose == "steadfast_judge" else None


def _spoken(text: str) -> str:
    if not text.strip():
        raise InvalidReply("empty content")
    return text


async def ask_writer(request: CompletionRequest, attempts_left: int,
                     providers: ProviderPool) -> Asked:
    """One spokesperson answer: cut at the token budget or empty does not count (section 5)."""
    return await ask_structured(request, _spoken, attempts_left, providers)


class CrossExamStage(AgentRunStage):
    name = "crossexam"
    claim_related = ("release", "generation", "generation__model")
    kind = AgentRun.Kind.CROSSEXAM

    def __init__(self) -> None:
        super().__init__()
        self._judges: dict[int, dict[int, str]] = {}

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        return self.create_rows(release, (
            AgentRun(release=release, generation=generation, kind=self.kind, position="")
            for generation in read_generations(release, generation_ids).filter(task="T4")
            .only("pk")
        ), generation_ids)

    def planned_calls(self, config) -> int:
        t4_texts = config.texts // len(config.tasks) if "T4" in config.tasks else 0
        return t4_texts * (2 * FOLLOW_UPS + 1)

    def judge_for(self, release: Release, generation_id: int) -> str:
        """The first juror of the text's jury: the same jury the jury stage seats, so never
        the writer's family (section 1), balanced over each writer's texts."""
        if release.pk not in self._judges:
            juries = release_juries(release, self.config(release.pk))
            self._judges[release.pk] = {key: jury[0] for key, jury in juries.items()}
        return self._judges[release.pk][generation_id]

    def build(self, item: AgentRun) -> CrossExamJob:
        config = self.config(item.release_id)
        generation = item.generation
        document, _ = self.scenario(generation.scenario_version_id, config.language)
        return CrossExamJob(
            writer=generation.model.openrouter_id,
            # The T4 prompt is one user message, stored whole as the generation's prompt.
            writer_prompt=generation.prompt, first_answer=generation.text,
            seed=generation.variant, picture=journalist_picture(document), document=document,
            texts=ScoringVersion.texts_for_pin(config.scoring_version).language(config.language),
            journalist=config.journalist, judge=self.judge_for(item.release, generation.pk),
            writer_max_tokens=config.max_tokens, writer_attempts=config.max_attempts,
            reply_attempts=config.max_reply_attempts,
        )

    async def execute(self, job: CrossExamJob, providers: ProviderPool) -> CrossExamOutcome:
        outcome = CrossExamOutcome(job, turns=[Turn(SPOKESPERSON, job.first_answer)])
        for turn in range(1, FOLLOW_UPS + 1):
            question = await self._ask_journalist(job, outcome, turn, providers)
            if question is None:
                return outcome
            outcome.turns.append(Turn(JOURNALIST, question))
            answer = await self._ask_writer(job, outcome, turn, providers)
            if answer is None:
                return outcome
            outcome.turns.append(Turn(SPOKESPERSON, answer))
        request = CompletionRequest(
            model=job.judge, messages=judge_messages(job.texts, job.document, outcome.turns),
            max_tokens=JUDGE_MAX_TOKENS, temperature=0.0, json_mode=True,
            purpose="steadfast_judge",
        )
        asked = await ask_structured(request, parse_verdict, job.reply_attempts, providers)
        outcome.calls.append(Call("steadfast_judge", FOLLOW_UPS + 1, asked))
        return outcome

    @staticmethod
    async def _ask_journalist(job: CrossExamJob, outcome: CrossExamOutcome, turn: int,
                              providers: ProviderPool) -> str | None:
        request = CompletionRequest(
            model=job.journalist,
            messages=journalist_messages(job.texts, job.picture, outcome.turns),
            max_tokens=QUESTION_MAX_TOKENS, json_mode=True, purpose="crossexam",
        )
        asked = await ask_structured(request, parse_question, job.reply_attempts, providers)
        outcome.calls.append(Call("crossexam", turn, asked))
        return asked.reply

    @staticmethod
    async def _ask_writer(job: CrossExamJob, outcome: CrossExamOutcome, turn: int,
                          providers: ProviderPool) -> str | None:
        # The same budget rule and seed as the generation (section 5: writers keep their
        # own reasoning default).
        request = CompletionRequest(
            model=job.writer, messages=writer_messages(job.writer_prompt, outcome.turns),
            max_tokens=job.writer_max_tokens, seed=job.seed, purpose="write",
        )
        asked = await ask_writer(request, job.writer_attempts, providers)
        outcome.calls.append(Call("write", turn, asked))
        return asked.reply

    def record(self, item: AgentRun, outcome: CrossExamOutcome) -> dict[str, Any]:
        last = outcome.last
        # The call that ended the exchange decides the status: the judge's valid verdict,
        # or the first call that got no valid reply.
        fields = reply_fields(item, last.asked)
        fields |= {
            "attempts": item.attempts + sum(call.asked.attempts for call in outcome.calls),
            "raw_replies": list(item.raw_replies) + [
                entry | {"call": call.purpose, "turn": call.turn}
                for call in outcome.calls for entry in call.asked.raw_replies],
            "transcript": [turn.as_dict() for turn in outcome.turns],
            **usage_fields(item, *(call.asked for call in outcome.calls)),
            "result": {"judge": outcome.job.judge},
        }
        verdict = outcome.verdict
        if verdict is not None:
            fields["result"] |= {
                "message_held": verdict.message_held,
                "became_dishonest": verdict.became_dishonest, "reason": verdict.reason,
                "steadfastness": steadfastness(verdict.message_held, verdict.became_dishonest),
            }
            return fields
        fields["error"] = f"answer {last.turn}, {last.purpose}: {fields['error']}"
        if last.purpose == "write" and fields["status"] == WorkStatus.DONE:
            # Answers cut at the budget or empty never count (section 5): the interview is
            # incomplete, so the row fails and an operator may retry it, as a generation does.
            fields |= {"status": WorkStatus.FAILED, "outcome": ""}
        return fields

    def settle(self, release: Release) -> None:
        text_scores_update_steadfastness(release=release)


@transaction.atomic
def text_scores_update_steadfastness(*, release: Release) -> int:
    """Write `TextScore.steadfastness` of every finished cross-examination; None unless
    scored (an unscored or failed interview is never given a score). Returns how many."""
    rows = AgentRun.objects.filter(
        release=release, kind=AgentRun.Kind.CROSSEXAM,
        status__in=(WorkStatus.DONE, WorkStatus.FAILED),
    ).values_list("generation_id", "outcome", "result")
    written = 0
    for generation_id, outcome, result in rows:
        value = result.get("steadfastness") if outcome == ReplyOutcome.SCORED else None
        TextScore.objects.update_or_create(
            generation_id=generation_id,
            defaults={"release": release, "steadfastness": value},
        )
        written += 1
    return written
