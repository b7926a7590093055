"""Operating a run from the web (/runs/): who may, every control through the page, the budget
cap and pause/resume counted in calls on the fake server, live progress as JSON."""

from __future__ import annotations

import datetime as dt
import math
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from runs_app import drains, selectors, tasks
from runs_app.models import (
    Drain,
    Generation,
    OpenRouterModelsList,
    RefusalCheck,
    Release,
    ReleaseStatus,
    RunControl,
    StageRun,
    StageRunState,
    WorkStatus,
)
from runs_app.providers.pool import ProviderPool
from runs_app.schemas import ReleaseConfig
from runs_app.selectors import WorkersAlive
from runs_app.services import release_create
from runs_app.stages import get_stage
from runs_app.stages.base import DrainHooks, drain_release
from runs_app.testing.fake_openrouter import FakeOpenRouter, completion_body
from runs_app.testing.replies import valid_reply
from runs_app.tests.releases import (
    MODELS,
    models_payload,
    openrouter_release,
    repeated_calls,
)
from scenarios_app.tests.factories import make_staff

PRICE = 0.01  # dollars per call on the priced fake server
CONCURRENCY = 2


def page(code: str) -> str:
    return f"/runs/{code}/"


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


@pytest.fixture
def operator(db):
    return make_staff("olga", "operator")


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """Drain tasks queued, by ticket id, instead of handing them to a cluster."""
    tickets: list[int] = []
    monkeypatch.setattr(drains, "async_task", lambda path, ticket, **kwargs: tickets.append(ticket))
    return tickets


@pytest.fixture
def heartbeats(monkeypatch):
    """Set what the clusters' heartbeat says, wherever the pages read it."""
    from runs_app import views

    def seen(workers: WorkersAlive) -> None:
        monkeypatch.setattr(selectors, "workers_alive", lambda: workers)
        monkeypatch.setattr(views, "workers_alive", lambda: workers)
    return seen


ONE_CLUSTER = WorkersAlive(visible=True, clusters=1, workers=2, alive=(selectors.ClusterAlive(
    name="sink-avocado-vermont-cat", host="worker-1", workers=2, status="Idle",
    up_seconds=65.0),))


@pytest.fixture
def run_queued(django_capture_on_commit_callbacks):
    """What the workers would do: run every queued drain task, here, until none is left.
    A drain queues more drains when its results plan work (after its writes commit)."""
    def run(tickets: list[int]) -> list[dict]:
        reports = []
        while tickets:
            with django_capture_on_commit_callbacks(execute=True):
                reports.append(tasks.drain_release_task(tickets.pop(0)))
        return reports
    return run


@pytest.fixture
def openrouter_workers(settings, monkeypatch):
    """Drain tasks call the fake server through the real OpenRouter provider."""
    def start(responder, latency: float = 0.0) -> FakeOpenRouter:
        server = FakeOpenRouter(latency=latency, responder=responder).start()
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENROUTER_API_KEY", "test-key")
        return server

    settings.BAITBENCH_PROVIDER = "openrouter"
    settings.BAITBENCH_CONCURRENCY = CONCURRENCY
    settings.BAITBENCH_DRAIN_WAIT = 0
    servers: list[FakeOpenRouter] = []
    yield lambda *args, **kwargs: servers.append(start(*args, **kwargs)) or servers[-1]
    for server in servers:
        server.stop()


def draft(code: str = "ops.0", **overrides) -> Release:
    config = {
        "code": code, "language": "en", "models": MODELS,
        "writers": ["acme/writer-a", "beta/writer-b"],
        "jurors": ["gamma/judge", "delta/judge", "epsilon/judge"], "reader": "gamma/judge",
        "scenarios": ["greenvale-listeria"], "tasks": ["T1", "T2"], "conditions": ["C0", "C2"],
        "stages": ["generate", "refusal", "jury"], "text_budget": 900,
    } | overrides
    return release_create(config=ReleaseConfig.model_validate(config))


# ---------------------------------------------------------------------------------------
# Who may
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["auditor", "curator", "publisher", None])
def test_only_operators_see_or_act_others_get_403(client, imported_scenarios, queued, role):
    release = draft()
    client.force_login(make_staff(f"user-{role}", role))
    for url in ["/runs/", page("ops.0"), "/runs/ops.0/progress.json"]:
        assert client.get(url).status_code == 403, url
    for action in ["start", "pause", "resume", "cancel", "retry", "budget", "models-list"]:
        response = client.post(f"/runs/ops.0/{action}/", {"stage": "generate",
                                                          "budget_usd": "1"})
        assert response.status_code == 403, action
    assert not StageRun.objects.filter(release=release).exists()
    assert not RunControl.objects.filter(release=release).exists()


@pytest.mark.django_db
def test_anonymous_visitors_are_sent_to_log_in(client, imported_scenarios):
    draft()
    response = client.get(page("ops.0"))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert client.post("/runs/ops.0/start/").status_code == 302
    assert not StageRun.objects.exists()


@pytest.mark.django_db
def test_operators_and_superusers_see_the_list_and_the_page(client, operator, imported_scenarios):
    draft()
    superuser = User.objects.create_superuser("root", password="x")
    for user in (operator, superuser):
        client.force_login(user)
        listing = client.get("/runs/")
        assert listing.status_code == 200
        assert 'href="/runs/ops.0/"' in listing.content.decode()
        assert client.get(page("ops.0")).status_code == 200


@pytest.mark.django_db
def test_every_action_needs_a_post_with_a_csrf_token(operator, imported_scenarios):
    draft()
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    opened = client.get("/runs/ops.0/start/")
    assert opened.status_code == 405  # with a page that says so and links back
    assert 'href="/runs/ops.0/"' in opened.content.decode()
    assert client.post("/runs/ops.0/start/").status_code == 403
    assert not StageRun.objects.exists()

    client.get(page("ops.0"))  # sets the CSRF cookie, as a browser would
    token = client.cookies["csrftoken"].value
    response = client.post("/runs/ops.0/start/", {"csrfmiddlewaretoken": token})
    assert response.status_code == 302 and response["Location"] == page("ops.0")
    assert StageRun.objects.filter(state=StageRunState.ACTIVE).count() == 3


# ---------------------------------------------------------------------------------------
# The controls
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_chain_and_single_stages_start_pause_resume_and_cancel_from_the_page(
    operator_client, imported_scenarios, queued, heartbeats, django_capture_on_commit_callbacks
):
    release = draft()
    heartbeats(ONE_CLUSTER)

    def post(action: str, stage: str = "") -> list[str]:
        with django_capture_on_commit_callbacks(execute=True):
            response = operator_client.post(f"/runs/ops.0/{action}/", {"stage": stage},
                                            follow=True)
        assert response.redirect_chain == [(page("ops.0"), 302)]
        return messages_of(response)

    def states() -> dict[str, str]:
        return dict(StageRun.objects.filter(release=release).values_list("stage", "state"))

    assert post("start", "generate") == [
        "Started stage generate of ops.0 (generate); workers drain it as they come free."]
    assert states() == {"generate": "active"} and len(queued) == 1
    release.refresh_from_db()
    assert release.is_frozen and release.status == ReleaseStatus.RUNNING

    assert post("start") == ["Started the chain of ops.0 (generate, refusal, jury); workers "
                             "drain it as they come free."]
    assert states() == dict.fromkeys(["generate", "refusal", "jury"], "active")
    assert post("pause", "refusal")[0].startswith("Paused 1 stage(s) of ops.0: no new work")
    assert states()["refusal"] == "paused"
    assert post("pause") == ["Paused 2 stage(s) of ops.0: no new work is claimed; calls under "
                             "way are finished and written."]
    assert post("resume", "jury") == ["Resumed 1 stage(s) of ops.0."]
    assert post("cancel", "jury")[0].startswith("Cancelled 1 stage(s) of ops.0")
    assert states() == {"generate": "paused", "refusal": "paused", "jury": "cancelled"}
    assert post("resume") == ["Resumed 2 stage(s) of ops.0."]
    assert post("resume") == ["Nothing to resume: every stage of ops.0 is not paused."]
    assert post("cancel")[0].startswith("Cancelled 2 stage(s)")
    assert set(states().values()) == {"cancelled"}


@pytest.mark.django_db
def test_refused_actions_say_why_and_change_nothing(
    operator_client, imported_scenarios, queued
):
    release = draft()

    response = operator_client.post("/runs/ops.0/start/", {"stage": "panel"}, follow=True)
    assert messages_of(response) == ["Refused: release ops.0 does not run panel; its stages "
                                     "are generate, refusal, jury."]
    response = operator_client.post("/runs/ops.0/retry/", {"stage": ""}, follow=True)
    assert messages_of(response) == ["Refused: retrying failed or unscored rows needs a stage."]
    assert not StageRun.objects.exists()

    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.PUBLISHED)
    for action in ("start", "pause", "resume", "cancel", "retry", "budget"):
        response = operator_client.post(f"/runs/ops.0/{action}/",
                                        {"stage": "generate", "budget_usd": "5"}, follow=True)
        [message] = messages_of(response)
        assert message.startswith("Refused: release ops.0 is published: "), action
    assert not StageRun.objects.exists() and not RunControl.objects.exists()
    text = operator_client.get(page("ops.0")).content.decode()
    assert "is published: nothing under it runs" in text
    assert "Start the chain" not in text and "Set the cap" not in text


@pytest.mark.django_db
def test_the_budget_form_names_what_is_wrong(operator_client, imported_scenarios):
    draft()
    for value, error in [("-1", "Ensure this value is greater than or equal to 0."),
                         ("1.234", "Ensure that there are no more than 2 decimal places."),
                         ("ten", "Enter a number.")]:
        response = operator_client.post("/runs/ops.0/budget/", {"budget_usd": value},
                                        follow=True)
        assert messages_of(response) == [f"Refused: Budget cap (USD): {error}"], value
    assert not RunControl.objects.exists()

    response = operator_client.post("/runs/ops.0/budget/", {"budget_usd": "12.50"}, follow=True)
    assert messages_of(response) == ["Budget cap of ops.0 set to $12.50; $0.0000 spent."]
    response = operator_client.post("/runs/ops.0/budget/", {"budget_usd": ""}, follow=True)
    assert messages_of(response) == ["Removed the budget cap of ops.0; $0.0000 spent."]
    assert RunControl.objects.get().budget_usd is None


@pytest.mark.django_db
def test_failed_rows_are_retried_from_the_page_and_a_scored_release_runs_again(
    operator_client, imported_scenarios, queued, openrouter_workers, run_queued,
    django_capture_on_commit_callbacks
):
    release = openrouter_release(code="retry.0", stages=["generate"], tasks=["T1"],
                                 conditions=["C0"])
    server = openrouter_workers(valid_reply)
    server.enqueue(400, model="acme/writer-a")  # permanent: the cell fails at once
    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post("/runs/retry.0/start/", {"stage": "generate"})
    run_queued(queued)
    rows = Generation.objects.filter(release=release)
    assert list(rows.values_list("status", flat=True).order_by("model")) == ["failed", "done"]
    release.refresh_from_db()
    # Every stage ran, but a failed cell is left: not "scored", and not done.
    assert release.status == ReleaseStatus.INCOMPLETE
    page_text = operator_client.get(page("retry.0")).content.decode()
    assert re.search(r'data-action="retry"\s*>', page_text), "the retry button shows"
    assert "Ended with gaps" in page_text and "stage generate: 1 failed of 2 rows" in page_text
    assert "generate: ended with gaps" in operator_client.get("/runs/").content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post("/runs/retry.0/retry/", {"stage": "generate"},
                                        follow=True)
    assert messages_of(response) == [
        "1 failed or unscored generate row(s) of retry.0 are pending again."]
    release.refresh_from_db()
    assert release.status == ReleaseStatus.RUNNING and len(queued) == 1
    run_queued(queued)
    assert set(rows.values_list("status", flat=True)) == {"done"}
    release.refresh_from_db()
    assert release.status == ReleaseStatus.SCORED
    assert server.count() == 3  # the failed call, the retried one, the other writer's
    # A finished run says so on the list and the page, also once the release is published.
    for status in (ReleaseStatus.SCORED, ReleaseStatus.PUBLISHED):
        Release.objects.filter(pk=release.pk).update(status=status)
        listing = operator_client.get("/runs/").content.decode()
        assert "generate: done" in listing and "running" not in listing.lower(), status
        progress = operator_client.get("/runs/retry.0/progress.json").json()
        assert [stage["state_label"] for stage in progress["stages"]] == ["Done"], status


def test_a_stage_started_alone_says_done_once_its_rows_are_and_offers_no_pause(
    operator_client, imported_scenarios, queued, openrouter_workers, run_queued,
    django_capture_on_commit_callbacks
):
    openrouter_release(code="alone.0", stages=["generate", "refusal", "jury"], tasks=["T1"],
                       conditions=["C0"])
    openrouter_workers(valid_reply)
    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post("/runs/alone.0/start/", {"stage": "generate"})
    progress = operator_client.get("/runs/alone.0/progress.json").json()
    assert [row["state_label"] for row in progress["stages"]] == [
        "Running", "Not started", "Not started"]
    run_queued(queued)

    progress = operator_client.get("/runs/alone.0/progress.json").json()
    assert progress["status"] == ReleaseStatus.RUNNING  # the release goes on: two stages left
    assert [(row["state_label"], row["actions"]) for row in progress["stages"]] == [
        ("Done", []), ("Not started", ["start"]), ("Not started", ["start"])]
    assert progress["actions"] == ["start"]  # nothing runs: no pause or cancel for all

    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post("/runs/alone.0/start/", {"stage": "refusal"})
    run_queued(queued)
    progress = operator_client.get("/runs/alone.0/progress.json").json()
    assert [row["state_label"] for row in progress["stages"]] == ["Done", "Done", "Not started"]


# ---------------------------------------------------------------------------------------
# The budget cap, through the page
# ---------------------------------------------------------------------------------------


def priced(payload):
    return completion_body("A text about the incident, as the organisation sees it.", cost=PRICE)


@pytest.mark.django_db
def test_the_budget_cap_set_on_the_page_stops_the_run_within_one_batch_and_raising_it_finishes(
    operator_client, imported_scenarios, queued, openrouter_workers, run_queued,
    django_capture_on_commit_callbacks
):
    release = openrouter_release(code="cap.0", stages=["generate"], tasks=["T1", "T2"],
                                 conditions=["C0", "C1", "C2", "C3"])  # 16 texts
    server = openrouter_workers(priced, latency=0.05)
    cap = 0.05  # reached by the fifth call

    operator_client.post("/runs/cap.0/budget/", {"budget_usd": f"{cap:.2f}"})
    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post("/runs/cap.0/start/", {"stage": "generate"})
    reports = run_queued(queued)

    calls_at_stop = server.count()
    past_cap = calls_at_stop - math.ceil(cap / PRICE)
    ahead = max(1, CONCURRENCY // 2)  # rows a drain claims ahead of its free call slots
    print(f"\ncalls past the budget cap: {past_cap} (cap ${cap}, ${PRICE} a call, "
          f"concurrency {CONCURRENCY})")
    assert reports[-1]["note"] == "budget"
    assert 0 <= past_cap <= CONCURRENCY + ahead  # within one batch of the cap
    control = RunControl.objects.get(release=release)
    assert control.spent_usd == pytest.approx(calls_at_stop * PRICE)
    text = operator_client.get(page("cap.0")).content.decode()
    assert "Stopped at the budget cap: $0.0" in text and "Raise or remove the cap to resume" in text
    progress = operator_client.get("/runs/cap.0/progress.json").json()
    assert progress["over_budget"] and progress["notice"].startswith("Stopped at the budget cap")
    assert Generation.objects.filter(release=release, status=WorkStatus.PENDING).exists()
    assert not Generation.objects.filter(release=release, status=WorkStatus.CLAIMED).exists()

    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post("/runs/cap.0/budget/", {"budget_usd": "10"}, follow=True)
    assert messages_of(response) == [f"Budget cap of cap.0 set to $10.00; "
                                     f"${calls_at_stop * PRICE:.4f} spent."]
    assert queued, "raising the cap queues the drains again"
    run_queued(queued)

    total = Generation.objects.filter(release=release).count()
    assert Generation.objects.filter(release=release, status=WorkStatus.DONE).count() == total
    assert server.count() == total  # nothing paid twice
    progress = operator_client.get("/runs/cap.0/progress.json").json()
    assert not progress["over_budget"] and progress["notice"] == ""


# ---------------------------------------------------------------------------------------
# Pause and resume, through the page, counted in calls
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_pause_and_resume_through_the_page_lose_and_repeat_nothing(
    operator_client, imported_scenarios, queued, openrouter_workers, run_queued,
    django_capture_on_commit_callbacks
):
    release = openrouter_release(code="pause.0", stages=["generate", "refusal"],
                                 tasks=["T1", "T2"], conditions=["C0", "C1", "C2", "C3"])
    server = openrouter_workers(valid_reply, latency=0.02)
    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post("/runs/pause.0/start/")
    # This test drains by hand, to pause in the middle: the drain tasks the start queued
    # are delivered only after the resume (a busy queue), and run then with its own.
    assert queued
    finished = []

    def pause_after_six() -> None:
        finished.append(1)
        if len(finished) == 6:
            response = operator_client.post("/runs/pause.0/pause/", follow=True)
            assert messages_of(response)[-1].startswith("Paused 2 stage(s)")

    pool = ProviderPool()
    report = drain_release(release, ["generate", "refusal"], concurrency=CONCURRENCY,
                           providers=pool, hooks=DrainHooks(on_finished=pause_after_six))
    assert report.stopped == "paused or cancelled"
    calls_while_paused = server.count()
    generations = Generation.objects.filter(release=release)
    assert 6 <= report.finished < generations.count() * 2
    assert not generations.filter(status=WorkStatus.CLAIMED).exists()
    progress = operator_client.get("/runs/pause.0/progress.json").json()
    assert [stage["state"] for stage in progress["stages"]] == ["paused", "paused"]
    assert progress["stages"][0]["actions"] == ["resume", "cancel"]

    # Paused: a drain that starts now claims nothing.
    assert drain_release(release, ["generate", "refusal"], providers=pool).finished == 0
    assert server.count() == calls_while_paused

    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post("/runs/pause.0/resume/", follow=True)
    assert messages_of(response) == ["Resumed 2 stage(s) of pause.0."]
    run_queued(queued)

    texts = generations.count()
    assert generations.filter(status=WorkStatus.DONE).count() == texts
    assert RefusalCheck.objects.filter(release=release, status=WorkStatus.DONE).count() == texts
    assert server.count() == 2 * texts  # one call per text and one per check: none lost
    assert repeated_calls(server) == 0  # and none made twice


# ---------------------------------------------------------------------------------------
# Live progress and the page without JavaScript
# ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_progress_json_and_the_page_show_each_stages_figures(
    operator_client, imported_scenarios, queued, openrouter_workers, run_queued,
    django_capture_on_commit_callbacks
):
    release = openrouter_release(code="live.0", stages=["generate", "refusal", "jury"],
                                 tasks=["T1"], conditions=["C0", "C2"])
    openrouter_workers(priced)
    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post("/runs/live.0/start/", {"stage": "generate"})
    run_queued(queued)

    data = operator_client.get("/runs/live.0/progress.json").json()
    generate, refusal, jury = data["stages"]
    assert (generate["stage"], generate["state"], generate["scored"], generate["pending"],
            generate["failed"], generate["unscored"]) == ("generate", "active", 4, 0, 0, 0)
    assert generate["cost_usd"] == pytest.approx(4 * PRICE) and generate["tokens"] > 0
    assert generate["rate_per_minute"] > 0 and generate["eta_seconds"] is None  # nothing left
    assert refusal["state"] == "" and refusal["actions"] == ["start"]  # never started: no rows
    assert refusal["total"] == 0 and jury["total"] == 0
    assert data["spent_usd"] == pytest.approx(4 * PRICE) and data["budget_usd"] is None

    text = operator_client.get(page("live.0")).content.decode()
    # Without JavaScript the page carries the same figures, and a link to refresh it.
    assert re.search(r'<tr data-stage="generate" data-state="active">.*?'
                     r'data-field="scored">4<', text, re.DOTALL)
    assert 'href="/runs/live.0/" data-refresh>Refresh</a>' in text
    assert '<script src="/static/runs_app/operate.js" defer></script>' in text
    assert Drain.objects.filter(release=release).exists()


@pytest.mark.django_db
def test_the_page_shows_preflight_from_the_cached_list_and_refetches_only_on_request(
    operator_client, imported_scenarios, monkeypatch
):
    draft()
    with FakeOpenRouter(models=models_payload()) as server:
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        text = operator_client.get(page("ops.0")).content.decode()
        assert "models list unavailable: not fetched yet" in text
        assert server.models_requests == 0  # a page never waits on the network

        response = operator_client.post("/runs/ops.0/models-list/", follow=True)
        assert messages_of(response) == ["Fetched OpenRouter's models list: 5 models."]
        assert server.models_requests == 1 and OpenRouterModelsList.objects.count() == 1
        text = response.content.decode()
        assert "every check passed" in text and "failed</strong>" not in text
        assert "Release total" in text and "acme/writer-a" in text
        # How the estimate is made, for this release's own tasks (T1 and T2).
        assert "texts of the length their brief asks for (T1 400 words, T2 400 words)" in text
        operator_client.get(page("ops.0"))
        assert server.models_requests == 1
    assert server.count() == 0  # no model was called


@pytest.mark.django_db
def test_the_pace_is_that_of_the_last_five_minutes_and_time_left_follows_it(
    imported_scenarios
):
    import datetime as dt

    from django.utils import timezone

    from runs_app.selectors import stage_progress
    from runs_app.stages import get_stage

    release = openrouter_release(code="pace.0", tasks=["T1", "T2"],
                                 conditions=["C0", "C1", "C2", "C3"])  # 16 texts
    get_stage("generate").plan(release)
    rows = list(Generation.objects.filter(release=release).order_by("pk"))
    now = timezone.now()
    # Long ago (outside the window): 4 rows; in the last two minutes: 6 rows, evenly.
    for row, minutes in zip(rows[:4], [50, 40, 30, 20], strict=True):
        Generation.objects.filter(pk=row.pk).update(
            status=WorkStatus.DONE, finished_at=now - dt.timedelta(minutes=minutes))
    for index, row in enumerate(rows[4:10]):
        Generation.objects.filter(pk=row.pk).update(
            status=WorkStatus.DONE, finished_at=now - dt.timedelta(seconds=120 - 20 * index))

    progress = stage_progress(release, "generate")

    assert progress.done == 10 and progress.pending == 6
    # Six rows since the first of them, two minutes ago: three a minute; six left, two minutes.
    assert progress.rate_per_minute == pytest.approx(3.0, rel=0.02)
    assert progress.eta_seconds == pytest.approx(120, rel=0.02)


@pytest.mark.parametrize("workers, says", [
    (WorkersAlive(visible=True), "No worker is alive"),
    (WorkersAlive(visible=True, clusters=1, workers=2),
     "Workers are alive (2 in 1 cluster(s)) but none has claimed work of this release"),
    (WorkersAlive(visible=False), "the workers' heartbeat cannot be read here"),
])
def test_the_run_page_tells_no_worker_alive_from_workers_that_claim_nothing(
    operator_client, imported_scenarios, queued, monkeypatch, workers, says,
    django_capture_on_commit_callbacks,
):
    release = openrouter_release(code="idle.0")
    get_stage("generate").plan(release)
    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post("/runs/idle.0/start/", {"stage": "generate"})
    Drain.objects.filter(release=release).update(
        created_at=timezone.now() - dt.timedelta(seconds=90))
    monkeypatch.setattr(selectors, "workers_alive", lambda: workers)
    monkeypatch.setattr(selectors, "QUEUED_STALE", dt.timedelta(minutes=10))

    progress = operator_client.get("/runs/idle.0/progress.json").json()
    assert progress["notice"].startswith(says) or says in progress["notice"]
    assert says in operator_client.get(page("idle.0")).content.decode().replace("&#x27;", "'")



@pytest.mark.parametrize("workers, says", [
    (WorkersAlive(visible=True), "No worker is alive: no `manage.py qcluster` has sent a "
     "heartbeat in the last few seconds, so nothing queued runs. To run a release, start a "
     "worker: manage.py qcluster."),
    (ONE_CLUSTER, "Workers alive: 2 worker process(es) in 1 cluster(s): "
     "sink-avocado-vermont-cat on worker-1 (2 worker(s), idle, up 0:01:05)."),
    (WorkersAlive(visible=False), "The workers' heartbeat cannot be read here"),
])
def test_the_runs_list_and_a_run_page_say_which_workers_are_alive(
    operator_client, imported_scenarios, heartbeats, workers, says,
):
    openrouter_release(code="seen.0")
    heartbeats(workers)
    for url in ("/runs/", page("seen.0")):
        body = operator_client.get(url).content.decode().replace("&#x27;", "'")
        line = re.search(r'<p class="(\w+)" data-field="workers-alive"[^>]*>([^<]*)</p>', body)
        assert line and line.group(2).startswith(says), (url, line and line.group(0))
        # The list's warning; on a run page the notice warns, and says what to start.
        assert (line.group(1) == "warning") == (
            url == "/runs/" and not workers.clusters and workers.visible)
    progress = operator_client.get("/runs/seen.0/progress.json").json()["workers"]
    assert progress["text"].startswith(says)
    assert progress["alive"] == (bool(workers.clusters) if workers.visible else None)


def test_a_stage_with_work_and_no_worker_says_to_start_one_until_a_worker_is_alive(
    operator_client, imported_scenarios, queued, heartbeats, django_capture_on_commit_callbacks,
):
    release = openrouter_release(code="lone.0")
    get_stage("generate").plan(release)
    heartbeats(WorkersAlive(visible=True))
    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post("/runs/lone.0/start/", {"stage": "generate"},
                                        follow=True)
    assert ("no worker is alive, so nothing runs yet: start a worker: manage.py qcluster"
            in " ".join(messages_of(response)))
    progress = operator_client.get("/runs/lone.0/progress.json").json()
    # At once, not after the minute a queued drain may wait behind busy workers.
    assert progress["notice"].startswith("No worker is alive")
    assert "Start a worker: manage.py qcluster" in progress["notice"]
    generate = next(row for row in progress["stages"] if row["stage"] == "generate")
    assert generate["display"]["state_label"] == "Waiting: start a worker: manage.py qcluster"
    # Stages not started need no worker.
    assert all(row["display"]["state_label"] == "Not started"
               for row in progress["stages"] if row["stage"] != "generate")

    heartbeats(ONE_CLUSTER)
    progress = operator_client.get("/runs/lone.0/progress.json").json()
    assert "No worker" not in progress["notice"]
    generate = next(row for row in progress["stages"] if row["stage"] == "generate")
    assert generate["display"]["state_label"] == "Running"
