"""Draining under the queue's limits: time budgets, and what the schedule finds stalled."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from runs_app import tasks
from runs_app.models import Generation, RefusalCheck, WorkStatus
from runs_app.providers.pool import ProviderPool
from runs_app.selectors import stalled_work
from runs_app.services import release_freeze
from runs_app.stages import available_stages, get_stage
from runs_app.stages.base import drain
from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.tests.test_generate import openrouter_release


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    monkeypatch.setattr(tasks, "async_task", lambda *args, **kwargs: calls.append(args))
    return calls


@pytest.mark.django_db
def test_a_drain_out_of_time_finishes_what_it_holds_and_claims_nothing_more(
    imported_scenarios
):
    release = openrouter_release(tasks=["T1", "T2"], conditions=["C0", "C1", "C2", "C3"])
    with FakeOpenRouter(latency=0.4) as slow:
        pool = ProviderPool(default="openrouter", base_url=slow.base_url, api_key="k")
        report = drain(get_stage("generate"), release, concurrency=2, time_budget=0.5,
                       providers=pool)
        calls = slow.count()
    rows = Generation.objects.filter(release=release)
    assert report.out_of_time and 0 < report.finished < rows.count()
    assert calls == report.finished  # every call it made was written
    assert not rows.filter(status=WorkStatus.CLAIMED).exists()
    assert rows.filter(status=WorkStatus.PENDING).count() == rows.count() - report.finished


@pytest.mark.django_db
def test_a_task_out_of_time_hands_its_stage_to_a_new_task(
    imported_scenarios, settings, enqueued, monkeypatch
):
    settings.BAITBENCH_DRAIN_SECONDS = 0.3
    settings.BAITBENCH_PROVIDER = "openrouter"
    settings.BAITBENCH_CONCURRENCY = 2
    release = openrouter_release(tasks=["T1", "T2"], conditions=["C0", "C1", "C2", "C3"])
    with FakeOpenRouter(latency=0.25) as slow:
        monkeypatch.setenv("OPENROUTER_BASE_URL", slow.base_url)
        monkeypatch.setenv("OPENROUTER_API_KEY", "k")
        tasks.drain_stage(release.code, "generate", chain=False)
    assert enqueued == [(tasks.TASK_PATH, release.code, "generate", False)]
    assert Generation.objects.filter(release=release, status=WorkStatus.PENDING).exists()


@pytest.mark.django_db
def test_the_schedule_leaves_a_stage_a_live_worker_holds_alone(small_demo_release):
    release = release_freeze(release=small_demo_release)
    stage = get_stage("generate")
    stage.plan(release)
    assert stalled_work() == [(release.code, "generate")]  # pending, nobody on it

    rows = Generation.objects.filter(release=release)
    first = rows.first()
    live = timezone.now() + dt.timedelta(minutes=5)
    rows.filter(pk=first.pk).update(status=WorkStatus.CLAIMED, lease_expires_at=live)
    assert stalled_work() == []  # a live worker holds a claim: no duplicate task

    expired = timezone.now() - dt.timedelta(seconds=1)
    rows.filter(pk=first.pk).update(lease_expires_at=expired)
    assert stalled_work() == [(release.code, "generate")]  # its worker died


@pytest.mark.django_db
def test_the_schedule_resumes_a_chain_whose_hand_over_was_lost(small_demo_release):
    release = release_freeze(release=small_demo_release)
    drain(get_stage("generate"), release)
    assert not RefusalCheck.objects.exists()
    assert stalled_work() == [(release.code, "refusal")]


@pytest.mark.django_db
def test_the_schedule_settles_a_release_whose_last_hand_over_was_lost(
    small_demo_release, enqueued
):
    release = release_freeze(release=small_demo_release)
    for name in available_stages()[:-1]:
        drain(get_stage(name), release)
    last = available_stages()[-1]
    assert stalled_work() == [(release.code, last)]  # never handed over, never planned
    tasks.reenqueue_stalled()
    assert enqueued == [(tasks.TASK_PATH, release.code, last, True)]

    tasks.drain_stage(release.code, last)  # what the queue then runs
    release.refresh_from_db()
    assert release.status == "scored"
    assert tasks.reenqueue_stalled() == 0 and stalled_work() == []
