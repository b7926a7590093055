"""Which provider answers for a model id: one instance per provider, shared by a drain."""

from __future__ import annotations

from django.conf import settings

from runs_app.providers.base import CompletionRequest, CompletionResult, Provider
from runs_app.providers.registry import get_provider

FIXTURE_PREFIX = "fixture/"


class ProviderPool:
    def __init__(self, default: str | None = None, **options) -> None:
        self.default = default or settings.BAITBENCH_PROVIDER
        self.options = options  # passed to the default provider (e.g. base_url in tests)
        self._providers: dict[str, Provider] = {}

    def name_for(self, model_id: str) -> str:
        # Fixture ids always stay offline, whatever BAITBENCH_PROVIDER says (DESIGN section 7).
        return "fixture" if model_id.startswith(FIXTURE_PREFIX) else self.default

    def provider_for(self, model_id: str) -> Provider:
        name = self.name_for(model_id)
        if name not in self._providers:
            options = self.options if name == self.default else {}
            self._providers[name] = get_provider(name, **options)
        return self._providers[name]

    async def complete(self, request: CompletionRequest) -> CompletionResult:
        return await self.provider_for(request.model).complete(request)

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()
        self._providers.clear()
