"""A text is published under the model that wrote it (DESIGN section 5): the reply's `model`
against the model asked, by the rule and through a run against the fake OpenRouter to the
publish gate."""

from __future__ import annotations

import html
import io

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.urls import reverse

from audits_app.publication.services import release_publish_problems
from runs_app.costs import forget_prices
from runs_app.models import Generation, Release, ReleaseStatus, RunControl
from runs_app.providers.models_list import models_list
from runs_app.providers.served import served_as_asked
from runs_app.selectors import release_row_problems, served_model_warnings
from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.testing.messy import MessyReplies, models_payload
from runs_app.tests.releases import IDS, openrouter_release
from tests.world import user_create

WRITER = "acme/writer-a"
TEXTS = 2 * 2  # writers x conditions (one scenario, T1)


def rows_release(code: str) -> Release:
    release = openrouter_release(code, tasks=["T1"], max_reply_attempts=3,
                                 stages=["generate", "refusal", "jury", "panel"])
    RunControl.objects.get_or_create(release=release)
    return release


def run_release(code: str) -> None:
    call_command("run_release", code, "--sync", stdout=io.StringIO())


@pytest.mark.parametrize(("asked", "served"), [
    ("openai/gpt-4o", "openai/gpt-4o-2024-08-06"),
    ("anthropic/claude-3.5-sonnet", "anthropic/claude-3.5-sonnet-20240620"),
    ("meta-llama/llama-3.1-70b-instruct", "meta-llama/llama-3.1-70b-instruct"),
    ("meta-llama/llama-3.1-8b-instruct:free", "meta-llama/llama-3.1-8b-instruct"),
    ("openai/gpt-4o:nitro", "openai/gpt-4o:nitro"),
    ("mistralai/mistral-large", "mistralai/mistral-large-2411"),
    ("anthropic/claude-sonnet-4", "anthropic/claude-4-sonnet-20250522"),
    ("anthropic/claude-3.7-sonnet", "anthropic/claude-3-7-sonnet-20250219"),  # canonical
    ("OpenAI/GPT-4o", "openai/gpt-4o"),
    ("openai/gpt-4o", "gpt-4o-2024-08-06"),  # no vendor named: none contradicted
    ("openai/gpt-4o", ""),  # unknown (the fixture provider): not a mismatch
])
def test_a_dated_versioned_or_variant_name_of_the_asked_slug_is_as_asked(asked, served):
    assert served_as_asked(asked, served)


@pytest.mark.parametrize(("asked", "served"), [
    ("openai/gpt-4o", "openai/gpt-4o-mini"),
    ("openai/gpt-4o", "openai/gpt-4o-mini-2024-07-18"),
    ("openai/gpt-4o", "anthropic/claude-3.5-sonnet"),
    ("openai/gpt-4o", "azure/gpt-4o"),
    ("anthropic/claude-3.5-sonnet", "anthropic/claude-3.5-haiku-20241022"),
    ("mistralai/mistral-large-2407", "mistralai/mistral-large-2411"),
    ("google/gemini-2.5-flash", "google/gemini-2.5-flash-lite"),
    ("openrouter/auto", "anthropic/claude-sonnet-4"),
])
def test_another_model_or_family_is_not_as_asked(asked, served):
    assert not served_as_asked(asked, served)


@pytest.fixture
def openrouter(monkeypatch, settings):
    """A fake OpenRouter with clean replies that `run_release` calls as OpenRouter."""
    with FakeOpenRouter(responder=MessyReplies(), models=models_payload(IDS)) as server:
        settings.BAITBENCH_PROVIDER = "openrouter"
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENROUTER_API_KEY", "test-key")
        models_list(refresh=True)
        forget_prices()
        yield server


@pytest.mark.django_db
def test_texts_another_model_wrote_are_warned_of_where_the_publisher_looks(
        imported_scenarios, openrouter, client):
    openrouter.serve_as(WRITER, "acme/writer-a-mini")
    release = rows_release("served.0")
    run_release(release.code)
    release.refresh_from_db()
    # Generation is not stopped for it: every text was written and scored.
    assert release.status == ReleaseStatus.SCORED
    texts = Generation.objects.filter(release=release, model__openrouter_id=WRITER)
    assert set(texts.values_list("served_model", flat=True)) == {"acme/writer-a-mini"}
    ids = ", ".join(str(pk) for pk in sorted(texts.values_list("pk", flat=True)))

    line = (f"writer {WRITER}: {TEXTS // 2} of {TEXTS // 2} texts were served by another "
            f"model (acme/writer-a-mini ({TEXTS // 2}); texts {ids}): published, they would "
            f"be attributed to {WRITER}")
    assert served_model_warnings(release) == [line]
    # A warning, not a refusal: a served name the rule misreads must not block for ever.
    assert release_row_problems(release) == []
    status = io.StringIO()
    call_command("release_status", release.code, stdout=status)
    assert f"warning: {line}" in status.getvalue()
    publisher = user_create("pat", "publisher")
    publisher.groups.add(Group.objects.get(name="operator"))
    client.force_login(publisher)
    for page in (reverse("audits:release-publish", args=[release.code]),
                 reverse("operate:release", args=[release.code])):
        assert html.escape(line) in client.get(page).content.decode(), page


@pytest.mark.django_db
def test_a_dated_snapshot_of_the_asked_model_publishes(imported_scenarios, openrouter):
    openrouter.serve_as(WRITER, "acme/writer-a-2024-08-06")
    release = rows_release("served.1")
    run_release(release.code)
    assert set(Generation.objects.filter(release=release).values_list(
        "served_model", flat=True)) == {"acme/writer-a-2024-08-06", "beta/writer-b"}
    assert release_publish_problems(release) == []
