"""A generation's page in the admin: prompt, text, provider log, verdicts with claims marked."""

from __future__ import annotations

import copy

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from runs_app.admin import mark_claims
from runs_app.models import Claim, Generation, JurorVerdict
from runs_app.services import release_freeze
from runs_app.stages import get_stage
from runs_app.stages.base import drain
from tests.kept import world_kept


@pytest.fixture(scope="module")
def kept_judged(request, kept_small_demo_release, django_db_blocker):
    """Kept (tests/kept.py): three stages run once for the module's tests, each changing only
    what its own savepoint rolls back."""
    def build():
        release = release_freeze(release=copy.deepcopy(kept_small_demo_release))
        for name in ("generate", "refusal", "jury"):
            drain(get_stage(name), release, concurrency=8)
        return release

    yield from world_kept(request, django_db_blocker, build)


@pytest.fixture
def judged(kept_judged, small_demo_release):
    return copy.deepcopy(kept_judged)


@pytest.fixture
def staff(db):
    return User.objects.create_superuser("operator", "op@example.org", "pw")


def test_claims_are_marked_and_everything_else_escaped():
    html = mark_claims("A <b>bold</b> claim & more.", [("<b>bold</b>", "fabrication", "x<y")])
    assert html == ('A <mark class="claim claim-fabrication" title="x&lt;y">'
                    '&lt;b&gt;bold&lt;/b&gt;</mark> claim &amp; more.')


@pytest.mark.django_db
def test_the_page_shows_prompt_text_log_and_marked_claims(client, judged, staff):
    generation = Generation.objects.filter(release=judged, model__openrouter_id="fixture/spinner",
                                           condition="C0").first()
    extra = ' <script>alert("x")</script> Experts confirmed 100% safety.'
    Generation.objects.filter(pk=generation.pk).update(text=generation.text + extra)
    verdict = JurorVerdict.objects.filter(generation=generation).first()
    Claim.objects.create(verdict=verdict, position=99, quote='<script>alert("x")</script>',
                         label="fabrication", basis=[])
    client.force_login(staff)
    page = client.get(reverse("admin:runs_app_generation_change", args=[generation.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Provider log" in html and "fixture-" in html  # the fixture's generation id
    assert "Greenvale" in html or "Cobalt" in html  # the prompt and text
    assert '<mark class="claim claim-supported"' in html
    assert '<mark class="claim claim-exaggeration"' in html
    assert '<mark class="claim claim-fabrication"' in html
    assert '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;' in html
    assert '<script>alert("x")</script>' not in html


@pytest.mark.django_db
def test_anonymous_users_are_sent_to_log_in(client, judged):
    generation = Generation.objects.filter(release=judged).first()
    page = client.get(reverse("admin:runs_app_generation_change", args=[generation.pk]))
    assert page.status_code == 302 and "/admin/login/" in page["Location"]


@pytest.mark.django_db
def test_release_list_and_page_render_with_progress(client, judged, staff):
    client.force_login(staff)
    listing = client.get(reverse("admin:runs_app_release_changelist"))
    assert listing.status_code == 200 and "small.0" in listing.content.decode()
    page = client.get(reverse("admin:runs_app_release_change", args=[judged.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and "progress per stage" in html.lower() and "jury" in html


@pytest.mark.django_db
def test_only_operators_may_retry_failed_work(client, judged, staff):
    from django.contrib.auth.models import Permission

    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_release"))
    client.force_login(viewer)
    listing = client.get(reverse("admin:runs_app_release_changelist"))
    assert "retry_failed_jury" not in listing.content.decode()
    client.force_login(staff)
    listing = client.get(reverse("admin:runs_app_release_changelist"))
    assert "retry_failed_jury" in listing.content.decode()


@pytest.mark.django_db
def test_a_t4_text_shows_its_interview_with_the_judges_label_per_answer(
        client, imported_scenarios, staff):
    from runs_app.tests.releases import run, t4_release

    release = t4_release()
    run(release, "generate", "refusal", "crossexam")
    generation = Generation.objects.filter(release=release, refusal_check__verdict="complied",
                                           model__openrouter_id="fixture/spinner").first()
    client.force_login(staff)
    html = client.get(reverse("admin:runs_app_generation_change",
                              args=[generation.pk])).content.decode()
    assert "Cross-examination" in html and "(the reporter's questions in the prompt)" in html
    assert html.count("<td>fabricates</td>") >= 1 and "<td>contradicts</td>" in html
    assert "labels by fixture/juror-" in html


@pytest.mark.django_db
def test_the_generation_retry_action_always_says_what_it_did(client, judged, staff):
    from django.contrib.messages import get_messages

    from runs_app.models import Release, ReleaseStatus

    url = reverse("admin:runs_app_generation_changelist")
    done = list(Generation.objects.filter(release=judged).values_list("pk", flat=True)[:2])
    client.force_login(staff)

    def act() -> list[str]:
        response = client.post(url, {"action": "retry_failed", "_selected_action": done},
                               follow=True)
        return [str(message) for message in get_messages(response.wsgi_request)]

    assert act() == ["None of the selected generations failed: nothing to retry."]
    Release.objects.filter(pk=judged.pk).update(status=ReleaseStatus.PUBLISHED)
    assert act() == [f"Release {judged.code} is published: its generations are never retried."]
