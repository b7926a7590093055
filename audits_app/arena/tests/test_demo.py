"""The demo's arena: a marked demo approval, simulated votes marked as such, never twice."""

from __future__ import annotations

import pytest

from audits_app.arena.demo import DEMO_REFERENCE, SIMULATED_NOTE, demo_arena
from audits_app.arena.models import (
    ArenaEvent,
    ArenaResult,
    ArenaVote,
    EthicsReview,
    SimulatedPairVote,
)
from runs_app.models import WorkStatus

pytestmark = pytest.mark.django_db


def test_the_demo_opens_a_small_arena_with_simulated_votes_once(release, publisher):
    report = demo_arena(release=release, user=publisher, voters=3, votes_each=6)

    review = EthicsReview.objects.get()
    assert review.reference == DEMO_REFERENCE and "simulated" in review.reviewing_body
    assert review.document.read().startswith(b"%PDF-")
    assert ArenaEvent.objects.get().action == ArenaEvent.Action.OPEN
    votes = ArenaVote.objects.all()
    assert votes.count() == 18
    assert all(v.simulated and v.note == SIMULATED_NOTE for v in votes)
    assert not SimulatedPairVote.objects.exclude(status=WorkStatus.DONE).exists()
    assert "arena ranking, all pairs" in report and "Spearman" in report

    again = demo_arena(release=release, user=publisher, voters=3, votes_each=6)

    assert "0 simulated demo votes cast, 0 simulated-public answers" in again
    assert (EthicsReview.objects.count(), ArenaEvent.objects.count(), ArenaVote.objects.count(),
            ArenaResult.objects.count()) == (1, 1, 18, 1)
