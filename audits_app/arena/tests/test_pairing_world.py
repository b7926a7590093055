"""Pair selection on the arena's world (conftest.py): every pairing of writers that has a pair
is shown about as often as the others, through the real showing service."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from audits_app.arena.models import ArenaPair
from audits_app.arena.services import showing_create, voter_create

pytestmark = pytest.mark.django_db

VOTERS, PAIRS_EACH = 24, 15  # the demo's voters (`demo.DEMO_VOTERS`, `VOTES_PER_VOTER`)


def writer_pairing(pair: ArenaPair) -> str:
    return " vs ".join(sorted((pair.model_a.openrouter_id, pair.model_b.openrouter_id)))


def test_every_pairing_of_writers_that_exists_is_shown_about_as_often(open_arena):
    # The refuser writes like candid outside C2 and refuses C2, so no pair has both: balancing
    # the four writers' loads alone then showed advocate vs spinner once in 360 showings (the
    # others 80-100 times), and Bradley-Terry had nearly no votes between the two.
    pairs = {pair.pk: pair for pair in ArenaPair.objects.filter(release=open_arena)
             .select_related("model_a", "model_b")}
    shown = collections.Counter({writer_pairing(pair): 0 for pair in pairs.values()})
    rng = np.random.default_rng(11)
    for _ in range(VOTERS):
        voter = voter_create()
        for _ in range(PAIRS_EACH):
            showing = showing_create(release=open_arena, voter=voter, rng=rng, background=False)
            shown[writer_pairing(pairs[showing.pair_id])] += 1

    mean = VOTERS * PAIRS_EACH / len(shown)
    assert len(shown) == 5  # every two of the four writers but candid and the refuser
    assert all(abs(count - mean) <= 0.1 * mean for count in shown.values()), shown
