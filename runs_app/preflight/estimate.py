"""What a release will cost, as a range (pure: call profiles and prices in, dollars out).

- **low**: every planned call made once (every text complies, every reply validates at
  once), prompts with texts of typical length, replies of typical size, no reasoning.
- **high**: every planned call retried to its limit (`max_attempts` for writers,
  `max_reply_attempts` for structured replies), each attempt sending a prompt whose texts
  fill their budget and using its whole completion budget, reasoning included (a writer's
  reasoning budget, a reasoning model's reasoning cap).

Planned calls assume every text complies; refused texts are not scored, so they make the
real cost lower, never higher. Fixture models cost nothing; a model with no known price is
left out of the sums and reported as such.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable

from runs_app.preflight.profiles import CallProfile
from runs_app.providers.models_list import ModelListing, ModelsList
from runs_app.providers.pool import FIXTURE_PREFIX


@dataclasses.dataclass(frozen=True)
class CostLine:
    """The cost of one stage's calls to one model in one role."""

    stage: str
    role: str
    model: str
    calls: float
    low_usd: float | None  # None: the model's prices are unknown
    high_usd: float | None
    prompt_tokens: float = 0.0  # expected prompt tokens over all calls (low)
    completion_tokens: float = 0.0  # expected completion tokens over all calls (low)
    free: bool = False  # a fixture model

    @property
    def priced(self) -> bool:
        return self.low_usd is not None


@dataclasses.dataclass(frozen=True)
class Total:
    label: str
    calls: float
    low_usd: float
    high_usd: float
    unpriced: tuple[str, ...] = ()  # models left out of the sums


def call_cost(profile: CallProfile, calls: float, listing: ModelListing) -> tuple[float, float]:
    """(low, high) dollars for `calls` planned calls of one profile to one model."""
    prompt, completion = listing.prompt_price or 0.0, listing.completion_price or 0.0
    reasoning = listing.price_per_reasoning_token or completion
    low = calls * (profile.prompt_low * prompt + profile.typical_reply * completion
                   + listing.request_price)
    # A reasoning model's structured replies may spend their reasoning cap as well.
    thinking = profile.reasoning_budget(listing.id)
    text_tokens = profile.budget(listing.id) - thinking
    per_attempt = (profile.prompt_high * prompt + text_tokens * completion
                   + thinking * reasoning + listing.request_price)
    return low, calls * profile.attempts * per_attempt


def cost_lines(profiles: Iterable[CallProfile], models: ModelsList | None) -> list[CostLine]:
    """One line per stage, role and model, in chain order, profiles of the same line summed."""
    sums: dict[tuple[str, str, str], dict] = collections.OrderedDict()
    for profile in profiles:
        for model_id, calls in profile.calls.items():
            if not calls:
                continue
            key = (profile.stage, profile.role, model_id)
            entry = sums.setdefault(key, {"calls": 0.0, "low": 0.0, "high": 0.0, "prompt": 0.0,
                                          "completion": 0.0, "priced": True, "free": False})
            entry["calls"] += calls
            entry["prompt"] += calls * profile.prompt_low
            entry["completion"] += calls * profile.typical_reply
            if model_id.startswith(FIXTURE_PREFIX):
                entry["free"] = True
                continue
            listing = models.get(model_id) if models else None
            if listing is None or not listing.priced:
                entry["priced"] = False
                continue
            low, high = call_cost(profile, calls, listing)
            entry["low"] += low
            entry["high"] += high
    return [CostLine(stage, role, model, entry["calls"],
                     entry["low"] if entry["priced"] else None,
                     entry["high"] if entry["priced"] else None,
                     entry["prompt"], entry["completion"], entry["free"])
            for (stage, role, model), entry in sums.items()]


def totals(lines: list[CostLine]) -> tuple[list[Total], Total]:
    """Per stage (chain order), and over the release."""
    stages: dict[str, list[CostLine]] = collections.OrderedDict()
    for line in lines:
        stages.setdefault(line.stage, []).append(line)
    per_stage = [_total(stage, stage_lines) for stage, stage_lines in stages.items()]
    return per_stage, _total("total", lines)


def _total(label: str, lines: list[CostLine]) -> Total:
    priced = [line for line in lines if line.priced]
    unpriced = tuple(sorted({line.model for line in lines if not line.priced}))
    return Total(label, sum(line.calls for line in lines),
                 sum(line.low_usd or 0.0 for line in priced),
                 sum(line.high_usd or 0.0 for line in priced), unpriced)
