"""Rate limits for the arena, keyed without storing anyone's IP address (DESIGN section 9).

Counting is django-ratelimit's (`get_usage`): fixed windows in Django's cache, atomic
increments, keys hashed, entries expiring with their window, and it fails closed when the
cache is down. It is used as a library only (not in INSTALLED_APPS): its system check rejects
the local-memory cache of the embedded default, which is right for a multi-process site but
would stop `make demo`. With several web processes the cache must be shared: settings put it
on Redis when BAITBENCH_CACHE_URL or REDIS_URL is set. Behind a proxy the address counted is
the one the proxy forwards (`baitbench_site.security.client_address`).

A connection is keyed by HMAC-SHA256(secret, day | network): the network is the address
(IPv6 cut to its /64, which one household usually holds), the day makes the same address hash
differently tomorrow, and the secret makes the hash useless to anyone without it. The value is
never written to the database or a log; it lives only inside the cache's hashed key until the
window ends. Over a soft limit a vote is still recorded, as a shadow vote (it counts toward no
public result); over a hard limit the request is refused with 429.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import ipaddress
import time
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest
from django.utils import timezone
from django_ratelimit import ALL
from django_ratelimit import core as ratelimit_core
from django_ratelimit.core import get_usage
from redis.commands.core import Script

from baitbench_site.security import client_address

# (group, rate): a soft limit shadows, a hard one refuses. Rates read "count/period".
VOTES_PER_VOTER = ("arena.votes.voter", "20/10m")
VOTES_PER_CONNECTION = ("arena.votes.connection", "60/10m")
# Counted votes per network, however many voters it makes by consenting again: per pair
# (a household may hold two opinions of one pair), and per day.
VOTES_PER_PAIR = ("arena.votes.pair", "2/d")
VOTES_PER_CONNECTION_DAY = ("arena.votes.connection.day", "120/d")
VOTES_HARD = ("arena.votes.hard", "240/h")
PAIRS_HARD = ("arena.pairs.hard", "300/h")
VOTERS_HARD = ("arena.voters.hard", "30/h")


@dataclasses.dataclass(frozen=True)
class Limited:
    soft: bool  # count the vote as a shadow vote
    hard: bool  # refuse the request
    next_pair: bool = False  # show no next pair in the vote's answer (over PAIRS_HARD)


def connection_key(group: str, request: HttpRequest) -> str:
    """HMAC of today's date and the client's network; never the address itself. Worked out
    once per request: a vote counts against four limits keyed by it."""
    today = f"{timezone.now():%Y-%m-%d}"
    kept = getattr(request, "_arena_connection_key", None)
    if kept is None or kept[0] != today:
        kept = (today, _connection_key(today, request))
        request._arena_connection_key = kept
    return kept[1]


def origin_key(request: HttpRequest) -> str:
    """Where a vote came from, as wide as one person's connection can reach cheaply: an
    HMAC of today's date and the client's IPv4 /24 or IPv6 /48 (a household's or a small
    office's whole block), cut to 16 hex digits. Stored with each vote, and read only to
    count how many different origins a batch of results holds (`services.counted_through`):
    voters are cookies, which anyone makes by the dozen, but five origins take five
    networks. Never the address itself, and a new key every day."""
    today = f"{timezone.now():%Y-%m-%d}"
    return _network_key("arena-vote-origin", today, request, ipv4=24, ipv6=48)[:16]


def _connection_key(today: str, request: HttpRequest) -> str:
    return _network_key("arena-rate-limit", today, request, ipv4=32, ipv6=64)


def _network_key(purpose: str, today: str, request: HttpRequest, *, ipv4: int,
                 ipv6: int) -> str:
    """HMAC-SHA256 (a key of its own per `purpose`, from SECRET_KEY) of `today` and the
    client's network: its address cut to the first `ipv4` or `ipv6` bits."""
    address = client_address(request)
    try:
        parsed = ipaddress.ip_address(address)
        prefix = ipv6 if parsed.version == 6 else ipv4
        network = str(ipaddress.ip_network(f"{parsed}/{prefix}", strict=False).network_address)
    except ValueError:
        network = address
    message = f"{today}|{network}".encode()
    secret = hashlib.sha256(f"{purpose}|{settings.SECRET_KEY}".encode()).digest()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _over(request: HttpRequest, limit: tuple[str, str], key) -> bool:
    group, rate = limit
    usage = get_usage(request, group=group, key=key, rate=rate, increment=True)
    return bool(usage and usage["should_limit"])


# Each key's add-or-increment as django-ratelimit does it (SET NX with the window's expiry,
# then INCR), for every key of a request in one command: Redis runs a script whole.
_COUNT = Script(None, b"""
local counts = {}
for i, key in ipairs(KEYS) do
  redis.call('SET', key, 0, 'EX', ARGV[i], 'NX')
  counts[i] = redis.call('INCR', key)
end
return counts
""")


def _over_all(request: HttpRequest, limits: list[tuple[tuple[str, str], Any]]) -> list[bool]:
    """`_over` for several limits at once. On Redis (the shared cache of a site with several
    processes) the counts go in one command instead of three round trips per limit: the
    keys, windows and expiry are django-ratelimit's own, so `get_usage` reads the same
    counts. Elsewhere (one process), `get_usage` itself. A cache that does not answer
    raises, and the request fails rather than go uncounted."""
    cache = caches[getattr(settings, "RATELIMIT_USE_CACHE", "default")]
    if not isinstance(cache, RedisCache):
        return [_over(request, limit, key) for limit, key in limits]
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        return [False] * len(limits)
    counted = []
    for (group, rate), key in limits:
        allowed, period = ratelimit_core._split_rate(rate)
        value = key(group, request)
        window = ratelimit_core._get_window(value, period)
        name = cache.make_and_validate_key(ratelimit_core._make_cache_key(
            group, window, rate, value, ALL))
        counted.append((name, allowed, period + ratelimit_core.EXPIRATION_FUDGE))
    client = cache._cache.get_client(counted[0][0], write=True)
    counts = _COUNT(keys=[name for name, _, _ in counted],
                    args=[expiry for _, _, expiry in counted], client=client)
    return [count > allowed for count, (_, allowed, _) in zip(counts, counted, strict=True)]


def vote_limits(request: HttpRequest, voter_key: str, pair_id: int,
                next_pair: bool = False) -> Limited:
    """Count one vote against every vote limit. Only the per-voter limit is keyed by the
    voter; the others by the network, so that consenting again (a new voter) resets none.
    `next_pair`: count the pair the vote's answer shows next as well (as `pair_limited`
    does), in the same round trip."""
    limits = [
        (VOTES_HARD, connection_key),
        (VOTES_PER_VOTER, lambda group, request: voter_key),
        (VOTES_PER_CONNECTION, connection_key),
        (VOTES_PER_CONNECTION_DAY, connection_key),
        (VOTES_PER_PAIR, lambda group, request: f"{connection_key(group, request)}|{pair_id}"),
    ]
    if next_pair:
        limits.append((PAIRS_HARD, connection_key))
    hard, by_voter, by_connection, by_day, by_pair, *pairs = _over_all(request, limits)
    return Limited(soft=hard or by_voter or by_connection or by_day or by_pair, hard=hard,
                   next_pair=any(pairs))


def pair_limited(request: HttpRequest) -> bool:
    """Count one pair shown; True when this connection asked for too many."""
    return _over_all(request, [(PAIRS_HARD, connection_key)])[0]


def voter_limited(request: HttpRequest) -> bool:
    """Count one new voter id; True when this connection made too many."""
    return _over(request, VOTERS_HARD, connection_key)


def retry_after(request: HttpRequest, limit: tuple[str, str]) -> int:
    """Seconds until this connection's window of a hard limit (keyed by `connection_key`)
    ends and its count starts again: the 429's Retry-After. django-ratelimit's fixed window
    ends at a time of its own per key (`_get_window`, as `get_usage`'s `time_left`), worked
    out here without counting the request again."""
    group, rate = limit
    _, period = ratelimit_core._split_rate(rate)
    ends = ratelimit_core._get_window(connection_key(group, request), period)
    return max(1, ends - int(time.time()))


# Reading studies (DESIGN section 10) count with the same limiter and keys.
STUDY_PARTICIPANTS_HARD = ("studies.participants.hard", "30/h")
STUDY_ANSWERS_HARD = ("studies.answers.hard", "600/h")


def study_participant_limited(request: HttpRequest) -> bool:
    """Count one new study participant; True when this connection made too many."""
    return _over(request, STUDY_PARTICIPANTS_HARD, connection_key)


def study_answer_limited(request: HttpRequest) -> bool:
    """Count one answered page of a study; True when this connection sent too many."""
    return _over(request, STUDY_ANSWERS_HARD, connection_key)
