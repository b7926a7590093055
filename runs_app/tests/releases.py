"""Releases the stage tests share, and what runs them: five OpenRouter test models (two
writers, three judges) and releases of them, their entries in a fake OpenRouter models list,
demo.0's models on T4 for the cross-examination, a release file for worker processes, and
how those processes are started and killed."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys

from django.conf import settings

from runs_app.providers.models_list import ModelListing, listings_as_payload
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig
from runs_app.services import release_config_from_file, release_create, release_freeze
from runs_app.stages import get_stage
from runs_app.stages.base import drain
from runs_app.testing.fake_openrouter import FakeOpenRouter
from tests.scratch import ROOT

MODELS = [
    {"id": "acme/writer-a", "family": "acme", "name": "Writer A"},
    {"id": "beta/writer-b", "family": "beta", "name": "Writer B"},
    {"id": "gamma/judge", "family": "gamma", "name": "Judge G"},
    {"id": "delta/judge", "family": "delta", "name": "Judge D"},
    {"id": "epsilon/judge", "family": "epsilon", "name": "Judge E"},
]


def openrouter_release(code: str = "or.0", **overrides):
    config = {
        "code": code, "language": "en", "models": MODELS,
        "writers": ["acme/writer-a", "beta/writer-b"],
        "jurors": ["gamma/judge", "delta/judge", "epsilon/judge"],
        "reader": "gamma/judge", "journalist": "gamma/judge",
        "scenarios": ["greenvale-listeria"], "tasks": ["T1", "T2"], "conditions": ["C0", "C2"],
        "text_budget": 900, "max_attempts": 3,
    } | overrides
    return release_freeze(release=release_create(config=ReleaseConfig.model_validate(config)))


IDS = [model["id"] for model in MODELS]
ROOMY = {"context_length": 200_000, "max_completion_tokens": 64_000,
         "prompt_price": 1e-6, "completion_price": 2e-6}


def listing(model_id: str, **fields) -> ModelListing:
    return ModelListing(id=model_id, name=model_id, **(ROOMY | fields))


def models_payload(*, leave_out: tuple[str, ...] = (), extra: tuple[ModelListing, ...] = (),
                   **changed: dict) -> dict:
    """The fake list: every test model with room to spare, less some, with some changed."""
    listings = [listing(model_id, **changed.get(model_id.replace("/", "_").replace("-", "_"),
                                                {}))
                for model_id in IDS if model_id not in leave_out]
    return listings_as_payload([*listings, *extra])


def repeated_calls(server: FakeOpenRouter) -> int:
    calls = collections.Counter(
        (request.body["model"], str(request.body["messages"]), request.body.get("seed"))
        for request in server.requests)
    return sum(count - 1 for count in calls.values())


RELEASE = """
code: {code}
language: en
models:
  - {{id: acme/writer-a, family: acme, name: Writer A}}
  - {{id: beta/writer-b, family: beta, name: Writer B}}
  - {{id: gamma/judge, family: gamma, name: Judge G}}
  - {{id: delta/judge, family: delta, name: Judge D}}
  - {{id: epsilon/judge, family: epsilon, name: Judge E}}
writers: [acme/writer-a, beta/writer-b]
jurors: [gamma/judge, delta/judge, epsilon/judge]
reader: gamma/judge
journalist: gamma/judge
scenarios: [greenvale-listeria, cobaltcloud-breach]
tasks: {tasks}
conditions: {conditions}
variants: {variants}
"""


def start(*args: str, env: dict) -> subprocess.Popen:
    # A session of its own, so a SIGKILL reaches the cluster's sentinel and workers too.
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def t4_release(code: str = "cross.0", **changes):
    """demo.0's models on two scenarios, T4 x C0/C2 (see `small_demo_release`)."""
    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml")
    small = config.model_dump() | {
        "code": code, "scenarios": ["greenvale-listeria", "cobaltcloud-breach"],
        "tasks": ["T4"], "conditions": ["C0", "C2"],
    } | changes
    return release_freeze(release=release_create(config=ReleaseConfig.model_validate(small)))


def run(release, *names: str, providers: ProviderPool | None = None) -> None:
    for name in names:
        drain(get_stage(name), release, concurrency=8, providers=providers)
