"""On Redis (the cache every web process shares) the arena counts a vote against its five
limits in one round trip: the counts must be django-ratelimit's own, read and added to by
`get_usage` like any other."""

from __future__ import annotations

import uuid

import pytest
from django_ratelimit.core import get_usage

from audits_app.arena import ratelimits


@pytest.fixture
def shared_cache(redis_url, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": redis_url,
                                   "KEY_PREFIX": f"bb-arena-limits-{uuid.uuid4().hex[:8]}"}}


def usage(request, limit, key) -> int:
    group, rate = limit
    return get_usage(request, group=group, key=key, rate=rate)["count"]


def test_vote_counts_on_redis_are_django_ratelimits_counts(shared_cache, rf):
    request = rf.post("/arena/arena.0/vote/", REMOTE_ADDR="10.1.2.3")
    by_voter = lambda group, request: "voter-key"  # noqa: E731
    by_pair = lambda group, request: f"{ratelimits.connection_key(group, request)}|7"  # noqa: E731
    # One vote counted by get_usage itself first: the batch adds to the same count.
    get_usage(request, group=ratelimits.VOTES_HARD[0], key=ratelimits.connection_key,
              rate=ratelimits.VOTES_HARD[1], increment=True)

    for _ in range(3):
        ratelimits.vote_limits(request, "voter-key", 7)

    assert usage(request, ratelimits.VOTES_HARD, ratelimits.connection_key) == 4
    assert usage(request, ratelimits.VOTES_PER_VOTER, by_voter) == 3
    assert usage(request, ratelimits.VOTES_PER_CONNECTION, ratelimits.connection_key) == 3
    assert usage(request, ratelimits.VOTES_PER_CONNECTION_DAY, ratelimits.connection_key) == 3
    assert usage(request, ratelimits.VOTES_PER_PAIR, by_pair) == 3
    assert ratelimits.pair_limited(request) is False
    assert usage(request, ratelimits.PAIRS_HARD, ratelimits.connection_key) == 1


def test_past_a_limit_on_redis_votes_are_shadowed_then_refused(shared_cache, rf, monkeypatch):
    monkeypatch.setattr(ratelimits, "VOTES_PER_PAIR", ("arena.votes.pair", "2/d"))
    monkeypatch.setattr(ratelimits, "VOTES_HARD", ("arena.votes.hard", "3/h"))
    request = rf.post("/arena/arena.0/vote/", REMOTE_ADDR="10.1.2.4")

    found = [ratelimits.vote_limits(request, f"voter-{n}", 7) for n in range(4)]

    # New voters (consenting again) on one network: the per-pair limit still counts them.
    assert [limits.soft for limits in found] == [False, False, True, True]
    assert [limits.hard for limits in found] == [False, False, False, True]
