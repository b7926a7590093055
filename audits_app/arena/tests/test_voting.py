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
    TOKEN,
    answer_pairs,
    consent,
    next_pair,
    read_for,
    vote,
    vote_next,
)
from audits_app.pages.viewer import load_snapshot
from audits_app.templatetags import arena as arena_tags
from runs_app.models import Generation
from scenarios_app.models import Scenario

pytestmark = pytest.mark.django_db


def writer_identifiers(release) -> list[str]:
    snapshot = load_snapshot(release.publication)
    return [value for model in snapshot.models
            for value in (model.id, model.name, model.family)]


def test_no_model_name_or_id_appears_anywhere_in_a_pair_page(client, open_arena):
    consent(client)
    pages = answer_pairs(client, ArenaPair.objects.count())
    identifiers = writer_identifiers(open_arena)
    generation_ids = {str(pk) for pk in Generation.objects.values_list("pk", flat=True)}

    for page in pages:
        lowered = page.lower()
        assert not [name for name in identifiers if name.lower() in lowered]
        assert "fixture" not in lowered
        # Nor a generation id in the form, which the public text API would map to its writer.
        assert not set(page.split('"')) & generation_ids


def test_held_out_and_refused_texts_never_appear(client, open_arena):
    eligible = {text.id for text in arena_texts(load_snapshot(open_arena.publication))}
    held_out = Scenario.objects.get(slug=HELD_OUT).organisation_name
    refused = list(Generation.objects.filter(score__refusal="refused"))
    assert refused and Generation.objects.filter(scenario_version__scenario__slug=HELD_OUT)

    pairs = ArenaPair.objects.values_list("generation_a_id", "generation_b_id")
    assert pairs and all(a in eligible and b in eligible for a, b in pairs)
    consent(client)
    shown = html.unescape("\n".join(answer_pairs(client, len(pairs))))
    assert held_out not in shown
    assert not [text for text in refused if text.text[:80] in shown]


def test_one_vote_per_voter_per_pair(client, open_arena):
    consent(client)
    _, token = next_pair(client)
    read_for(60)

    assert vote(client, token).status_code == 200
    again = vote(client, token, favourable="right")
    assert again.status_code == 409
    assert ArenaVote.objects.count() == 1 and ArenaVote.objects.get().favourable

    showing = ArenaShowing.objects.order_by("pk").first()  # the next pair's followed the vote
    with pytest.raises(IntegrityError):  # the database holds the rule too
        ArenaVote.objects.create(pair=showing.pair, voter=showing.voter, favourable="a",
                                 a_on_left=True)


def test_a_voter_is_never_shown_the_same_pair_twice(client, open_arena):
    consent(client)
    pairs = ArenaPair.objects.count()
    answer_pairs(client, pairs)

    assert ArenaShowing.objects.values("pair").distinct().count() == pairs
    assert ArenaShowing.objects.count() == pairs
    assert "every pair" in client.get("/arena/arena.0/pair/").content.decode()


def test_every_showing_is_counted_on_its_pair_once(open_arena):
    # The first showing of a pair plans its simulated answers; a later one (on PostgreSQL one
    # statement for the showing and its count) is counted all the same.
    pairs = ArenaPair.objects.count()
    for number in range(2):
        voter = Client(REMOTE_ADDR=f"10.0.0.{number + 1}")
        consent(voter)
        answer_pairs(voter, pairs)

    assert ArenaShowing.objects.count() == 2 * pairs
    assert set(ArenaPair.objects.values_list("shown", flat=True)) == {2}


def test_a_pair_page_links_to_the_arena_without_asking_the_cache(client, open_arena,
                                                                  monkeypatch):
    consent(client)
    monkeypatch.setattr(arena_tags, "public_arena_codes", lambda: pytest.fail("cache asked"))
    page, _ = next_pair(client)
    assert '<a href="/arena/">Arena</a>' in page


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
    _, first = next_pair(client)
    read_for(60)

    assert vote(client, first).status_code == 200
    _, second = next_pair(client)  # the pair the vote answered with
    read_for(60)
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


def test_behind_a_proxy_each_forwarded_address_counts_apart(open_arena, settings, monkeypatch):
    """Behind the proxy REMOTE_ADDR is the proxy itself; the visitor is the last
    X-Forwarded-For entry (what comes before it the visitor may have written)."""
    settings.BEHIND_PROXY = True
    monkeypatch.setattr(ratelimits, "VOTERS_HARD", ("arena.voters.hard", "2/h"))

    def new_voter(address: str) -> int:
        return consent(Client(HTTP_X_FORWARDED_FOR=f"10.9.9.9, {address}")).status_code

    crowd = [new_voter(f"198.51.100.{number}") for number in range(5)]
    one_address = [new_voter("203.0.113.7") for _ in range(3)]

    assert crowd == [302] * 5
    assert one_address == [302, 302, 429]


def test_a_vote_for_the_left_text_is_a_vote_for_b_when_b_was_shown_on_the_left(
    client, open_arena
):
    """The screen side is translated to the pair's side: otherwise the human ranking would
    measure where a text stood on the page."""
    consent(client)
    _, token = next_pair(client)
    showing = ArenaShowing.objects.order_by("-pk").first()
    assert not showing.attention  # the first pair is a real one
    ArenaShowing.objects.filter(pk=showing.pk).update(a_on_left=False)
    read_for(60)
    assert vote(client, token).status_code == 200  # "left"

    cast = ArenaVote.objects.get(showing=showing)
    assert cast.a_on_left is False and cast.favourable == "b"


def test_a_pair_token_tells_nothing_but_the_voters_own_count(open_arena):
    """Two voters' first pairs get the same payload: no showing id, no global sequence."""
    from django.core import signing

    payloads = []
    for _ in range(2):
        voter = Client()
        consent(voter)
        _, token = next_pair(voter)
        payloads.append(token.split(":")[0])
        showing = ArenaShowing.objects.order_by("-pk").first()
        assert str(showing.pk) not in signing.b64_decode(payloads[-1].encode()).decode()
    assert payloads[0] == payloads[1]


def test_consenting_again_resets_no_limit_on_counted_votes_per_pair(open_arena, monkeypatch):
    """One network making a new voter for every vote on the same pair: past the per-pair
    limit its votes are shadow votes, however many voters it made."""
    monkeypatch.setattr(ratelimits, "VOTES_PER_PAIR", ("arena.votes.pair", "2/d"))
    counted = []
    pair = None
    for _ in range(4):
        voter = Client()
        consent(voter)
        _, token = next_pair(voter)
        showing = ArenaShowing.objects.order_by("-pk").first()
        # Every new voter is shown the same pair (as a stuffer would make sure of).
        pair = pair or showing.pair_id
        ArenaShowing.objects.filter(pk=showing.pk).update(pair_id=pair, attention="")
        read_for(60)
        assert vote(voter, token).status_code == 200
        counted.append(not ArenaVote.objects.get(showing=showing).shadow)

    assert counted == [True, True, False, False]
    assert ArenaVote.objects.filter(pair_id=pair, shadow=True).count() == 2


@pytest.mark.parametrize(("answer", "stored"), [("tie", "t"), ("both_bad", "x")])
def test_a_voter_may_answer_a_tie_or_both_bad(client, open_arena, answer, stored):
    consent(client)
    page, token = next_pair(client)
    assert f'name="favourable" value="{answer}"' in page
    showing = ArenaShowing.objects.order_by("-pk").first()
    read_for(60)
    response = vote(client, token, favourable=answer)
    assert response.status_code == 200
    assert ArenaVote.objects.get(showing=showing).favourable == stored


def test_the_next_pair_comes_straight_after_a_vote(client, open_arena):
    """No "thank you" page to click through, and no redirect: the vote's answer is the next
    pair, which says the answer was recorded. The page puts the pair page's address (which,
    like every pair's, names no pair and no writer) in the browser's history, so a reload
    asks for a pair; sending the same form again records nothing."""
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    response = vote(client, token)
    assert response.status_code == 200
    following = response.content.decode()
    assert "your answer is recorded" in following and 'name="pair"' in following
    assert TOKEN.search(following).group(1) != token
    assert 'data-url="/arena/arena.0/pair/"' in following and "replace_state" in following
    assert ArenaShowing.objects.count() == 2
    assert vote(client, token).status_code == 409  # the same form again (a reload)
    assert ArenaVote.objects.count() == 1
    assert "replace_state" not in next_pair(client)[0]  # a pair asked for by GET


def test_a_resent_vote_still_409s_but_shows_the_pair_its_answer_showed(client, open_arena):
    """Without JavaScript the vote's answer stays at /vote/, and a reload sends the form
    again: refused (409) and recorded once, but the pair the voter was reading comes back
    (the same showing: no new pair drawn, nothing more shown), and answering it works."""
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    vote(client, token)
    first = ArenaVote.objects.get()
    shown = ArenaShowing.objects.order_by("-pk").first()

    reloaded = vote(client, token, favourable="right")

    assert reloaded.status_code == 409
    page = reloaded.content.decode()
    assert "already answered" in page and 'name="pair"' in page
    assert ArenaShowing.objects.count() == 2 and ArenaVote.objects.count() == 1
    assert ArenaVote.objects.get().favourable == first.favourable
    resumed = TOKEN.search(page).group(1)
    read_for(60)
    assert vote(client, resumed).status_code == 200  # the pair being read: answered
    assert ArenaVote.objects.filter(showing=shown).count() == 1
    assert ArenaShowing.objects.count() == 3
    assert vote(client, resumed).status_code == 409  # and sent again: the third pair


def test_a_resent_vote_with_no_pair_after_it_gets_the_plain_409(client, open_arena):
    """The latest pair shown already answered (here, the one the form names): nothing to
    resume, the page links to the next pair."""
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    vote(client, token)
    following = TOKEN.search(client.arena_next.content.decode()).group(1)
    read_for(60)
    vote(client, following)

    ArenaShowing.objects.filter(vote=None).delete()  # as if no pair followed the last vote
    again = vote(client, following)

    assert again.status_code == 409 and 'name="pair"' not in again.content.decode()
    assert "Take the next pair" in again.content.decode()


def test_a_vote_past_the_pair_limit_is_recorded_and_the_pair_page_says_slow_down(
    client, open_arena, monkeypatch
):
    """The vote's answer counts the next pair against the pair limit; past it the vote is
    still recorded, and the answer sends the voter to the pair page, which refuses."""
    monkeypatch.setattr(ratelimits, "PAIRS_HARD", ("arena.pairs.hard", "1/h"))
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    response = vote(client, token)
    assert (response.status_code, response["Location"]) == (302, "/arena/arena.0/pair/")
    assert ArenaVote.objects.count() == 1 and ArenaShowing.objects.count() == 1
    assert client.get(response["Location"]).status_code == 429


def test_an_answer_that_is_no_choice_is_refused_with_the_question_named(client, open_arena):
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    response = vote(client, token, favourable="neither")
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not ArenaVote.objects.exists()


def test_opening_a_form_address_leads_to_the_page_with_the_form(client, open_arena):
    """/consent/ and /vote/ only take the form's POST; opened by hand, or reloaded after an
    error shown there, they send the visitor on instead of showing a blank page."""
    assert client.get("/arena/arena.0/consent/")["Location"] == "/arena/arena.0/"
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    assert vote(client, token, favourable="neither").status_code == 400

    reopened = client.get("/arena/arena.0/vote/")

    assert (reopened.status_code, reopened["Location"]) == (303, "/arena/arena.0/pair/")
    assert "Which text" in client.get(reopened["Location"]).content.decode()
    assert not ArenaVote.objects.exists()


def test_a_form_address_still_refuses_a_post_without_a_csrf_token(open_arena):
    strict = Client(enforce_csrf_checks=True)
    assert strict.get("/arena/arena.0/consent/").status_code == 303
    assert strict.post("/arena/arena.0/consent/", {"agree": "on"}).status_code == 403
    assert strict.post("/arena/arena.0/vote/", {}).status_code == 403
    other_method = Client().put("/arena/arena.0/vote/")
    assert other_method.status_code == 405 and other_method["Allow"] == "POST"
    assert "only receives a form sent from another page" in other_method.content.decode()


@pytest.mark.parametrize("limit", ["VOTERS_HARD", "PAIRS_HARD", "VOTES_HARD"])
def test_every_arena_429_says_in_how_many_seconds_to_come_back(client, open_arena, monkeypatch,
                                                               limit):
    """Retry-After: the seconds until this connection's window of the limit ends, as
    django-ratelimit itself counts it (`time_left`, read without counting)."""
    from django.test import RequestFactory
    from django_ratelimit.core import get_usage

    group, _ = getattr(ratelimits, limit)
    monkeypatch.setattr(ratelimits, limit, (group, "1/h"))
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    if limit == "VOTERS_HARD":
        client.cookies.clear()
        refused = consent(client)
    elif limit == "PAIRS_HARD":
        # Reloading the pair still to answer counts nothing (it is no new pair), so the
        # limit is met once that pair is answered and another is asked for.
        assert client.get("/arena/arena.0/pair/").status_code == 200
        assert vote(client, token).status_code == 302  # recorded; no next pair past the limit
        refused = client.get("/arena/arena.0/pair/")
    else:
        answered = vote(client, token)
        assert answered.status_code == 200  # recorded; its answer is the next pair
        refused = vote(client, TOKEN.search(answered.content.decode()).group(1))
    assert refused.status_code == 429
    usage = get_usage(RequestFactory().get("/"), group=group, key=ratelimits.connection_key,
                      rate="1/h", increment=False)
    assert 0 < int(refused["Retry-After"]) <= 3600
    assert int(refused["Retry-After"]) in (usage["time_left"], usage["time_left"] + 1)


def test_a_vote_is_stored_as_the_answer_recorded_it(client, open_arena):
    """Every column of a vote is stored as the answer recorded it: the sides mapped back to
    texts a and b, the shadow reasons, the reading time."""
    consent(client)
    _, token = next_pair(client)
    read_for(60)
    assert vote(client, token, favourable="right", honest="left",
                recognised="on").status_code == 200

    stored = ArenaVote.objects.get()
    assert stored.pk and stored.showing.voter_id == stored.voter_id
    expected_side = {"right": "b", "left": "a"} if stored.a_on_left else {"right": "a",
                                                                         "left": "b"}
    assert stored.favourable == expected_side["right"]
    assert stored.honest == expected_side["left"]
    assert stored.recognised and stored.a_on_left == stored.showing.a_on_left
    assert stored.shadow and ShadowReason.RECOGNISED in stored.shadow_reasons
    assert stored.seconds_to_vote >= 60 and not stored.simulated and stored.note == ""


def test_vote_forms_share_their_fields_and_nothing_else():
    from audits_app.arena.forms import VoteForm

    wrong, right = VoteForm({"favourable": "nonsense"}), VoteForm({"pair": "t",
                                                                    "favourable": "left"})
    assert wrong.fields is right.fields is VoteForm.base_fields
    assert not wrong.is_valid() and set(wrong.errors) == {"pair", "favourable"}
    assert right.is_valid() and not right.errors
    assert right.cleaned_data == {"pair": "t", "favourable": "left", "honest": "",
                                  "recognised": False}
    assert not VoteForm().is_bound and not VoteForm().errors


def test_the_pair_page_links_the_arena_s_own_addresses(client, open_arena):
    """The vote form's action and, after a vote, the address put in the history are the
    reversed URLs (kept per process: `selectors.arena_url`)."""
    from django.urls import reverse

    consent(client)
    page, token = next_pair(client)
    vote_url, pair_url = (reverse(f"arena:{name}", kwargs={"code": "arena.0"})
                          for name in ("vote", "pair"))
    assert f'<form method="post" action="{vote_url}">' in page
    read_for(60)
    answer = vote(client, token).content.decode()
    assert f'<form method="post" action="{vote_url}">' in answer
    assert f'data-url="{pair_url}"' in answer


def test_reloading_the_pair_page_shows_the_same_pair_until_it_is_answered(
        client, open_arena, monkeypatch):
    """GET /pair/ drew and counted a new pair on every reload: the pair being read was lost,
    the pair counted as shown (and the simulated public asked) for nobody's answer. A reload
    shows the pair still to answer again, as a resent vote's 409 does: same texts, same
    sides, same check, with a token that answers it; no new showing, nothing counted, and
    the pairs limit does not count it either."""
    monkeypatch.setattr(ratelimits, "PAIRS_HARD", ("arena.pairs.hard", "1/h"))
    consent(client)
    first = client.get("/arena/arena.0/pair/")
    reloads = [client.get("/arena/arena.0/pair/") for _ in range(3)]
    assert [response.status_code for response in reloads] == [200, 200, 200]

    def texts(response) -> str:
        return response.content.decode().split('<div class="pair">')[1].split("</div>")[0]

    assert all(texts(response) == texts(first) for response in reloads)
    showing = ArenaShowing.objects.get()
    assert ArenaPair.objects.get(pk=showing.pair_id).shown == 1
    assert sum(ArenaPair.objects.values_list("shown", flat=True)) == 1
    # The reload's token answers that same pair; the first page's token is then answered.
    read_for(60)
    token = TOKEN.search(reloads[-1].content.decode()).group(1)
    assert vote(client, token, favourable=showing.attention or "left").status_code == 302
    assert ArenaVote.objects.get().pair_id == showing.pair_id
    assert vote(client, TOKEN.search(first.content.decode()).group(1)).status_code == 409
    # Answered: the next ask is a new pair, and it meets the pairs limit (1 an hour).
    assert client.get("/arena/arena.0/pair/").status_code == 429
