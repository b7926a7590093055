"""Voting: blind pairs, one vote per voter per pair, rate limits, shadow votes, anonymity."""

from __future__ import annotations

import html
import json

import pytest
from django.core import serializers
from django.db import IntegrityError
from django.test import Client

from audits_app.arena import ratelimits
from audits_app.arena.models import (
    ArenaPair,
    ArenaShowing,
    ArenaVote,
    ArenaVoter,
    ShadowReason,
)
from audits_app.arena.selectors import arena_texts
from audits_app.arena.tests.conftest import (
    HELD_OUT,
    consent,
    next_pair,
    read_for,
    vote,
    vote_next,
)
from audits_app.public import publication_snapshot
from runs_app.models import Generation
from scenarios_app.models import Scenario

pytestmark = pytest.mark.django_db


def writer_identifiers(release) -> list[str]:
    snapshot = publication_snapshot(release.publication)
    return [value for model in snapshot["models"]
            for value in (model["id"], model["name"], model["family"])]


def test_no_model_name_or_id_appears_anywhere_in_a_pair_page(client, open_arena):
    consent(client)
    pages = [next_pair(client)[0] for _ in range(ArenaPair.objects.count())]
    identifiers = writer_identifiers(open_arena)
    generation_ids = {str(pk) for pk in Generation.objects.values_list("pk", flat=True)}

    for page in pages:
        lowered = page.lower()
        assert not [name for name in identifiers if name.lower() in lowered]
        assert "fixture" not in lowered
        # Nor a generation id in the form, which the public text API would map to its writer.
        assert not set(page.split('"')) & generation_ids


def test_held_out_and_refused_texts_never_appear(client, open_arena):
    eligible = {text["id"] for text in arena_texts(publication_snapshot(open_arena.publication))}
    held_out = Scenario.objects.get(slug=HELD_OUT).organisation_name
    refused = list(Generation.objects.filter(score__refusal="refused"))
    assert refused and Generation.objects.filter(scenario_version__scenario__slug=HELD_OUT)

    pairs = ArenaPair.objects.values_list("generation_a_id", "generation_b_id")
    assert pairs and all(a in eligible and b in eligible for a, b in pairs)
    consent(client)
    shown = html.unescape("\n".join(next_pair(client)[0] for _ in range(len(pairs))))
    assert held_out not in shown
    assert not [text for text in refused if text.text[:80] in shown]


def test_one_vote_per_voter_per_pair(client, open_arena):
    consent(client)
    _, token = next_pair(client)
    read_for(60)

    assert vote(client, token).status_code == 302
    again = vote(client, token, favourable="right")
    assert again.status_code == 409
    assert ArenaVote.objects.count() == 1 and ArenaVote.objects.get().favourable

    showing = ArenaShowing.objects.get()
    with pytest.raises(IntegrityError):  # the database holds the rule too
        ArenaVote.objects.create(pair=showing.pair, voter=showing.voter, favourable="a",
                                 a_on_left=True)


def test_a_voter_is_never_shown_the_same_pair_twice(client, open_arena):
    consent(client)
    pairs = ArenaPair.objects.count()
    for _ in range(pairs):
        next_pair(client)

    assert ArenaShowing.objects.values("pair").distinct().count() == pairs
    assert "every pair" in client.get("/arena/arena.0/pair/").content.decode()


def test_a_rate_limited_voters_votes_become_shadow_votes(client, open_arena, monkeypatch):
    monkeypatch.setattr(ratelimits, "VOTES_PER_VOTER", ("arena.votes.voter", "2/10m"))
    consent(client)
    for _ in range(4):  # the third pair is an attention check, answered as instructed
        vote_next(client)

    votes = list(ArenaVote.objects.order_by("pk"))
    assert [v.shadow for v in votes] == [False, False, True, True]
    assert votes[-1].shadow_reasons == [ShadowReason.RATE]


def test_past_the_hard_limit_votes_are_refused(client, open_arena, monkeypatch):
    monkeypatch.setattr(ratelimits, "VOTES_HARD", ("arena.votes.hard", "1/h"))
    consent(client)
    first, second = next_pair(client)[1], next_pair(client)[1]
    read_for(60)

    assert vote(client, first).status_code == 302
    assert vote(client, second).status_code == 429
    assert ArenaVote.objects.count() == 1


@pytest.mark.parametrize("answers, seconds, reason", [
    ({}, 2, ShadowReason.TOO_FAST),
    ({"recognised": "on"}, 60, ShadowReason.RECOGNISED),
])
def test_suspect_votes_are_shadow_votes(client, open_arena, answers, seconds, reason):
    consent(client)
    _, token = next_pair(client)
    read_for(seconds)
    vote(client, token, **answers)

    assert ArenaVote.objects.get().shadow_reasons == [reason]


def test_failing_an_attention_check_turns_all_the_voters_votes_into_shadow_votes(
    client, open_arena
):
    consent(client)
    for _ in range(2):
        vote_next(client)
    html, token = next_pair(client)
    assert "Attention check" in html
    instructed = ArenaShowing.objects.order_by("-pk").first().attention
    read_for(60)
    vote(client, token, favourable="left" if instructed == "right" else "right")

    assert ArenaVoter.objects.get().flags == [ShadowReason.ATTENTION]
    assert all(v.shadow and ShadowReason.ATTENTION in v.shadow_reasons
               for v in ArenaVote.objects.all())
    vote_next(client)
    assert ArenaVote.objects.order_by("-pk").first().shadow


def test_passing_an_attention_check_changes_nothing(client, open_arena):
    consent(client)
    for _ in range(3):
        vote_next(client)

    check = ArenaVote.objects.get(attention=True)
    assert check.attention_passed and not check.counted
    assert ArenaVote.objects.filter(attention=False, shadow=False).count() == 2


def test_voting_needs_consent_a_valid_cookie_and_a_csrf_token(client, open_arena):
    assert client.get("/arena/arena.0/pair/")["Location"] == "/arena/arena.0/"
    refused = consent(Client(), ).status_code
    assert refused == 302  # consent itself is the form that sets the cookie
    assert client.post("/arena/arena.0/consent/", {}).status_code == 400  # box not ticked

    consent(client)
    _, token = next_pair(client)
    client.cookies["baitbench_arena_voter"] = client.cookies["baitbench_arena_voter"].value + "x"
    assert vote(client, token)["Location"] == "/arena/arena.0/"  # a forged cookie is no voter

    strict = Client(enforce_csrf_checks=True)
    consent_response = strict.post("/arena/arena.0/consent/", {"agree": "on"})
    assert consent_response.status_code == 403
    assert not ArenaVote.objects.exists()


def test_a_token_shown_to_one_voter_is_useless_to_another(client, open_arena):
    consent(client)
    _, token = next_pair(client)
    other = Client()
    consent(other)
    read_for(60)

    assert vote(other, token).status_code == 400
    assert not ArenaVote.objects.exists()


def test_nothing_about_the_voter_is_stored_but_a_random_id(client, open_arena):
    client.defaults["REMOTE_ADDR"] = "203.0.113.77"
    client.defaults["HTTP_USER_AGENT"] = "Mozilla/5.0 TellTaleBrowser"
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    vote(client, token, honest="right", recognised="on")

    stored = serializers.serialize("json", [*ArenaVoter.objects.all(), *ArenaVote.objects.all(),
                                            *ArenaShowing.objects.all()])
    assert "203.0.113" not in stored and "TellTale" not in stored
    assert {field.name for field in ArenaVoter._meta.fields} == {
        "id", "key", "consented_at", "flags", "flagged_at"}
    assert json.loads(stored)[0]["fields"]["key"] == client.cookies[
        "baitbench_arena_voter"].value.split(":")[0]
