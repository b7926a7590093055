"""Real-shaped OpenRouter replies for the stages' tests: a responder that answers validly
except for one role, whose calls it puts through a shape (what real models send: prose around
JSON, think blocks, refusal fields, errors), a one-writer release, and a run of every stage
through the real OpenRouter client against the fake server (runs_app.testing.fake_openrouter).
"""


from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from runs_app.costs import forget_prices
from runs_app.models import (
    RunControl,
)
from runs_app.providers.models_list import models_list
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig
from runs_app.services import release_create, release_freeze
from runs_app.stages.base import drain_release
from runs_app.testing.fake_openrouter import FakeOpenRouter, completion_body
from runs_app.testing.messy import models_payload
from runs_app.testing.replies import valid_reply

WRITER = "acme/writer-a"
JURORS = ["gamma/judge", "delta/judge", "epsilon/judge"]
READER = "zeta/reader"
JOURNALIST = "eta/journalist"
MODELS = [{"id": m, "family": m.split("/")[0], "name": m}
          for m in [WRITER, *JURORS, READER, JOURNALIST]]
ALL_STAGES = ["generate", "refusal", "jury", "panel", "uptake", "reveal", "crossexam"]
SECRET = "keep quiet about the claims provision"


def _prompt(payload: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in payload.get("messages") or [])


def role_of(payload: dict[str, Any]) -> str:
    """Which call this is (the same keys `valid_reply` reads)."""
    prompt = _prompt(payload)
    if "response_format" not in payload:
        return "answer" if len(payload.get("messages") or []) > 1 else "write"
    if "complied" in prompt and '"verdict"' in prompt:
        return "refusal"
    if "facts_conveyed" in prompt:
        return "juror"
    if '"answers"' in prompt and '"label"' in prompt:
        return "labels"
    if "frame_adoption" in prompt:
        return "frame"
    if "runs_story" in prompt:
        return "journalist"
    if '"question"' in prompt:
        return "question"
    if re.search(r"^K\d+\. ", prompt, re.MULTILINE) and "knowledge" in prompt:
        return "reader"
    return "reveal"


def is_repair(payload: dict[str, Any]) -> bool:
    return "could not be used" in str((payload.get("messages") or [{}])[-1].get("content"))


Shape = Callable[[dict[str, Any], str, int], Any]


class Shaped:
    """valid replies, except for `role`, whose n-th call (1-based, repairs included) is put
    through `shape(payload, valid_content, n)`; a shape returns content (str), a whole body
    (dict) or a FakeResponse. Shapes only first calls unless `repairs` is set."""

    def __init__(self, role: str, shape: Shape, *, repairs: bool = False,
                 times: int | None = None) -> None:
        self.role, self.shape, self.repairs, self.times = role, shape, repairs, times
        self.calls: Counter[str] = Counter()
        self.shaped = 0
        self._lock = threading.Lock()

    def __call__(self, payload: dict[str, Any]):
        role = role_of(payload)
        with self._lock:
            self.calls[role] += 1
            number = self.calls[role]
        content = valid_reply(payload)
        if role != self.role or (is_repair(payload) and not self.repairs) or (
                self.times is not None and self.shaped >= self.times):
            return body_for(content, payload)
        with self._lock:
            self.shaped += 1
        answer = self.shape(payload, content, number)
        return body_for(answer, payload) if isinstance(answer, str) else answer


def body_for(content: str | None, payload: dict[str, Any], **changes) -> dict[str, Any]:
    body = completion_body(content, provider="Upstream", generation_id="gen-x")
    body["model"] = payload.get("model")
    body["choices"][0].update(changes)
    return body


def release_for(code: str, *, tasks=("T1",), stages=ALL_STAGES, language="en",
                scenario="greenvale-listeria", **extra):
    config = ReleaseConfig.model_validate({
        "code": code, "language": language, "models": MODELS, "writers": [WRITER],
        "jurors": JURORS, "reader": READER, "journalist": JOURNALIST,
        "scenarios": [scenario], "tasks": list(tasks), "conditions": ["C0"],
        "stages": list(stages), "text_budget": 900, "max_attempts": 3,
        "max_reply_attempts": 3, "scoring_version": "v2", **extra,
    })
    return release_freeze(release=release_create(config=config))


def run(responder, monkeypatch, *, code="probe.0", **release_kwargs):
    ids = [m["id"] for m in MODELS]
    with FakeOpenRouter(responder=responder, models=models_payload(ids)) as server:
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        models_list(refresh=True)
        forget_prices()
        release = release_for(code, **release_kwargs)
        RunControl.objects.get_or_create(release=release)
        pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="test-key",
                            backoff_base=0.01, backoff_cap=0.05, max_retries=2)
        stages = release_kwargs.get("stages", ALL_STAGES)
        drain_release(release, list(stages), providers=pool, controlled=False, concurrency=4)
        return release, server.requests


def calls_by_role(requests) -> Counter[str]:
    return Counter(role_of(r.body) for r in requests)
