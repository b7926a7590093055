"""OpenRouter's models list: which model ids exist, their limits and their prices.

`GET {OPENROUTER_BASE_URL}/models` answers `{"data": [...]}`, one object per model with `id`,
`context_length`, `top_provider.max_completion_tokens` and `pricing` (USD per token, as
strings: `prompt`, `completion`, and where they apply `request`, per call, and
`internal_reasoning`). No key is needed; one is sent when set. Preflight reads it, and so may
anything else that needs a model's price or limits (the reader trial, the contamination
probe): use `models_list()`.

The list is fetched at most once per process and cached in the database with the time it
was fetched (`OpenRouterModelsList`), so the operator's page, the command and every worker
see the same list, and a page never waits on the network. A cache older than
`BAITBENCH_MODELS_LIST_HOURS` is fetched again on the next `models_list()`; `refresh=True`
always fetches. `fixture/...` ids are never on the list: they are offline and free.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.utils import timezone

from runs_app.providers.openrouter import DEFAULT_BASE_URL, tls_context

FETCH_TIMEOUT = 30.0
# Parameters by which the models list says a model can reason.
REASONING_PARAMETERS = frozenset({"reasoning", "include_reasoning"})


class ModelsListError(Exception):
    """The models list could not be had or read; the message says where and why."""


@dataclasses.dataclass(frozen=True)
class ModelListing:
    """One model as the list describes it. A price of None is unknown (absent, unreadable
    or negative: OpenRouter marks router models, whose price depends on the route, with -1);
    a limit of None is not stated."""

    id: str
    name: str = ""
    context_length: int | None = None
    max_completion_tokens: int | None = None
    prompt_price: float | None = None  # USD per prompt token
    completion_price: float | None = None  # USD per completion token
    request_price: float = 0.0  # USD per call
    reasoning_price: float | None = None  # USD per reasoning token, when priced apart
    # The request parameters some provider of the model honours; None: not stated.
    supported_parameters: tuple[str, ...] | None = None

    @property
    def priced(self) -> bool:
        return self.prompt_price is not None and self.completion_price is not None

    @property
    def price_per_reasoning_token(self) -> float | None:
        """Reasoning tokens are billed as completion tokens unless the list prices them apart
        (a positive `internal_reasoning`)."""
        if self.reasoning_price:
            return self.reasoning_price
        return self.completion_price

    @property
    def can_reason(self) -> bool:
        """Some provider of the model honours a reasoning parameter (a list that states no
        parameters is read as "cannot", as preflight reads it)."""
        return bool(set(self.supported_parameters or ()) & REASONING_PARAMETERS)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_openrouter(cls, entry: Mapping[str, Any]) -> ModelListing:
        pricing = entry.get("pricing") or {}
        top = entry.get("top_provider") or {}
        return cls(
            id=str(entry["id"]),
            name=str(entry.get("name") or ""),
            context_length=_count(entry.get("context_length")),
            max_completion_tokens=_count(top.get("max_completion_tokens")),
            prompt_price=_price(pricing.get("prompt")),
            completion_price=_price(pricing.get("completion")),
            request_price=_price(pricing.get("request")) or 0.0,
            reasoning_price=_price(pricing.get("internal_reasoning")),
            supported_parameters=_names(entry.get("supported_parameters")),
        )


def _names(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(str(name) for name in value if isinstance(name, str))


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value)


def _price(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        price = Decimal(str(value))
    except InvalidOperation:
        return None
    if not price.is_finite() or price < 0:
        return None
    return float(price)


@dataclasses.dataclass(frozen=True)
class ModelsList:
    """The list as one source gave it at one time."""

    models: Mapping[str, ModelListing]
    source: str  # the URL it was fetched from, or the file it was read from
    fetched_at: dt.datetime | None = None
    offline: bool = False  # read from a file, not fetched
    note: str = ""  # what a saved file says of itself (`snapshot.note`), e.g. how old it is

    def get(self, model_id: str) -> ModelListing | None:
        return self.models.get(model_id)

    def __len__(self) -> int:
        return len(self.models)


def parse_models_list(payload: Any, source: str) -> dict[str, ModelListing]:
    """`{"data": [...]}` as OpenRouter answers it; a malformed entry is named by its index."""
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        raise ModelsListError(f"{source}: not a models list (expected an object with a "
                              f"'data' list)")
    listings: dict[str, ModelListing] = {}
    for index, entry in enumerate(payload["data"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ModelsListError(f"{source}: data[{index}]: not a model with an 'id'")
        listing = ModelListing.from_openrouter(entry)
        listings[listing.id] = listing
    return listings


def models_url(base_url: str | None = None) -> str:
    base = base_url or os.environ.get("OPENROUTER_BASE_URL") or DEFAULT_BASE_URL
    return f"{base.rstrip('/')}/models"


def fetch_models_list(*, base_url: str | None = None, api_key: str | None = None,
                      timeout: float = FETCH_TIMEOUT) -> ModelsList:
    """One GET of the list. The key, if any, goes in the header only and never into an
    error message."""
    url = models_url(base_url)
    key = api_key if api_key is not None else os.environ.get("OPENROUTER_API_KEY")
    headers = {"Accept": "application/json", "X-Title": "BaitBench"}
    if key and key.strip():
        headers["Authorization"] = f"Bearer {key.strip()}"
    try:
        # trust_env=False, as for completions: no proxy variable reroutes a call with the key.
        with httpx.Client(timeout=timeout, trust_env=False, verify=tls_context()) as client:
            response = client.get(url, headers=headers)
    except httpx.HTTPError as error:
        raise ModelsListError(f"{url}: {type(error).__name__}: could not fetch the models "
                              f"list") from None
    if response.status_code != 200:
        raise ModelsListError(f"{url}: HTTP {response.status_code}: could not fetch the "
                              f"models list")
    try:
        payload = response.json()
    except ValueError:
        raise ModelsListError(f"{url}: the answer is not JSON") from None
    return ModelsList(parse_models_list(payload, url), source=url, fetched_at=timezone.now())


def read_models_file(path: Path) -> ModelsList:
    """A models list saved as a file (OpenRouter's answer as it came, or an offline snapshot):
    for a machine without access, and for estimates from a known set of prices."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelsListError(f"{path}: no such file") from None
    except (OSError, ValueError) as error:
        raise ModelsListError(f"{path}: cannot read it as JSON: {error}") from None
    about = payload.get("snapshot") if isinstance(payload, dict) else None
    note = str(about.get("note", "")) if isinstance(about, dict) else ""
    return ModelsList(parse_models_list(payload, str(path)), source=str(path), offline=True,
                      note=note)


# ---------------------------------------------------------------------------------------
# The cache (database)
# ---------------------------------------------------------------------------------------


def _from_row(row) -> ModelsList:
    models = {entry["id"]: ModelListing(**entry) for entry in row.entries}
    return ModelsList(models, source=row.source, fetched_at=row.fetched_at)


def _store(listing: ModelsList) -> None:
    from runs_app.models import OpenRouterModelsList

    OpenRouterModelsList.objects.update_or_create(
        source=listing.source,
        defaults={"fetched_at": listing.fetched_at,
                  "entries": [model.as_dict() for model in listing.models.values()]})


def cached_models_list(*, base_url: str | None = None) -> ModelsList | None:
    """The cached list for the configured base URL, however old; never fetches."""
    from runs_app.models import OpenRouterModelsList

    row = OpenRouterModelsList.objects.filter(source=models_url(base_url)).first()
    return _from_row(row) if row is not None else None


def is_stale(listing: ModelsList, *, max_age_hours: float | None = None) -> bool:
    hours = settings.BAITBENCH_MODELS_LIST_HOURS if max_age_hours is None else max_age_hours
    if listing.offline or listing.fetched_at is None:
        return False
    return timezone.now() - listing.fetched_at > dt.timedelta(hours=hours)


def models_list(*, refresh: bool = False, base_url: str | None = None) -> ModelsList:
    """The models list: the cache while it is fresh, else fetched (and cached).

    Raises ModelsListError when it must be fetched and cannot be; a caller that can live
    with an old list catches it and uses `cached_models_list()`.
    """
    if not refresh:
        cached = cached_models_list(base_url=base_url)
        if cached is not None and not is_stale(cached):
            return cached
    listing = fetch_models_list(base_url=base_url)
    _store(listing)
    return listing


def listings_as_payload(listings: Iterable[ModelListing]) -> dict[str, Any]:
    """A list back in OpenRouter's shape (prices as strings, per token): what the fake
    server serves and what a saved file holds."""
    def text(price: float | None) -> str:
        return "-1" if price is None else format(Decimal(repr(price)), "f")

    data = []
    for model in listings:
        pricing = {"prompt": text(model.prompt_price),
                   "completion": text(model.completion_price),
                   "request": text(model.request_price)}
        if model.reasoning_price is not None:
            pricing["internal_reasoning"] = text(model.reasoning_price)
        entry: dict[str, Any] = {
            "id": model.id, "name": model.name or model.id,
            "context_length": model.context_length,
            "architecture": {"modality": "text->text", "input_modalities": ["text"],
                             "output_modalities": ["text"]},
            "pricing": pricing,
            "top_provider": {"context_length": model.context_length,
                             "max_completion_tokens": model.max_completion_tokens,
                             "is_moderated": False},
        }
        if model.supported_parameters is not None:
            entry["supported_parameters"] = list(model.supported_parameters)
        data.append(entry)
    return {"data": data}
