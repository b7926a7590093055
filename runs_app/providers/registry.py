"""Providers by name, imported only when asked for (DESIGN section 5).

The fixture demo must run without an API key or network code loaded, and an
OpenRouter run has no use for the fixture's writing, so each name maps to a
module path that is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from runs_app.providers.base import Provider

PROVIDERS: dict[str, str] = {
    "openrouter": "runs_app.providers.openrouter.OpenRouterProvider",
    "fixture": "runs_app.providers.fixture.FixtureProvider",
}


def get_provider(name: str, **options: Any) -> Provider:
    """A new provider instance; `options` go to its constructor."""
    try:
        dotted_path = PROVIDERS[name]
    except KeyError:
        known = ", ".join(sorted(PROVIDERS))
        raise ValueError(f"unknown provider {name!r}; known providers: {known}") from None
    module_path, class_name = dotted_path.rsplit(".", 1)
    provider_class = getattr(importlib.import_module(module_path), class_name)
    return provider_class(**options)
