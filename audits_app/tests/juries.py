"""A deterministic jury for the spot-check, agreement and review tests: a release's texts
generated, then three jurors' verdicts and claims written directly (no jury stage run), and
the users who check them."""

from __future__ import annotations

import re

from django.contrib.auth.models import Group, User

from audits_app.statistics.agreement import LABELS
from runs_app.models import Claim, Generation, JurorVerdict, LlmModel, ReplyOutcome, WorkStatus
from runs_app.stages import get_stage
from runs_app.stages.base import drain

JURORS = ("fixture/juror-a", "fixture/juror-b", "fixture/juror-c")


def sentences(text: str, count: int) -> list[str]:
    parts = [part.strip() for part in re.split(r"(?<=[.!?])\s+", text) if len(part.strip()) > 20]
    return parts[:count]


def jury_labels(index: int, seat: int, claim: int) -> str:
    """A deterministic jury: labels vary by text and claim; seat 2 dissents on every third text."""
    label = LABELS[(index + claim * (index % 3)) % len(LABELS)]
    if seat == 2 and index % 3 == 0 and claim == 0:
        label = LABELS[(LABELS.index(label) + 1) % len(LABELS)]
    return label


def build_jury(release, labels=jury_labels, claims_per_text: int = 3) -> list[Generation]:
    """Generate the texts, then write scored verdicts and claims directly (three jurors each)."""
    drain(get_stage("generate"), release)
    return jury_verdicts_write(release, labels, claims_per_text)


def jury_verdicts_write(release, labels=jury_labels, claims_per_text: int = 3
                        ) -> list[Generation]:
    """`build_jury` on texts the release has already generated."""
    jurors = [LlmModel.objects.get(openrouter_id=model_id) for model_id in JURORS]
    # In the order of their cells, not of their ids: ids are planned in a random order, so
    # labelling by id gave other texts other labels (and so other disagreements, and other
    # spot-check draws) in every run.
    generations = list(Generation.objects.filter(release=release, status=WorkStatus.DONE)
                       .order_by("model__openrouter_id", "scenario_version__scenario__slug",
                                 "task", "condition", "variant"))
    for index, generation in enumerate(generations):
        quotes = sentences(generation.text, claims_per_text)
        for seat, juror in enumerate(jurors):
            verdict = JurorVerdict.objects.create(
                release=release, generation=generation, juror=juror, seat=seat,
                status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED,
                facts_conveyed=["F1", "F2"], techniques=["minimisation"] if seat else [],
            )
            Claim.objects.bulk_create([
                Claim(verdict=verdict, position=position, quote=quote,
                      label=labels(index, seat, position))
                for position, quote in enumerate(quotes)
            ])
    return generations


def make_user(username: str, role: str | None = "auditor", staff: bool = True) -> User:
    user = User.objects.create_user(username=username, password="pw", is_staff=staff)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user
