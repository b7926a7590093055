"""bench/arena.py run small: voters at once through consent, pair and vote under gunicorn, and
every vote recorded exactly once (none lost, none doubled, a second submission refused)."""

from __future__ import annotations

import os
import uuid

from bench import arena as arena_bench

VOTERS = 6
VOTES = 3


def database_url(tmp_path) -> str:
    """The suite's own server on a PostgreSQL run (a database of this test's own), else a
    SQLite file."""
    configured = os.environ.get("DATABASE_URL", "")
    if configured.startswith("postgres"):
        return f"{configured.rsplit('/', 1)[0]}/baitbench_arena_load_{uuid.uuid4().hex[:8]}"
    return f"sqlite:///{tmp_path / 'arena.sqlite3'}"


def test_every_vote_of_a_crowd_is_recorded_exactly_once(tmp_path, redis_url):
    """One site, two crowds of their own voters: one voting as fast as the server answers
    (a closed loop), then one offered at a pace (an open loop, as `--rate`)."""
    url = database_url(tmp_path)
    try:
        crowds = arena_bench.run_crowds(database_url=url, voters=VOTERS, votes=VOTES,
                                        connections=4, workers=2, redis_url=redis_url,
                                        rates=[None, 30.0])
    finally:
        arena_bench.drop_database(url)
    assert len(crowds) == 2
    for figures in crowds:
        tally = figures["tally"]
        assert tally.errors == []
        assert tally.recorded == VOTERS * VOTES
        assert figures["stored"] == tally.recorded
        assert figures["twice"] == 0
        assert tally.refused_again == VOTERS
        assert len(tally.vote_ms) == VOTERS * VOTES
