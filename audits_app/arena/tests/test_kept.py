"""What each web process keeps between requests (`selectors.kept_catalogue`, the publication
found by its code) never decides whether a pair may be shown: a closed arena shows none, a
release's voters see only its own pairs, and show counts and new pairs are taken in."""

from __future__ import annotations

import pytest
from django.db.models import F
from django.test import Client

from audits_app.arena import selectors
from audits_app.arena.models import ArenaPair, ArenaShowing, ArenaVote
from audits_app.arena.services import arena_close, arena_open, arena_prepare, showing_create
from audits_app.arena.tests.conftest import (
    approve,
    consent,
    next_pair,
    published_arena_release,
    read_for,
    vote,
)

pytestmark = pytest.mark.django_db


def test_a_closed_arena_serves_no_pair_however_warm_the_kept_catalogue(
        client, open_arena, publisher):
    consent(client)
    _, token = next_pair(client)  # the catalogue and the publication are kept now
    assert open_arena.pk in selectors._kept
    arena_close(release=open_arena, user=publisher, reason="The pilot week is over.")

    page = client.get("/arena/arena.0/pair/")
    read_for(60)
    refused = vote(client, token)

    assert page.status_code == 200 and 'name="pair"' not in page.content.decode()
    assert "closed" in page.content.decode()
    assert refused.status_code == 403
    assert ArenaShowing.objects.count() == 1 and not ArenaVote.objects.exists()


def test_opening_counts_at_once_though_staff_warmed_the_kept_state(client, release, publisher):
    approve(release, publisher)
    arena_prepare(release=release)
    staff = Client()
    staff.force_login(publisher)
    consent(staff)
    next_pair(staff)  # a staff test before opening: the publication and catalogue are kept
    assert client.get("/arena/arena.0/pair/").status_code == 404

    arena_open(release=release, user=publisher, reason="Approved; open now.")

    consent(client)
    _, token = next_pair(client)
    read_for(60)
    assert vote(client, token).status_code == 200
    assert ArenaVote.objects.filter(shadow=False).count() == 1


def test_each_release_serves_only_its_own_pairs(open_arena, publisher):
    other = published_arena_release("arena.1")
    approve(other, publisher, reference="ERB-2026-015")
    arena_open(release=other, user=publisher, reason="Approved; a second arena.")
    voter = Client()
    consent(voter, "arena.0")
    consent(voter, "arena.1")

    def latest() -> ArenaShowing:
        return ArenaShowing.objects.select_related("pair__release").order_by("-pk").first()

    for code in ("arena.0", "arena.1"):  # each arena's pair page draws one of its own pairs
        next_pair(voter, code)
        assert latest().pair.release.code == code
    read_for(60)
    for code in ("arena.0", "arena.1"):  # its own pair still to answer, then the next
        voter.arena_next = None
        _, token = next_pair(voter, code)
        answered = vote(voter, token, code)
        assert answered.status_code == 200
        assert latest().pair.release.code == code

    own = {release.pk: set(ArenaPair.objects.filter(release=release).values_list("pk", flat=True))
           for release in (open_arena, other)}
    assert own[open_arena.pk].isdisjoint(own[other.pk])
    for release in (open_arena, other):
        assert set(selectors.kept_catalogue(release).catalogue.ids.tolist()) == own[release.pk]


def test_show_counts_count_this_process_at_once_and_others_after_the_refresh(
        open_arena, monkeypatch):
    from audits_app.arena.services import voter_create

    kept = selectors.kept_catalogue(open_arena)
    showing = showing_create(release=open_arena, voter=voter_create())
    row = kept.row[showing.pair_id]
    assert kept.catalogue.shown[row] == 1  # this process's own showing, without a query

    # Another process shows every pair five times; seen here once the counts are read again.
    ArenaPair.objects.filter(release=open_arena).update(shown=F("shown") + 5)
    monkeypatch.setattr(selectors, "SHOWN_REFRESH_SECONDS", 0.0)
    refreshed = selectors.kept_catalogue(open_arena)
    assert refreshed is kept  # the same pairs: only the counts are read again
    assert kept.catalogue.shown[row] == 6
    assert kept.catalogue.shown.sum() == 1 + 5 * len(kept.catalogue.ids)
    assert kept.simulation_queued(showing.pair_id)


def test_pairs_prepared_after_the_catalogue_was_kept_are_taken_in(release, monkeypatch):
    monkeypatch.setattr(selectors, "SHOWN_REFRESH_SECONDS", 0.0)
    assert len(selectors.kept_catalogue(release).catalogue.ids) == 0

    arena_prepare(release=release)

    kept = selectors.kept_catalogue(release)
    assert set(kept.catalogue.ids.tolist()) == set(
        ArenaPair.objects.filter(release=release).values_list("pk", flat=True))
    assert len(kept.catalogue.ids) > 0
