"""bench/arena.py run small: voters at once through consent, pair and vote under gunicorn, and
every vote recorded exactly once (none lost, none doubled, a second submission refused)."""

from __future__ import annotations

from bench import arena as arena_bench
from tests.scratch import Database

VOTERS = 6
VOTES = 3


def test_every_vote_of_a_crowd_is_recorded_exactly_once(tmp_path, redis_url, migrated_scratch,
                                                        production_static):
    """One site, two crowds of their own voters: one voting as fast as the server answers
    (a closed loop), then one offered at a pace (an open loop, as `--rate`). The site's
    database is a copy of the session's migrated one, on the suite's backend (a database of
    its own on the PostgreSQL server, else a SQLite file), and its static files are the
    session's collected ones: the bench then only opens the arena."""
    database = Database(tmp_path, template=migrated_scratch)
    try:
        crowds = arena_bench.run_crowds(database_url=database.url, voters=VOTERS, votes=VOTES,
                                        connections=4, workers=2, redis_url=redis_url,
                                        rates=[None, 30.0], migrated=True,
                                        static_root=str(production_static))
    finally:
        database.drop()
    assert len(crowds) == 2
    for figures in crowds:
        tally = figures["tally"]
        assert tally.errors == []
        assert tally.recorded == VOTERS * VOTES
        assert figures["stored"] == tally.recorded
        assert figures["twice"] == 0
        assert tally.refused_again == VOTERS
        assert len(tally.vote_ms) == VOTERS * VOTES
