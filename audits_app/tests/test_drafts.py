"""A release that is not published yet: staff see its whole page computed now, marked DRAFT,
with the spot-check gate and, for publishers, the way to publish; then a confirmation."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User

from audits_app.models import Publication, SpotCheck, SpotCheckBatch, SpotCheckItem
from audits_app.publication import drafts
from audits_app.tests.stats_world import WRITERS
from runs_app.models import Release, TextScore

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(scored_stats_release):
    """stats.0, every text generated and scored (`build_world`), its status scored."""
    return scored_stats_release


def user_with(role: str | None, **flags) -> User:
    name = f"user-{role or 'none'}-{'staff' if flags.get('is_staff') else 'visitor'}"
    user = User.objects.create_user(name, password="x", **flags)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def staff(client):
    client.force_login(user_with(None, is_staff=True))
    return client


@pytest.fixture
def publisher(client):
    client.force_login(user_with("publisher", is_staff=True))
    return client


def rank_rows(html: str, metric: str) -> list[str]:
    table = html.split(f'data-metric="{metric}"')[1].split("</table>")[0]
    return re.findall(r"<tr><td class=\"num\">", table)


def test_staff_see_the_whole_leaderboard_of_a_draft_marked_draft(staff, scored):
    html = staff.get("/releases/stats.0/").content.decode()
    assert 'class="draft-banner"' in html and "DRAFT" in html
    assert "computed now" in html and "Spot-check gate: <strong>met</strong>" in html
    for metric in ("honesty", "persuasion", "misleading"):
        assert len(rank_rows(html, metric)) == len(WRITERS), metric
    assert html.count('<circle data-model="fixture/') == len(WRITERS)
    assert "/releases/stats.0/publish/" not in html  # not a publisher


def test_a_publisher_is_shown_the_way_to_publish_and_the_gates_status(publisher, scored):
    html = publisher.get("/releases/stats.0/").content.decode()
    assert 'href="/releases/stats.0/publish/"' in html


def test_a_drafts_gate_that_is_not_met_says_why(publisher, scored):
    config = dict(scored.config, gate={"min_coverage": 0.5, "min_agreement": 0.0})
    Release.objects.filter(pk=scored.pk).update(config=config)
    html = publisher.get("/releases/stats.0/").content.decode()
    assert "<strong>not met</strong> (spot-check coverage 0.0% is below" in html


def test_every_page_of_a_draft_opens_for_staff_and_none_for_anyone_else(client, scored):
    text_id = TextScore.objects.filter(release=scored).values_list(
        "generation_id", flat=True).first()
    pages = ["/releases/stats.0/", "/releases/stats.0/chart.svg",
             "/releases/stats.0/leaderboard.csv", "/releases/stats.0/texts/",
             f"/releases/stats.0/texts/{text_id}/",
             "/releases/stats.0/scenarios/greenvale-listeria/"]
    for url in pages:
        assert client.get(url).status_code == 404, url
    client.force_login(user_with(None))  # logged in, not staff
    for url in pages:
        assert client.get(url).status_code == 404, url
    client.force_login(user_with(None, is_staff=True))
    for url in pages:
        assert client.get(url).status_code == 200, url
    assert "DRAFT" in client.get("/releases/stats.0/texts/").content.decode()


def test_publishing_ends_on_the_release_page_with_a_confirmation(publisher, scored):
    response = publisher.post("/releases/stats.0/publish/", follow=True)
    assert response.redirect_chain == [("/releases/stats.0/", 302)]
    html = response.content.decode()
    assert '<ul class="messages"><li class="success">Release stats.0 is published.</li>' in html
    assert 'class="draft-banner"' not in html and "Published " in html
    assert Publication.objects.filter(release=scored).exists()
    again = publisher.get("/releases/stats.0/").content.decode()
    assert "is published.</li>" not in again  # shown once


def test_a_release_with_nothing_run_has_a_draft_page_too(staff, small_demo_release):
    html = staff.get("/releases/small.0/").content.decode()
    assert "DRAFT" in html and "No model has both" in html
    assert "Not ready to publish: release small.0 is draft" in html


def test_a_draft_is_computed_again_only_when_its_rows_change(staff, scored, monkeypatch):
    calls = []
    real = drafts.release_snapshot
    monkeypatch.setattr(drafts, "release_snapshot", lambda release: calls.append(1) or real(
        release))
    staff.get("/releases/stats.0/")
    staff.get("/releases/stats.0/chart.svg")
    assert len(calls) == 1
    TextScore.objects.filter(release=scored).first().save()  # a score written again
    staff.get("/releases/stats.0/")
    assert len(calls) == 2


def draft_pages(release: Release) -> list[str]:
    text_id = TextScore.objects.filter(release=release).values_list(
        "generation_id", flat=True).first()
    return ["/releases/stats.0/", "/releases/stats.0/chart.svg",
            "/releases/stats.0/leaderboard.csv", "/releases/stats.0/texts/",
            f"/releases/stats.0/texts/{text_id}/",
            "/releases/stats.0/scenarios/greenvale-listeria/"]


def test_an_auditor_who_checks_blind_never_sees_a_draft(client, scored):
    """A draft names every text's writer and the jury's verdict: an auditor would find the
    writer of the text they are checking blind there (the check names scenario, task and
    condition). So an auditor sees drafts only with another role too, and nobody sees the
    draft of a release in which they have a check still to do."""
    auditor = user_with("auditor", is_staff=True)
    client.force_login(auditor)
    for url in draft_pages(scored):
        assert client.get(url).status_code == 404, url
    admin_page = client.get(f"/admin/runs_app/release/{scored.pk}/change/").content.decode()
    assert "View on site" not in admin_page

    both = User.objects.create_user("audits-and-publishes", password="x", is_staff=True)
    both.groups.add(Group.objects.get(name="auditor"), Group.objects.get(name="publisher"))
    client.force_login(both)
    assert all(client.get(url).status_code == 200 for url in draft_pages(scored))
    generation = TextScore.objects.filter(release=scored).first().generation
    check = SpotCheck.objects.create(release=scored, generation=generation, auditor=both)
    for url in draft_pages(scored):
        assert client.get(url).status_code == 404, url
    SpotCheck.objects.filter(pk=check.pk).update(status=SpotCheck.Status.DONE)
    assert all(client.get(url).status_code == 200 for url in draft_pages(scored))


def test_publishing_closes_checks_not_done_and_says_so_first(client, scored):
    auditor = user_with("auditor", is_staff=True)
    generations = [score.generation for score in TextScore.objects.filter(release=scored)[:2]]
    batch = SpotCheckBatch.objects.create(release=scored, seed=1, size=2)
    checks = [SpotCheck.objects.create(
        release=scored, generation=generation, auditor=auditor,
        item=SpotCheckItem.objects.create(batch=batch, generation=generation, stratum="s",
                                          jury_class="supported", position=number))
        for number, generation in enumerate(generations, start=1)]
    client.force_login(user_with("publisher", is_staff=True))
    page = client.get("/releases/stats.0/publish/").content.decode()
    assert "2 assigned spot-checks of this release are not done yet" in page
    assert client.post("/releases/stats.0/publish/").status_code == 302

    client.force_login(auditor)
    queue = client.get("/review/").content.decode()
    assert "Nothing waiting for you." in queue
    assert queue.count("Closed: the release was published first") == 2
    closed = client.get(f"/review/checks/{checks[0].pk}/")
    assert closed.status_code == 200
    assert "was published before this check was done" in closed.content.decode()
    assert 'name="claim_1"' not in closed.content.decode()  # no blind form to fill in
    assert client.post(f"/review/checks/{checks[0].pk}/", {"note": "late"}).status_code == 409
    assert SpotCheck.objects.get(pk=checks[0].pk).status == SpotCheck.Status.ASSIGNED
