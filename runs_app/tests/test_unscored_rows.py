"""Every row says what it is (DESIGN section 5): runs through the real OpenRouter client against
the messy fake server (runs_app.testing.messy) whose rows end unscored, what each place that
reports a run says of them, and the one retry service that makes them scored."""

from __future__ import annotations

import html
import io

import pytest
from django.contrib.auth.models import Group, User
from django.contrib.messages import get_messages
from django.core.management import call_command

from audits_app.publication.services import PublishError, release_publish
from runs_app.costs import forget_prices
from runs_app.models import (
    JurorVerdict,
    ReaderResponse,
    RefusalCheck,
    Release,
    ReleaseStatus,
    ReplyOutcome,
    RunControl,
    TextScore,
    WorkStatus,
)
from runs_app.providers.models_list import models_list
from runs_app.schemas import ReleaseConfig
from runs_app.selectors import release_progress, release_row_problems
from runs_app.services import release_create, release_freeze
from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.testing.messy import MessyReplies, models_payload

WRITERS = ["acme/writer-a", "beta/writer-b"]
JURORS = ["gamma/judge", "delta/judge", "epsilon/judge"]
READER = "zeta/reader"
MODEL_IDS = WRITERS + JURORS + [READER]
STAGES = ["generate", "refusal", "jury", "panel"]
TEXTS = 2 * 2  # writers x conditions (one scenario, T1)
BASELINE_READINGS = 4 * 12  # no text, control, two human baselines x twelve positions
STUCK = (f"stage refusal: reader {READER} has {TEXTS} of {TEXTS} rows unscored (100.0%, "
         f"above the release's limit of 2.0%")


def rows_release(code: str = "rows.0") -> Release:
    config = ReleaseConfig.model_validate({
        "code": code, "language": "en", "writers": WRITERS, "jurors": JURORS,
        "reader": READER, "journalist": READER, "stages": STAGES,
        "models": [{"id": model_id, "family": model_id.split("/")[0], "name": model_id}
                   for model_id in MODEL_IDS],
        "scenarios": ["greenvale-listeria"], "tasks": ["T1"], "conditions": ["C0", "C2"],
        "text_budget": 900, "max_attempts": 3, "max_reply_attempts": 3,
    })
    release = release_freeze(release=release_create(config=config))
    RunControl.objects.get_or_create(release=release)
    return release


@pytest.fixture
def messy_openrouter(monkeypatch, settings):
    """Start a messy server with `responder`; `run_release` then calls it as OpenRouter."""
    servers: list[FakeOpenRouter] = []

    def start(responder: MessyReplies) -> FakeOpenRouter:
        server = FakeOpenRouter(responder=responder, models=models_payload(MODEL_IDS))
        server.__enter__()
        servers.append(server)
        settings.BAITBENCH_PROVIDER = "openrouter"
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENROUTER_API_KEY", "test-key")
        models_list(refresh=True)  # the prices an unknown cost is estimated from
        forget_prices()
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def run_release(code: str) -> str:
    out = io.StringIO()
    call_command("run_release", code, "--sync", stdout=out)
    return out.getvalue()


def release_status(code: str) -> str:
    out = io.StringIO()
    call_command("release_status", code, stdout=out)
    return out.getvalue()


def staff(name: str, role: str) -> User:
    user = User.objects.create_user(name, password="x", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


@pytest.mark.django_db
def test_a_reader_that_never_answers_readably_leaves_the_release_unpublishable_and_says_why(
        imported_scenarios, messy_openrouter, client):
    server = messy_openrouter(MessyReplies(sticky={READER: "deep_nesting"}))
    release = rows_release()
    output = run_release(release.code)

    release.refresh_from_db()
    assert release.status == ReleaseStatus.INCOMPLETE
    assert "every stage is done" not in output and "scores settled for the rest" in output
    assert f"refusal {TEXTS} unscored, 0 failed of {TEXTS}" in output
    # The reader classified no text: none was judged or read, and no text has a score.
    assert set(RefusalCheck.objects.filter(release=release).values_list("outcome", flat=True)) \
        == {ReplyOutcome.UNSCORED}
    assert not JurorVerdict.objects.filter(release=release).exists()
    assert ReaderResponse.objects.filter(release=release, outcome=ReplyOutcome.UNSCORED).count() \
        == BASELINE_READINGS
    assert not TextScore.objects.filter(release=release, honesty_index__isnull=False).exists()
    # Three calls per row: the question, then two repair turns; never a crash.
    assert len(server.requests) == TEXTS + 3 * (TEXTS + BASELINE_READINGS)

    status = release_status(release.code)
    assert "Ended with unscored or failed rows" in status
    assert f"refusal, reader {READER}: {TEXTS} unscored of {TEXTS}" in status
    assert "not publishable:" in status and STUCK in status
    assert (f"stage panel: reader {READER} has {BASELINE_READINGS} of {BASELINE_READINGS} rows "
            f"unscored") in status

    client.force_login(staff("olga", "operator"))
    run_page = html.unescape(client.get(f"/runs/{release.code}/").content.decode())
    assert "Not publishable as it is" in run_page and STUCK in run_page
    assert "Ended with gaps" in run_page and 'data-field="unscored">4<' in run_page

    client.force_login(staff("pat", "publisher"))
    publish_page = html.unescape(
        client.get(f"/releases/{release.code}/publish/").content.decode())
    assert "Cannot publish yet" in publish_page and STUCK in publish_page
    assert f"Unscored rows, every stage</th><td class=\"num\">{TEXTS + BASELINE_READINGS}<" \
        in publish_page
    assert "Scored texts (a measure written)</th><td class=\"num\">0<" in publish_page
    with pytest.raises(PublishError, match="stage refusal: reader zeta/reader has 4 of 4"):
        release_publish(release=release)
    release.refresh_from_db()
    assert not release.is_published


@pytest.mark.django_db
def test_a_juror_that_always_wraps_its_json_in_prose_is_scored_and_the_release_is_scored(
        imported_scenarios, messy_openrouter):
    server = messy_openrouter(MessyReplies(sticky={"delta/judge": "prose_fence"}))
    release = rows_release()
    output = run_release(release.code)

    release.refresh_from_db()
    assert release.status == ReleaseStatus.SCORED
    assert f"{release.code}: every stage is done; scores settled" in output
    verdicts = JurorVerdict.objects.filter(release=release, juror__openrouter_id="delta/judge")
    assert verdicts.count() == TEXTS
    assert set(verdicts.values_list("outcome", flat=True)) == {ReplyOutcome.SCORED}
    # No extra call: texts, refusal checks, three verdicts each, every reading once.
    assert len(server.requests) == TEXTS * 5 + BASELINE_READINGS + TEXTS * 12
    assert release_row_problems(release) == []
    assert "every row says what it is" in release_status(release.code)


@pytest.mark.django_db
def test_unscored_rows_retried_from_the_run_page_and_the_admin_end_scored(
        imported_scenarios, messy_openrouter, client):
    messy_openrouter(MessyReplies(sticky={READER: "deep_nesting"}))
    release = rows_release()
    run_release(release.code)
    release.refresh_from_db()
    assert release.status == ReleaseStatus.INCOMPLETE
    readings = ReaderResponse.objects.filter(release=release)
    assert set(readings.values_list("outcome", flat=True)) == {ReplyOutcome.UNSCORED}

    # The reader answers cleanly now; the operator retries the refusal checks from the run
    # page (the stage is running, so the retry reopens the release) ...
    messy_openrouter(MessyReplies())
    client.force_login(staff("olga", "operator"))
    response = client.post(f"/runs/{release.code}/retry/", {"stage": "refusal"}, follow=True)
    assert f"{TEXTS} failed or unscored refusal row(s) of {release.code} are pending again." \
        in response.content.decode()
    release.refresh_from_db()
    assert release.status == ReleaseStatus.RUNNING
    # ... and the panel's from the admin: the same service.
    client.force_login(User.objects.create_superuser("root", password="x"))
    response = client.post("/admin/runs_app/release/", {
        "action": "retry_failed_panel", "_selected_action": [release.pk]}, follow=True)
    assert [str(message) for message in get_messages(response.wsgi_request)] == [
        f"{release.code}: {BASELINE_READINGS} failed or unscored panel row(s) pending again."]
    assert readings.filter(status=WorkStatus.PENDING).count() == BASELINE_READINGS
    # Their earlier replies are kept with the row.
    assert all(len(reading.raw_replies) == 3 for reading in readings)

    output = run_release(release.code)
    release.refresh_from_db()
    assert release.status == ReleaseStatus.SCORED and "every stage is done" in output
    assert {progress.stage: (progress.scored, progress.unscored, progress.failed)
            for progress in release_progress(release)} == {
        "generate": (TEXTS, 0, 0), "refusal": (TEXTS, 0, 0), "jury": (TEXTS * 3, 0, 0),
        "panel": (BASELINE_READINGS + TEXTS * 12, 0, 0)}
    assert all(isinstance(answer, int) and not isinstance(answer, bool)
               for reading in readings for answer in reading.attitude)
    assert TextScore.objects.filter(release=release, honesty_index__isnull=False).count() == TEXTS
    assert release_row_problems(release) == []
