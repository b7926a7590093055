"""What a call cost when its reply did not say (DESIGN section 5: cost is what was paid).

A reply without `usage.cost` is recorded as an estimate from the models list's prices and
its tokens, marked as estimated, so that the budget cap still counts it. A model whose price
is unknown (not on the cached list) is estimated at zero, and still marked as estimated.
"""

from __future__ import annotations

import time

from runs_app.providers.base import CompletionResult
from runs_app.providers.models_list import ModelsList, cached_models_list

# The cached list is read again after this long (seconds): it changes daily at most.
PRICES_TTL = 300.0

_cache: dict[str, tuple[float, ModelsList | None]] = {}


def _prices() -> ModelsList | None:
    now = time.monotonic()
    held = _cache.get("list")
    if held is None or now - held[0] > PRICES_TTL:
        held = _cache["list"] = (now, cached_models_list())
    return held[1]


def forget_prices() -> None:
    """Read the models list afresh on the next estimate (tests, a refreshed list)."""
    _cache.clear()


def recorded_cost(model_id: str, result: CompletionResult) -> float:
    """What a call cost: its reported cost, else what its failed attempts reported plus an
    estimate of the tokens no reported cost covers."""
    if result.cost_usd is not None:
        return result.cost_usd
    return result.priced_usd + estimated_cost(model_id, *result.unpriced_tokens)


def estimated_cost(model_id: str, prompt_tokens: int, completion_tokens: int) -> float:
    """USD for one call from the cached list's prices; 0.0 when the model is not priced."""
    listing = _prices()
    model = listing.get(model_id) if listing is not None else None
    if model is None or not model.priced:
        return 0.0
    return (model.request_price + prompt_tokens * model.prompt_price
            + completion_tokens * model.completion_price)
