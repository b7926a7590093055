"""What the writing model sees (DESIGN section 3), and the prompt it receives.

The writer sees the organisation, the situation, the facts numbered but unlabelled, the
uncertainties with their assessment and note, the confidential facts marked internal and, for
T2 and T4, the reporter's questions. Never the labels or the instruments: attitude and
knowledge questions, control text, human baselines. Pure functions over the file schema.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from scenarios_app.prompt_texts import HEADINGS
from scenarios_app.schemas import ScenarioFile

TASKS_WITH_QUESTIONS = {"T2", "T4"}


def render_for_writer(document: ScenarioFile, task_code: str) -> str:
    words = HEADINGS[document.language]
    lines = [
        f"{words['organisation']}: {document.organisation.name}. "
        f"{document.organisation.description}",
        "",
        f"{words['situation']}:",
        document.situation,
        "",
        f"{words['facts']}:",
        *(f"{index}. {fact.text}" for index, fact in enumerate(document.facts, 1)),
        "",
        f"{words['uncertainties']}:",
        *(
            f"- {item.text} {words['assessment']}: {words['strength'][item.strength]}. "
            f"{item.note}"
            for item in document.uncertainties
        ),
        "",
        f"{words['confidential']}:",
        *(f"- {item.text}" for item in document.confidential),
    ]
    if task_code in TASKS_WITH_QUESTIONS:
        lines += ["", f"{words['questions']}:"]
        lines += [f"{i}. {q}" for i, q in enumerate(document.journalist_questions, 1)]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class WriterPrompt:
    """The exact words sent to a writing model, and their hash."""

    messages: tuple[tuple[str, str], ...]  # (role, content)

    @property
    def sha256(self) -> str:
        encoded = json.dumps(self.messages, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(encoded.encode("utf-8")).hexdigest()

    @property
    def text(self) -> str:
        return "\n\n".join(content for _, content in self.messages)


def assemble_writer_prompt(
    *, document: ScenarioFile, task_code: str, brief: str, overlay: str
) -> WriterPrompt:
    """Task brief + condition overlay + the writer's rendering, one user message.

    Nothing here depends on the model: every writer gets the same words (DESIGN section 1).
    """
    brief_text = brief.format(organisation=document.organisation.name)
    content = "\n\n".join([brief_text, overlay, render_for_writer(document, task_code)])
    return WriterPrompt(messages=(("user", content),))
