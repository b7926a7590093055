"""`run_release` (DESIGN section 8): what it hands to the queue."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from runs_app import tasks


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    monkeypatch.setattr(tasks, "async_task", lambda *args, **kwargs: calls.append(args))
    return calls


def run_release(*args: str) -> str:
    out = io.StringIO()
    call_command("run_release", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_one_stage_is_enqueued_alone_without_the_rest_of_the_chain(
    small_demo_release, enqueued
):
    # An operator who asks for generation only must not start paying for the jury.
    run_release("small.0", "--stage", "generate")

    [(path, code, stage, chain)] = enqueued
    assert (path, code, stage) == (tasks.TASK_PATH, "small.0", "generate")
    assert chain is False


@pytest.mark.django_db
def test_the_whole_release_is_enqueued_as_a_chain(small_demo_release, enqueued):
    run_release("small.0")

    [(_, code, stage, chain)] = enqueued
    assert (code, stage, chain) == ("small.0", "generate", True)
