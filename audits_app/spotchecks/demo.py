"""The demo's spot-checks: a small seeded batch coded by two *simulated* auditors.

The demo runs offline on fixture models, so there are no people to check the jury. To show
the agreement section populated, two demo auditors code a seeded batch: each takes the jury's
majority label of a claim and, on a seeded share of claims, picks a different one. Every such
spot-check carries a note saying it is simulated; nothing here runs outside `manage.py demo`.
"""

from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from audits_app.models import SpotCheck
from audits_app.spotchecks.selectors import jury_texts
from audits_app.spotchecks.services import (
    LeaveOut,
    spotcheck_batch_create,
    spotcheck_record,
)
from audits_app.statistics.agreement import LABELS
from runs_app.models import Release

SIMULATED_NOTE = "Simulated demo auditor (fixture data, not a person)."
DEMO_AUDITORS = ("demo-auditor-1", "demo-auditor-2")


def demo_auditors() -> list:
    auditor_group = Group.objects.get(name="auditor")
    users = []
    for username in DEMO_AUDITORS:
        user, _ = get_user_model().objects.get_or_create(username=username,
                                                         defaults={"is_staff": True})
        user.groups.add(auditor_group)
        users.append(get_user_model().objects.get(pk=user.pk))  # fresh permission cache
    return users


def demo_spotchecks(*, release: Release, size: int = 24, disagree_share: float = 0.12,
                    leave_out: LeaveOut | None = None) -> int:
    """Create (once) and code a seeded batch, leaving out the texts `leave_out` names (as
    `spotcheck_batch_create`); returns the number of verdicts recorded."""
    if release.spotcheck_batches.exists():
        return 0
    auditors = demo_auditors()
    batch = spotcheck_batch_create(release=release, size=size, double_code_share=0.25,
                                   auditors=auditors, name="demo batch (simulated auditors)",
                                   leave_out=leave_out)
    texts = jury_texts(release)
    rng = np.random.default_rng(batch.seed)
    by_user = {user.pk: user for user in auditors}
    recorded = 0
    checks = list(SpotCheck.objects.filter(item__batch=batch).select_related(
        "generation__model", "generation__scenario_version__scenario", "auditor"))
    # Texts are planned, and checks queued, in a random order: code them in the order of their
    # cells, so the seeded auditors give the same verdicts to the same texts in every run.
    checks.sort(key=lambda check: (_cell(check.generation), check.auditor.username))
    for check in checks:
        text = texts[check.generation_id]
        labels = {claim.position: _simulated_label(claim.label, rng, disagree_share)
                  for claim in text.claims}
        conveyed = sorted({fact for facts in text.facts_conveyed.values() for fact in facts})
        spotcheck_record(
            check=check, user=by_user[check.auditor_id], claim_labels=labels,
            facts_conveyed=conveyed, techniques=[],
            agrees_with_jury=all(labels[c.position] == c.label for c in text.claims),
            note=SIMULATED_NOTE,
        )
        recorded += 1
    return recorded


def _simulated_label(jury_label: str, rng: np.random.Generator, disagree_share: float) -> str:
    if rng.random() >= disagree_share:
        return jury_label
    others = [label for label in LABELS if label != jury_label]
    return others[int(rng.integers(len(others)))]


def _cell(generation) -> tuple:
    return (generation.model.openrouter_id, generation.scenario_version.scenario.slug,
            generation.task, generation.condition, generation.variant)
