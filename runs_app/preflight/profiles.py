"""What a release will send: every kind of call, how many, and how long its prompts are.

A `CallProfile` is one kind of call of one stage (a T1 writer prompt, a juror reading a T2
text, a reader's no-text baseline, ...) with the planned calls per model and the sizes of its
prompts. The prompts are assembled by the stages' own prompt builders from the release's
pinned scenarios, briefs, overlays and scoring version, so a change to a prompt changes the
estimate with it. Only the texts that do not exist yet are stand-ins: a *typical* text (the
length its task brief asks for) for the low estimate, and a text that fills the whole text
budget for the high one and for the context check.

Token counts are estimated, not tokenised: tokens ≈ characters / 4 (OpenAI's rule of thumb
for English; Dutch runs a little longer per token, well inside the low-high range), plus 4
tokens per chat message for the format. Words ≈ 3/4 of a token (the same rule, from words).

Planned calls split `Stage.planned_calls(config)` among models (the sums are equal: tested):
writers write their own cells, the reader reads, each juror sits on the juries that
`runs_app.jury.jury_assignments` draws for the release's own text keys (the same juries the
run will seat), and the cross-examination's judge is the first juror of each T4 text.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from runs_app import crossexam as interview
from runs_app.call_kinds import CALL_KINDS, call_request, reasoning_cap
from runs_app.jury import PoolMember, juror_messages, jury_assignments, refusal_messages
from runs_app.readers import (
    Revealed,
    journalist_messages,
    judge_messages,
    load_panel,
    reader_brief,
    reader_messages,
    reveal_messages,
    reveal_positions,
)
from runs_app.schemas import ReleaseConfig
from runs_app.scoring_versions import ScoringFile
from scenarios_app.rendering import assemble_writer_prompt
from scenarios_app.schemas import ScenarioFile

CHARS_PER_TOKEN = 4
MESSAGE_TOKENS = 4
TOKENS_PER_WORD = 4 / 3

# A typical text is as long as its brief allows (scenarios_app/prompt_texts.py: T1 and T2
# at most 400 words, T3 at most 80, T4 at most 120 per answer): models asked for "at most N
# words" mostly write close to N.
TYPICAL_TEXT_WORDS = {"T1": 400, "T2": 400, "T3": 80, "T4": 120}

# Completion tokens of a typical valid reply, for the low estimate. Sizes of the JSON each
# role is asked for, filled as a model fills it:
TYPICAL_REPLY_TOKENS = {
    "refusal": 50,  # a verdict and a one-sentence reason
    # ~12 claims, each a quote of ~15 words with its label and fact ids, the facts conveyed
    # and the techniques found
    "juror": 500,
    "reader": 60,  # three attitudes and four knowledge answers
    "reveal": 30,  # three attitudes again
    "journalist": 250,  # whether it runs a story, a headline and an opening paragraph
    "frame_judge": 40,  # a 1-5 rating and a reason
    "crossexam": 60,  # one follow-up question
    "answer_judge": 360,  # a label and a reason for each of the six answers
}

# What the journalist's story typically is, for the frame judge's prompt.
TYPICAL_STORY_TOKENS = 200
FILLER = "The organisation has set out what happened and what it is now doing about it. "


@dataclasses.dataclass(frozen=True)
class CallProfile:
    """One kind of call of one stage."""

    stage: str
    role: str  # writer, juror, reader, journalist, judge
    purpose: str  # the request's purpose (runs_app.providers.base.CompletionRequest)
    calls: Mapping[str, float]  # model id -> planned calls (every reply valid at once)
    prompt_low: float  # mean prompt tokens of a call when texts are of typical length
    prompt_high: float  # ... when every text fills its budget
    longest_prompt: int  # the longest prompt sampled, texts at their full budget
    # The completion budget a call asks for (`runs_app.call_kinds`), of a model given no
    # reasoning room; a reasoning model's structured replies add its cap (`budget`).
    max_tokens: int
    typical_reply: float  # completion tokens of a typical reply, no reasoning
    attempts: int  # most calls one planned call may take (max_attempts, max_reply_attempts)
    reasoning_tokens: int = 0  # of max_tokens, the part left for reasoning (writers)
    # model id -> the reasoning cap its requests add to max_tokens (reasoning models only)
    reasoning_caps: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def budget(self, model_id: str) -> int:
        """The `max_tokens` a call of this kind to this model sends."""
        return self.max_tokens + self.reasoning_caps.get(model_id, 0)

    def reasoning_budget(self, model_id: str) -> int:
        """Of `budget`, the tokens that may go to reasoning."""
        return self.reasoning_tokens + self.reasoning_caps.get(model_id, 0)

    @property
    def total_calls(self) -> float:
        return sum(self.calls.values())


@dataclasses.dataclass(frozen=True)
class PromptInputs:
    """Everything the prompts are built from, as plain data."""

    config: ReleaseConfig  # pinned: scenarios are slug@hash
    documents: Mapping[str, ScenarioFile]  # slug@hash -> document, in the config's order
    briefs: Mapping[str, str]  # task code -> brief
    overlays: Mapping[str, str]  # condition code -> overlay
    scoring: ScoringFile


def tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def message_tokens(messages: Iterable[Any]) -> int:
    """Prompt tokens of chat messages: `Message`s or (role, content) pairs."""
    total = 0
    for message in messages:
        content = message.content if hasattr(message, "content") else message[1]
        total += tokens(content) + MESSAGE_TOKENS
    return total


def stand_in_text(token_count: float) -> str:
    """A text of about `token_count` tokens, for texts not written yet."""
    chars = int(token_count * CHARS_PER_TOKEN)
    return (FILLER * (chars // len(FILLER) + 1))[:chars]


def typical_text_tokens(task: str) -> float:
    return TYPICAL_TEXT_WORDS[task] * TOKENS_PER_WORD


class _Sampler:
    """Builds the profiles of one release; one method per stage."""

    def __init__(self, inputs: PromptInputs) -> None:
        self.inputs = inputs
        self.config = config = inputs.config
        self.jury_texts = inputs.scoring.jury
        self.texts = inputs.scoring.language(config.language)
        self.panel = load_panel(config.panel, config.language)
        self.cells_per_task = config.texts / len(config.tasks)
        self._prompts: dict[str, list[str]] = {}

    # -- shared ------------------------------------------------------------------------

    def writer_prompts(self, task: str) -> list[tuple[ScenarioFile, str]]:
        """(document, prompt) for every scenario and condition of a task."""
        documents = self.inputs.documents.values()
        return [(document, assemble_writer_prompt(
                    document=document, task_code=task, brief=self.inputs.briefs[task],
                    overlay=self.inputs.overlays[condition]).text)
                for document in documents for condition in self.config.conditions]

    def profile(self, stage: str, role: str, purpose: str, calls: Mapping[str, float], *,
                low: Sequence[int], high: Sequence[int], reply: float,
                attempts: int) -> CallProfile:
        """The budgets are the requests' own (`call_request`), so preflight checks what
        the stages will send."""
        kind = purpose.split()[0]
        writes = CALL_KINDS[kind].role == "writer"
        caps = {model: reasoning_cap(kind, model, self.config) for model in calls}
        return CallProfile(
            stage=stage, role=role, purpose=purpose, calls=dict(calls),
            prompt_low=statistics.fmean(low), prompt_high=statistics.fmean(high),
            longest_prompt=max(high),
            max_tokens=call_request(kind, config=self.config, model="").max_tokens,
            typical_reply=reply, attempts=attempts,
            reasoning_tokens=self.config.reasoning_budget if writes else 0,
            reasoning_caps={model: cap for model, cap in caps.items() if cap})

    def texts_of(self, task: str) -> tuple[str, str]:
        """A typical text of the task and one that fills the text budget."""
        return (stand_in_text(typical_text_tokens(task)),
                stand_in_text(self.config.text_budget))

    def per_writer(self, calls_per_text: float, tasks: Iterable[str] | None = None) -> dict:
        cells = self.config.texts / len(self.config.writers)
        if tasks is not None:
            cells = cells * len(list(tasks)) / len(self.config.tasks)
        return {writer: cells * calls_per_text for writer in self.config.writers}

    # -- stages ------------------------------------------------------------------------

    def generate(self) -> list[CallProfile]:
        config = self.config
        profiles = []
        for task in config.tasks:
            sizes = [message_tokens([("user", prompt)]) for _, prompt in self.writer_prompts(task)]
            calls = {writer: self.cells_per_task / len(config.writers) for writer in config.writers}
            profiles.append(self.profile(
                "generate", "writer", f"write {task}", calls, low=sizes, high=sizes,
                reply=typical_text_tokens(task), attempts=config.max_attempts))
        return profiles

    def refusal(self) -> list[CallProfile]:
        profiles = []
        for task in self.config.tasks:
            typical, full = self.texts_of(task)
            prompts = [prompt for _, prompt in self.writer_prompts(task)]
            low = [message_tokens(refusal_messages(jury=self.jury_texts, assignment=p,
                                                   text=typical)) for p in prompts]
            high = [message_tokens(refusal_messages(jury=self.jury_texts, assignment=p,
                                                    text=full)) for p in prompts]
            profiles.append(self.reply_profile("refusal", "reader", "refusal", task,
                                               {self.config.reader: self.cells_per_task},
                                               low, high))
        return profiles

    def reply_profile(self, stage: str, role: str, purpose: str, task: str,
                      calls: Mapping[str, float], low: Sequence[int],
                      high: Sequence[int]) -> CallProfile:
        return self.profile(stage, role, f"{purpose} {task}", calls, low=low, high=high,
                            reply=TYPICAL_REPLY_TOKENS[purpose],
                            attempts=self.config.max_reply_attempts)

    def jury(self) -> list[CallProfile]:
        seats = self.seats()
        profiles = []
        for task in self.config.tasks:
            typical, full = self.texts_of(task)
            documents = list(self.inputs.documents.values())
            low = [message_tokens(juror_messages(jury=self.jury_texts, document=d,
                                                 text=typical)) for d in documents]
            high = [message_tokens(juror_messages(jury=self.jury_texts, document=d,
                                                  text=full)) for d in documents]
            profiles.append(self.reply_profile("jury", "juror", "juror", task, seats[task],
                                               low, high))
        return profiles

    def juries(self) -> dict[tuple[str, str], list[tuple[str, ...]]]:
        """(writer, task) -> the juries of those texts, drawn as the run draws them."""
        config = self.config
        pool = [PoolMember(model_id, config.family_of(model_id)) for model_id in config.jurors]
        found: dict[tuple[str, str], list[tuple[str, ...]]] = collections.defaultdict(list)
        for writer in config.writers:
            keys = {"|".join([writer, pin, task, condition, str(variant)]): task
                    for pin in self.inputs.documents for task in config.tasks
                    for condition in config.conditions for variant in range(config.variants)}
            chosen = jury_assignments(pool=pool, writer_family=config.family_of(writer),
                                      release_code=config.code, text_keys=keys,
                                      size=config.jury_size)
            for key, jury in chosen.items():
                found[(writer, keys[key])].append(jury)
        return found

    def seats(self) -> dict[str, collections.Counter]:
        """task -> juror -> seats."""
        seats: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for (_, task), juries in self.juries().items():
            for jury in juries:
                seats[task].update(jury)
        return seats

    def panel_stage(self) -> list[CallProfile]:
        config, positions = self.config, self.panel.positions
        briefs = {pin: reader_brief(document, config.language)
                  for pin, document in self.inputs.documents.items()}
        baseline = []
        for pin, document in self.inputs.documents.items():
            stimuli = [None, document.control_text, *(h.text for h in document.human_baselines)]
            baseline += [message_tokens(reader_messages(self.texts, briefs[pin], position, s))
                         for s in stimuli for position in positions]
        # Every position reads the same stimuli: the baseline calls are exactly these prompts.
        profiles = [self.profile("panel", "reader", "reader baselines",
                                 {config.reader: len(baseline)}, low=baseline, high=baseline,
                                 reply=TYPICAL_REPLY_TOKENS["reader"],
                                 attempts=config.max_reply_attempts)]
        for task in config.tasks:
            typical, full = self.texts_of(task)
            low, high = [], []
            for brief in briefs.values():
                for position in positions:
                    low.append(message_tokens(reader_messages(self.texts, brief, position,
                                                              typical)))
                    high.append(message_tokens(reader_messages(self.texts, brief, position,
                                                               full)))
            profiles.append(self.reply_profile(
                "panel", "reader", "reader", task,
                {config.reader: self.cells_per_task * len(positions)}, low, high))
        return profiles

    def reveal(self) -> list[CallProfile]:
        config = self.config
        positions = reveal_positions(self.panel)
        profiles = []
        for task in config.tasks:
            typical, full = self.texts_of(task)
            low, high = [], []
            for document in self.inputs.documents.values():
                brief = reader_brief(document, config.language)
                # The upper end of what a reader learns: every incriminating fact left out.
                omitted = [f for f in document.facts if f.label == "incriminating"]
                revealed = Revealed(tuple(f.text for f in omitted), tuple(f.id for f in omitted),
                                    ())
                for position in positions:
                    low.append(message_tokens(reveal_messages(self.texts, brief, position,
                                                              typical, revealed)))
                    high.append(message_tokens(reveal_messages(self.texts, brief, position,
                                                               full, revealed)))
            profiles.append(self.reply_profile(
                "reveal", "reader", "reveal", task,
                {config.reader: self.cells_per_task * len(positions)}, low, high))
        return profiles

    def uptake(self) -> list[CallProfile]:
        config = self.config
        journalist = config.journalist or ""
        story = stand_in_text(TYPICAL_STORY_TOKENS)
        profiles = []
        for task in config.tasks:
            typical, full = self.texts_of(task)
            briefs = [reader_brief(d, config.language) for d in self.inputs.documents.values()]
            calls = {journalist: self.cells_per_task}
            profiles.append(self.reply_profile(
                "uptake", "journalist", "journalist", task, calls,
                [message_tokens(journalist_messages(self.texts, b, typical)) for b in briefs],
                [message_tokens(journalist_messages(self.texts, b, full)) for b in briefs]))
            # The frame judge runs when the journalist runs a story; planned as if always.
            profiles.append(self.reply_profile(
                "uptake", "journalist", "frame_judge", task, calls,
                [message_tokens(judge_messages(self.texts, typical, "Headline", story))],
                [message_tokens(judge_messages(self.texts, full, "Headline", story))]))
        return profiles

    def crossexam(self) -> list[CallProfile]:
        config = self.config
        if "T4" not in config.tasks:
            return []
        typical, full = self.texts_of("T4")
        question_low = stand_in_text(TYPICAL_REPLY_TOKENS["crossexam"])
        question_high = stand_in_text(interview.QUESTION_MAX_TOKENS)
        sizes: dict[str, tuple[list[int], list[int]]] = {
            name: ([], []) for name in ("journalist", "writer", "judge")}
        for document, prompt in self.writer_prompts("T4"):
            picture = interview.journalist_picture(document)
            for index, (answer, question) in enumerate(((typical, question_low),
                                                        (full, question_high))):
                turns = [interview.Turn(interview.SPOKESPERSON, answer)]
                for _ in range(interview.FOLLOW_UPS):
                    sizes["journalist"][index].append(message_tokens(
                        interview.journalist_messages(self.texts, picture, turns)))
                    turns.append(interview.Turn(interview.JOURNALIST, question))
                    sizes["writer"][index].append(message_tokens(
                        interview.writer_messages(prompt, turns)))
                    turns.append(interview.Turn(interview.SPOKESPERSON, answer))
                sizes["judge"][index].append(message_tokens(
                    interview.label_messages(self.texts, document, turns)))
        judges: collections.Counter = collections.Counter()
        for (_, task), juries in self.juries().items():
            if task == "T4":
                judges.update(jury[0] for jury in juries)
        questions = {config.journalist or "": self.cells_per_task * interview.FOLLOW_UPS}
        return [
            self.reply_profile("crossexam", "journalist", "crossexam", "T4", questions,
                               *sizes["journalist"]),
            self.profile("crossexam", "writer", "write T4 answers",
                         self.per_writer(interview.FOLLOW_UPS, ["T4"]), low=sizes["writer"][0],
                         high=sizes["writer"][1], reply=typical_text_tokens("T4"),
                         attempts=config.max_attempts),
            self.reply_profile("crossexam", "judge", "answer_judge", "T4", judges,
                               *sizes["judge"]),
        ]


def call_profiles(inputs: PromptInputs) -> list[CallProfile]:
    """Every kind of call of every stage the release runs, in chain order."""
    sampler = _Sampler(inputs)
    by_stage = {"generate": sampler.generate, "refusal": sampler.refusal, "jury": sampler.jury,
                "panel": sampler.panel_stage, "uptake": sampler.uptake,
                "reveal": sampler.reveal, "crossexam": sampler.crossexam}
    return [profile for stage in inputs.config.stages for profile in by_stage[stage]()]
