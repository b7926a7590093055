"""The ethics gate: until an approved review is recorded and the arena opened, it is not public.

Anonymous visitors get 404 on every page of it and in the API; staff may test it, and their
votes are shadow votes. Opening and closing are recorded, with who, when and why, and shown.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from audits_app.arena.models import ArenaEvent, ArenaVote, EthicsReview, ShadowReason
from audits_app.arena.services import ArenaError, arena_close, arena_open, arena_prepare
from audits_app.arena.tests.conftest import (
    ARENA_URLS,
    approve,
    consent,
    next_pair,
    read_for,
    staff_user,
    vote,
)
from audits_app.models import PopulationWeights

pytestmark = pytest.mark.django_db

def test_anonymous_visitors_get_404_before_approval(client, release, publisher):
    arena_prepare(release=release, user=publisher)  # prepared, even tested by staff: not public

    for url in ARENA_URLS:
        assert client.get(url).status_code == 404, url
    assert consent(client).status_code == 404
    assert "/arena/" not in client.get("/").content.decode()  # no link to it either


def test_an_approval_alone_does_not_open_it(client, release, publisher):
    approve(release, publisher)

    assert client.get("/arena/arena.0/").status_code == 404


def test_staff_can_test_it_before_approval_and_their_votes_are_shadow_votes(
    client, release, publisher, auditor
):
    arena_prepare(release=release, user=publisher)
    client.force_login(auditor)

    assert consent(client).status_code == 302
    html, token = next_pair(client)
    assert "Staff test" in html
    read_for(60)
    assert vote(client, token).status_code == 200

    recorded = ArenaVote.objects.get()
    assert recorded.shadow
    assert set(recorded.shadow_reasons) == {ShadowReason.NOT_OPEN, ShadowReason.STAFF}


def test_opening_needs_an_approved_review(release, publisher):
    with pytest.raises(ArenaError, match="no approved ethics review"):
        arena_open(release=release, user=publisher, reason="Ready")
    approve(release, publisher, decision=EthicsReview.Decision.REVISIONS)
    with pytest.raises(ArenaError, match="revisions requested"):
        arena_open(release=release, user=publisher, reason="Ready")
    assert not ArenaEvent.objects.exists()


def test_only_a_publisher_opens_it(release, publisher, auditor):
    approve(release, publisher)

    with pytest.raises(PermissionDenied):
        arena_open(release=release, user=auditor, reason="Ready")
    with pytest.raises(PermissionDenied):
        approve(release, auditor)


def test_once_open_anyone_can_vote_and_the_record_is_shown(client, open_arena):
    assert "/arena/" in client.get("/").content.decode()
    page = client.get("/arena/arena.0/").content.decode()
    assert "University Ethics Board" in page and "ERB-2026-014" in page
    assert "Approved by the board; pilot week." in page
    # The texts are held back while it is open: the page must not say they are published.
    assert "cannot be looked up with their writers there" in page
    assert "also published on the release's pages" not in page

    consent(client)
    _, token = next_pair(client)
    read_for(60)
    vote(client, token)
    assert ArenaVote.objects.get().counted


def test_closing_stops_votes_but_keeps_the_results_public(client, open_arena, publisher):
    consent(client)
    _, token = next_pair(client)
    arena_close(release=open_arena, user=publisher, reason="End of the pilot week.")

    assert "closed" in client.get("/arena/arena.0/pair/").content.decode()
    assert vote(client, token).status_code == 403
    assert client.get("/arena/arena.0/results/").status_code == 200
    events = client.get("/api/v1/releases/arena.0/arena/").json()["events"]
    assert [event["action"] for event in events] == ["close", "open"]
    assert events[0]["reason"] == "End of the pilot week." and events[0]["by"] == "publisher"


def test_a_review_that_does_not_approve_closes_an_open_arena(client, open_arena, publisher):
    approve(open_arena, publisher, decision=EthicsReview.Decision.WITHDRAWN,
            reference="ERB-2026-014-W")

    latest = ArenaEvent.objects.filter(release=open_arena).order_by("-at", "-pk").first()
    assert latest.action == ArenaEvent.Action.CLOSE and "ERB-2026-014-W" in latest.reason
    with pytest.raises(ArenaError, match="approval withdrawn"):
        arena_open(release=open_arena, user=publisher, reason="Again")


def test_the_record_cannot_be_changed_or_deleted(open_arena):
    review, event = EthicsReview.objects.get(), ArenaEvent.objects.get()
    review.reference = "other"
    for attempt in (review.save, review.delete, event.delete,
                    lambda: EthicsReview.objects.update(reference="x"),
                    lambda: ArenaEvent.objects.all().delete()):
        with pytest.raises(Exception, match="cannot"):
            attempt()
    assert EthicsReview.objects.get().reference == "ERB-2026-014"


def test_public_pages_name_staff_by_role_never_by_login_name(client, release):
    """A username is half of a login: the record of openings and the population weights'
    source say who acted by role."""
    opener = staff_user("t_opener_q7", "publisher")
    approve(release, opener)
    arena_open(release=release, user=opener, reason="Approved by the board; pilot week.")
    administrator = User.objects.create_superuser("t_admin_q7", password="pw")
    arena_close(release=release, user=administrator, reason="End of the week.")
    PopulationWeights.objects.create(
        language="en", shares={f"P{n:02d}": 1 / 12 for n in range(1, 13)},
        citation="Media trust survey 2025", url="https://stats.example/trust",
        source_date=release.publication.published_at.date(),
        entered_by=staff_user("t_entered_q7", "curator", "publisher"))
    pages = {url: client.get(url).content.decode() for url in [
        *ARENA_URLS, "/releases/arena.0/", "/api/v1/releases/arena.0/", "/"]}

    for url, page in pages.items():
        assert "_q7" not in page, url
    assert "<td>Opened</td><td>publisher</td>" in pages["/arena/arena.0/"]
    assert "<td>Closed</td><td>administrator</td>" in pages["/arena/arena.0/"]
    assert "entered by curator/publisher on" in pages["/releases/arena.0/"]
    events = client.get("/api/v1/releases/arena.0/arena/").json()["events"]
    assert [event["by"] for event in events] == ["administrator", "publisher"]


def test_the_record_names_one_who_holds_every_role_by_the_role_they_acted_in(client, release):
    """The demo login holds all four roles: an opening was done as a publisher, not by
    "curator and operator and auditor and publisher" as if by four people."""
    everyone = staff_user("t_demo_q8", "curator", "operator", "auditor", "publisher")
    approve(release, everyone)
    arena_open(release=release, user=everyone, reason="Approved by the board; pilot week.")

    assert "<td>Opened</td><td>publisher</td>" in client.get("/arena/arena.0/").content.decode()
    events = client.get("/api/v1/releases/arena.0/arena/").json()["events"]
    assert [event["by"] for event in events] == ["publisher"]
    client.force_login(everyone)  # staff see who it was, and as what
    manage = client.get("/arena/arena.0/manage/").content.decode()
    assert "<td>t_demo_q8 (publisher)</td>" in manage


@pytest.mark.parametrize("url", [url for url in ARENA_URLS if not url.startswith("/api/")])
def test_an_arena_page_redirects_away_a_parameter_it_does_not_read_as_every_public_page_does(
        client, open_arena, url):
    """`?bogus=1` answered the page as if it were not there; none of these pages reads a
    parameter (`query_params.reads`), so any is redirected away (a shared link's
    `?utm_source=` too), to the page without it, which still answers. The pair page is asked
    for once the visitor has consented."""
    consent(client)
    for query in ({"bogus": "1"}, {"utm_source": "x"}):
        redirected = client.get(url, query)
        assert redirected.status_code == 301, url
        assert redirected["Location"] == url, url
    assert client.get(url).status_code == 200, url
