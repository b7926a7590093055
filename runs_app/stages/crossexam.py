"""The cross-examination stage: does a T4 message hold over six answers? (DESIGN section 2)

Every T4 text the refusal check found complied or partial is interviewed turn by turn, each
turn its own row of `CrossExamTurn` (DESIGN section 5: a unit of work with a unique key):

- answer 1 is the T4 text itself, the writer's answer to the reporter's questions that its
  prompt lists; it was written (and retried under the budget rules) by `generate`;
- turns 2-6: the journalist agent (`config.journalist`) asks a follow-up in JSON, seeing the
  public picture and the interview so far; the writer model answers in role, seeing its
  original T4 prompt (its condition included), its earlier answers as assistant messages and
  the questions as user messages;
- turn 7: a judge, the first juror of the text's jury (never the writer's family), labels
  every answer in one call: "contradicts an earlier answer" needs the earlier answers anyway,
  and one call per interview costs a sixth of one per answer.

A turn is planned only once the turn before it is written (`plans_itself`): a worker lost
mid-interview loses only the calls it had in flight, the next drain resumes at the next turn,
and a finished turn is never asked again. Within a turn every call is a claim of its own
(`replies.ask_turn`): the question is written before the answer is asked for, and an invalid
reply before its repair turn or re-ask, so a killed worker never loses a reply it paid for.
Calls per read T4 text: 5 x 2 + 1 = 11, plus retries. A writer's answer is a writer's text
(section 5) and is read as `generate` reads one
(`runs_app.stages.generate.classify`, `runs_app.writer_text`): its reasoning and think block
are kept apart in its raw reply, a chat wrapper is taken off, and an answer cut at the token
budget, empty, in another language than the release's or wrapped past taking off is asked
again within `max_attempts`, after which the turn fails (an operator may retry it; the
question already asked is kept and not asked again). A refusal (the refusal field, a content
filter) is the writer refusing: the turn is done and refused at once, and the interview stops
there, unlabelled. An invalid journalist or judge reply is asked again within
`max_reply_attempts`, after which the interview is unscored, never defaulted; a question in
another language than the release's is invalid (`parse_question`), never put to the writer.
A turn parked for a provider's wait keeps the attempts it spent (`spent_calls`).
Steadfastness and honesty under pressure are `runs_app.crossexam`'s formulas.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Collection
from typing import Any

from django.db import transaction
from django.db.models import Q

from runs_app.call_kinds import call_request, writer_seed
from runs_app.crossexam import (
    FIRST_FOLLOW_UP,
    JOURNALIST,
    LABELS_TURN,
    AnswerLabel,
    Turn,
    honesty_under_pressure,
    interview,
    journalist_messages,
    journalist_picture,
    label_messages,
    parse_labels,
    parse_question,
    steadfastness,
    writer_messages,
)
from runs_app.models import (
    CrossExamTurn,
    GenerationAttempt,
    LlmModel,
    Release,
    ReplyOutcome,
    ScoringVersion,
    TextScore,
    WorkStatus,
)
from runs_app.providers.base import CompletionRequest, ProviderError
from runs_app.providers.pool import ProviderPool
from runs_app.scoring_versions import LanguageTexts
from runs_app.stages import replies
from runs_app.stages.base import given_back, parked
from runs_app.stages.generate import AttemptRecord, classify
from runs_app.stages.jury import release_juries
from runs_app.stages.panel import PublicStage, read_generations
from runs_app.stages.replies import (
    Asked,
    provider_failed,
    raw_entry,
    reply_fields,
    usage_fields,
)

Kind = CrossExamTurn.Kind


@dataclasses.dataclass(frozen=True)
class TurnJob:
    """A follow-up turn's next call: the journalist's question, or once an earlier claim
    kept it, the writer's answer."""

    number: int
    turns: tuple[Turn, ...]  # the interview so far, answer 1 first
    question: str  # kept by an earlier claim: the writer answers it, it is not asked again
    journalist: replies.Turn  # the question's next call (`replies.next_turn`)
    # The writer's request without its messages (the question comes first); the same
    # budget rule and seeds as the generation (section 5: writers keep their own reasoning
    # default): its seed is the first answer's, each re-ask adds `seed_stride`.
    writer: CompletionRequest
    writer_prompt: str
    writer_attempts: int
    reply_attempts: int
    language: str = "en"
    seed_stride: int = 1


@dataclasses.dataclass(frozen=True)
class LabelsJob:
    turn: replies.Turn  # the labels' next call (`replies.next_turn`)
    answers: int
    attempts_left: int


@dataclasses.dataclass
class TurnOutcome:
    question: str = ""
    journalist: Asked | None = None  # None: the question was asked in an earlier claim
    writer: Asked | None = None  # None: no valid question to answer


async def ask_writer(request: CompletionRequest, attempts_left: int, providers: ProviderPool,
                     language: str, *, seed_stride: int = 1) -> Asked:
    """One spokesperson answer, read as `generate` reads a text (`classify`): `reply` is the
    accepted `AttemptRecord` (a text, or the writer refusing), after at most `attempts_left`
    calls. A reply that does not count is asked again with the next seed (`writer_seed`:
    `seed_stride` more; the answer is prose, so no repair turn), each raw reply keeping its
    seed; the raw reply of the accepted one holds all its reasoning, the think block taken
    from its text included, and the wrapper lines taken off."""
    asked = Asked(model=request.model)
    for number in range(attempts_left):
        asked.attempts += 1
        call = request if request.seed is None else dataclasses.replace(
            request, seed=request.seed + number * seed_stride)
        try:
            result = await providers.complete(call)
        except ProviderError as error:
            return provider_failed(asked, error)  # as every stage's calls (`replies.ask_turn`)
        asked.count(result)
        entry = raw_entry(result) | {"seed": call.seed}
        asked.raw_replies.append(entry)
        attempt = classify(result, language, spoken=True)
        if attempt.outcome not in (GenerationAttempt.Outcome.OK,
                                   GenerationAttempt.Outcome.REFUSED):
            entry["invalid"] = attempt.error or attempt.outcome
            continue
        if attempt.text is not None:
            entry.update({key: value for key, value in (
                ("reasoning", attempt.text.reasoning),
                ("stripped", list(attempt.text.stripped))) if value})
        asked.reply, asked.failure, asked.permanent = attempt, "", False
        return asked
    return asked


def spent_calls(item: CrossExamTurn) -> Counter[str]:
    """The calls (question, answer) the turn's budgets have paid for: its last `attempts`
    replies. A turn given back after a wait (`parked`) keeps them, as a generation keeps its
    attempts across claims, so the question's `max_reply_attempts` and the answer's
    `max_attempts` count every reply since the turn was planned or an operator retried it
    (which sets `attempts` to 0 and keeps the replies). A throttled call used up no attempt
    and left no reply; any other provider error fails the turn."""
    replies = [entry for entry in item.raw_replies if "text" in entry]
    counted = replies[max(0, len(replies) - item.attempts):] if item.attempts else []
    return Counter(entry["call"] for entry in counted)


def next_turn(latest: tuple[int, str, str] | None) -> int | None:
    """The turn to plan after the text's latest row (number, status, outcome): the first
    follow-up when there is none, the next when the latest is done and scored, else none
    (one is pending or claimed, failed, unscored, or the labels are written)."""
    if latest is None:
        return FIRST_FOLLOW_UP
    number, status, outcome = latest
    if status == WorkStatus.DONE and outcome == ReplyOutcome.SCORED and number < LABELS_TURN:
        return number + 1
    return None


class CrossExamStage(PublicStage):
    name = "crossexam"
    answered_by_config = role = "journalist"
    work_model = CrossExamTurn
    plans_itself = True
    claim_related = ("release", "generation", "generation__model", "judge")

    def refused_filter(self) -> Q:
        return Q(status=WorkStatus.DONE) & ~Q(writer_refusal="")

    def __init__(self) -> None:
        super().__init__()
        self._judges: dict[int, dict[int, int]] = {}
        self._earlier: dict[int, list[tuple[str, str]]] = {}

    def plan(self, release: Release, generation_ids: Collection[int] | None = None) -> int:
        """Each read T4 text's next turn, when its previous one is written (see `next_turn`)."""
        texts = list(read_generations(release, generation_ids).filter(task="T4")
                     .values_list("pk", flat=True))
        if not texts:
            return 0
        self._check_scoring(release)
        latest: dict[int, tuple[int, str, str]] = {}
        rows = CrossExamTurn.objects.filter(release=release, generation_id__in=texts)
        for generation_id, *last in rows.order_by("number").values_list(
                "generation_id", "number", "status", "outcome"):
            latest[generation_id] = tuple(last)  # type: ignore[assignment]
        planned = []
        for generation_id in texts:
            number = next_turn(latest.get(generation_id))
            if number is not None:
                planned.append(self._row(release, generation_id, number))
        return self.create_rows(release, planned, generation_ids)

    def _row(self, release: Release, generation_id: int, number: int) -> CrossExamTurn:
        if number < LABELS_TURN:
            return CrossExamTurn(release=release, generation_id=generation_id, number=number,
                                 kind=Kind.TURN)
        return CrossExamTurn(release=release, generation_id=generation_id, number=number,
                             kind=Kind.LABELS, judge_id=self._judge_id(release, generation_id))

    def _check_scoring(self, release: Release) -> None:
        texts = ScoringVersion.texts_for_pin(self.config(release.pk).scoring_version)
        if not texts.labels_answers:
            raise ValueError(f"release {release.code} pins scoring version {texts.version}, "
                             f"which cannot label the answers of a cross-examination (v2 and "
                             f"later can): take crossexam out of its stages")

    def _judge_id(self, release: Release, generation_id: int) -> int:
        """The first juror of the text's jury: the same jury the jury stage seats, so never
        the writer's family (section 1), balanced over each writer's texts."""
        if release.pk not in self._judges:
            config = self.config(release.pk)
            ids = dict(LlmModel.objects.filter(openrouter_id__in=config.jurors)
                       .values_list("openrouter_id", "pk"))
            juries = release_juries(release, config)
            self._judges[release.pk] = {key: ids[jury[0]] for key, jury in juries.items()}
        return self._judges[release.pk][generation_id]

    def planned_calls(self, config) -> int:
        """Per T4 text: five follow-ups (a question and an answer each) and the labels."""
        t4_texts = config.texts // len(config.tasks) if "T4" in config.tasks else 0
        return t4_texts * (2 * (LABELS_TURN - FIRST_FOLLOW_UP) + 1)

    def prepare(self, items: list[CrossExamTurn]) -> None:
        """The finished follow-ups of a claimed batch's interviews, one query for the batch;
        kept per row until its `build` (rows claimed earlier may still wait for theirs)."""
        texts = {item.generation_id for item in items}
        done: dict[int, list[tuple[int, str, str]]] = defaultdict(list)
        for generation_id, number, question, answer in CrossExamTurn.objects.filter(
                generation_id__in=texts, kind=Kind.TURN, status=WorkStatus.DONE,
        ).values_list("generation_id", "number", "question", "answer"):
            done[generation_id].append((number, question, answer))
        for item in items:
            self._earlier[item.pk] = [(question, answer) for number, question, answer
                                      in sorted(done[item.generation_id])
                                      if number < item.number]

    def _follow_ups(self, item: CrossExamTurn) -> list[tuple[str, str]]:
        earlier = self._earlier.pop(item.pk, None)
        if earlier is None:
            self.prepare([item])
            earlier = self._earlier.pop(item.pk)
        if len(earlier) != item.number - FIRST_FOLLOW_UP:
            raise RuntimeError(f"{item}: turns before it are missing; it was planned early")
        return earlier

    def _texts(self, release_id: int) -> LanguageTexts:
        config = self.config(release_id)
        return ScoringVersion.texts_for_pin(config.scoring_version).language(config.language)

    def build(self, item: CrossExamTurn) -> TurnJob | LabelsJob:
        config = self.config(item.release_id)
        generation = item.generation
        document, _ = self.scenario(generation.scenario_version_id, config.language)
        turns = tuple(interview(generation.text, self._follow_ups(item)))
        texts = self._texts(item.release_id)
        if item.kind == Kind.LABELS:
            request = call_request("answer_judge", config=config,
                                   model=item.judge.openrouter_id,
                                   messages=label_messages(texts, document, turns))
            return LabelsJob(replies.next_turn(request, item), answers=len(turns) // 2 + 1,
                             attempts_left=max(0, config.max_reply_attempts - item.attempts))
        journalist = call_request(
            "crossexam", config=config, model=config.journalist,
            messages=journalist_messages(texts, journalist_picture(document), turns))
        # Seeds go on after every answer asked for this turn, an earlier claim's included.
        answered = sum(1 for entry in item.raw_replies if entry.get("call") == "answer")
        writer = call_request("write", config=config, model=generation.model.openrouter_id,
                              seed=writer_seed(generation.variant, answered, config.variants))
        spent = spent_calls(item)
        asked = replies.Kept(spent["question"], [entry for entry in item.raw_replies
                                                 if entry.get("call") == "question"])
        return TurnJob(
            number=item.number, turns=turns, question=item.question,
            journalist=replies.next_turn(journalist, asked),
            # The T4 prompt is one user message, stored whole as the generation's prompt.
            writer=writer, writer_prompt=generation.prompt,
            writer_attempts=max(0, config.max_attempts - spent["answer"]),
            reply_attempts=max(0, config.max_reply_attempts - spent["question"]),
            language=config.language, seed_stride=config.variants)

    async def execute(self, job: TurnJob | LabelsJob, providers: ProviderPool
                      ) -> TurnOutcome | Asked:
        """One call per claim: the labels; or the question, written before its answer is
        asked for; or one answer to a kept question (its seed after every answer asked)."""
        if isinstance(job, LabelsJob):
            return await replies.ask_turn(job.turn,
                                          lambda text: parse_labels(text, job.answers),
                                          job.attempts_left, providers)
        if not job.question:
            journalist = await replies.ask_turn(
                job.journalist, lambda text: parse_question(text, job.language),
                job.reply_attempts, providers)
            return TurnOutcome(question=journalist.reply or "", journalist=journalist)
        request = dataclasses.replace(job.writer, messages=writer_messages(
            job.writer_prompt, [*job.turns, Turn(JOURNALIST, job.question)]))
        writer = await ask_writer(request, min(1, job.writer_attempts), providers,
                                  job.language, seed_stride=job.seed_stride)
        if writer.reply is None and writer.answered and not writer.failure:
            writer.attempts_left = job.writer_attempts - writer.attempts
        return TurnOutcome(question=job.question, writer=writer)

    def record(self, item: CrossExamTurn, outcome: TurnOutcome | Asked) -> dict[str, Any]:
        if isinstance(outcome, Asked):
            return self._record_labels(item, outcome)
        calls = [(name, asked) for name, asked in (("question", outcome.journalist),
                                                   ("answer", outcome.writer)) if asked]
        fields: dict[str, Any] = {
            "attempts": item.attempts + sum(asked.attempts for _, asked in calls),
            "raw_replies": list(item.raw_replies) + [
                entry | {"call": name} for name, asked in calls for entry in asked.raw_replies],
            **usage_fields(item, *(asked for _, asked in calls)),
            "question": outcome.question,
        }
        if outcome.writer is None:
            if outcome.question:
                # The question is kept: its answer is the turn's next claim.
                return fields | given_back() | {"error": ""}
            # No valid question: asked again (its repair turn) while attempts are left, then
            # unscored (the interview stops); failed after provider errors (an operator may
            # retry).
            asked = reply_fields(item, outcome.journalist)
            # (A parked row, `parked`, keeps its wait: its claim token and not-before time.)
            keep = ("status", "outcome", "claim_token", "claimed_by", "lease_expires_at")
            return fields | {key: asked[key] for key in keep if key in asked} | {
                "error": f"question: {asked['error']}"}
        if outcome.writer.reply is None and outcome.writer.retry_after is not None:
            # The provider said to wait: the turn keeps its question and is asked later.
            return fields | parked(outcome.writer.retry_after,
                                   f"answer: {outcome.writer.failure}")
        if outcome.writer.reply is None and outcome.writer.attempts_left > 0:
            # An answer that does not count, with attempts left: the next claim asks again,
            # with the next seed.
            why = outcome.writer.raw_replies[-1]["invalid"]
            return fields | given_back() | {"error": f"answer: last reply invalid: {why}"}
        if outcome.writer.reply is None:
            # Answers cut at the budget, empty or lost to provider errors never count
            # (section 5): the turn fails, as a generation does, and keeps its question.
            reason = outcome.writer.failure or next(
                (entry["invalid"] for entry in reversed(outcome.writer.raw_replies)
                 if "invalid" in entry), "no answer")
            return fields | {"status": WorkStatus.FAILED, "outcome": "",
                             "error": f"answer: {reason}"}
        attempt: AttemptRecord = outcome.writer.reply
        if attempt.outcome == GenerationAttempt.Outcome.REFUSED:
            # The writer refusing, as a generation records it: no answer to label, so the
            # interview stops here (`next_turn` plans nothing after a turn not scored).
            words = attempt.text.text if attempt.text else ""
            finish = attempt.result.finish_reason if attempt.result else ""
            return fields | {"status": WorkStatus.DONE, "outcome": "", "error": "",
                             "writer_refusal": words or f"(no words; finish_reason {finish})"}
        return fields | {"status": WorkStatus.DONE, "outcome": ReplyOutcome.SCORED,
                         "error": "", "answer": attempt.text.text}

    @staticmethod
    def _record_labels(item: CrossExamTurn, asked: Asked) -> dict[str, Any]:
        fields = reply_fields(item, asked)
        labels: list[AnswerLabel] | None = asked.reply
        if labels is not None:
            fields["labels"] = [label.model_dump() for label in labels]
        return fields

    def settle(self, release: Release) -> None:
        text_scores_update_cross_examination(release=release)


@transaction.atomic
def text_scores_update_cross_examination(*, release: Release) -> int:
    """Write `TextScore.steadfastness` and `honesty_under_pressure` of every interview the
    judge labelled; None when the labels are unscored or failed (never a default score).
    Returns how many texts were written."""
    config = release.parsed_config()
    constants = ScoringVersion.texts_for_pin(config.scoring_version).crossexam
    if constants is None:
        return 0  # a version that cannot label answers planned no interview
    rows = CrossExamTurn.objects.filter(
        release=release, kind=Kind.LABELS, status__in=(WorkStatus.DONE, WorkStatus.FAILED),
    ).values_list("generation_id", "outcome", "labels")
    written = 0
    for generation_id, outcome, labels in rows:
        words = [entry["label"] for entry in labels]
        scored = outcome == ReplyOutcome.SCORED
        TextScore.objects.update_or_create(generation_id=generation_id, defaults={
            "release": release,
            "steadfastness": steadfastness(words, constants.answer_credit) if scored else None,
            "honesty_under_pressure": honesty_under_pressure(words) if scored else None,
        })
        written += 1
    return written
