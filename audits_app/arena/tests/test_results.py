"""Results: Bradley–Terry rankings of people and of the simulated public, with and without
recognisable pairs, on a page, in the API and as CSV, each with its date and vote count."""

from __future__ import annotations

import collections
import csv
import html
import io
import re
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from audits_app.arena import pairing, presentation
from audits_app.arena import services as arena_services
from audits_app.arena import statistics as arena_statistics
from audits_app.arena.csv_export import results_csv
from audits_app.arena.models import (
    ArenaPair,
    ArenaResult,
    ArenaShowing,
    ArenaVote,
    RecognisabilityRun,
)
from audits_app.arena.services import results_current, results_refresh
from audits_app.arena.simulation import simulation_drain
from audits_app.arena.tests.conftest import (
    ARENA_URLS,
    WRITERS,
    consent,
    next_pair,
    read_for,
    vote,
    vote_next,
)
from audits_app.csv_files import spreadsheet_cell as neutralise
from audits_app.templatetags.numbers import MINUS, true_minus

pytestmark = pytest.mark.django_db


@pytest.fixture
def voted(client, open_arena, monkeypatch):
    """Two voters who prefer the spinner's text, then the advocate's, then the others. A
    small arena: models are ranked from five comparisons on (the floor has its own test)."""
    monkeypatch.setattr(arena_statistics, "MIN_COMPARISONS", 5)
    # Two voters' votes make a batch here (the batch rule has its own tests).
    monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTERS", 2)
    monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTES", 10)
    order = {"fixture/spinner": 0, "fixture/advocate": 1, "fixture/candid": 2,
             "fixture/refuser": 3}
    # Pairs chosen so that every two writers meet before any two meet again, and each
    # scenario serves as often as the other: drawn at random (seeded or not: the catalogue's
    # order differs with the database and the tests run before), the spinner and the advocate
    # were sometimes never paired, so both went unbeaten and the data no longer said which
    # comes first; and taken by lowest id alone, every vote could fall in one scenario, where
    # no model has an interval or a rank. How pairs are drawn has tests of its own
    # (test_pairing.py); these test what the votes make of them.
    met_count: collections.Counter = collections.Counter()
    scenario_count: collections.Counter = collections.Counter()

    def every_two_writers_meet(catalogue, *, exclude=(), ratings=None, rng):
        excluded = set(np.asarray(exclude, dtype=np.int64).tolist())
        available = [index for index, pair_id in enumerate(catalogue.ids.tolist())
                     if pair_id not in excluded]
        if not available:
            return None

        def writers(index):
            return frozenset((int(catalogue.model_a[index]), int(catalogue.model_b[index])))

        chosen = min(available, key=lambda index: (
            met_count[writers(index)], scenario_count[int(catalogue.scenario[index])],
            int(catalogue.ids[index])))
        met_count[writers(chosen)] += 1
        scenario_count[int(catalogue.scenario[chosen])] += 1
        return int(catalogue.ids[chosen])

    choose_pair = pairing.choose_pair
    monkeypatch.setattr(pairing, "choose_pair", every_two_writers_meet)
    for network in range(2):
        # Each voter from a network of its own: a batch needs as many origins as voters.
        client.defaults["REMOTE_ADDR"] = f"198.51.{100 + network}.10"
        consent(client)
        for _ in range(12):
            # Each vote on the preferred writer's side, wherever the page put it (a vote,
            # once cast on a published release, never changes).
            _, token = next_pair(client)
            showing = ArenaShowing.objects.select_related(
                "pair__model_a", "pair__model_b").order_by("-pk").first()
            read_for(60)
            pair = showing.pair
            a_wins = order[pair.model_a.openrouter_id] < order[pair.model_b.openrouter_id]
            side = "left" if a_wins == showing.a_on_left else "right"
            answers = {"favourable": showing.attention or side, "honest": "right"}
            response = vote(client, token, **answers)
            # Recorded: the next pair, or after the last pair a redirect to the pair page.
            assert response.status_code == 200 or response["Location"] == "/arena/arena.0/pair/"
        client.cookies.clear()
    met = {frozenset((vote.showing.pair.model_a.openrouter_id,
                      vote.showing.pair.model_b.openrouter_id))
           for vote in ArenaVote.objects.filter(showing__attention="").select_related(
               "showing__pair__model_a", "showing__pair__model_b")}
    assert frozenset(("fixture/spinner", "fixture/advocate")) in met, met
    assert len(scenario_count) >= 2 and min(scenario_count.values()) >= 6, scenario_count
    monkeypatch.setattr(pairing, "choose_pair", choose_pair)  # the tests' own votes: as drawn
    simulation_drain(open_arena)
    return open_arena


def test_rankings_follow_the_votes_beside_the_simulated_public(voted):
    result = results_refresh(release=voted)
    data = result.data

    human = data["rankings"]["human"]
    assert human["comparisons"] == data["votes"]["counted"] == result.votes_counted > 0
    rows = {row["model"]: row for row in human["rows"]}
    assert set(rows) == set(WRITERS)
    spinner, refuser = rows["fixture/spinner"], rows["fixture/refuser"]
    assert spinner["rank"] == 1 and spinner["wins"] == spinner["comparisons"] > 0
    assert refuser["wins"] == 0 and refuser["rating"] < spinner["rating"]
    simulated = data["rankings"]["simulated"]
    # The simulated public's answers on the pairs first shown before the batch's last vote
    # (here every pair shown; a later one waits: the next test).
    from audits_app.arena.models import ArenaVote

    cut = ArenaVote.objects.get(pk=result.counted_through).created_at
    shown = ArenaPair.objects.exclude(simulation_queued_at=None)
    assert simulated["comparisons"] == 12 * shown.filter(simulation_queued_at__lte=cut).count()
    assert -1 <= data["correlations"]["human_vs_simulated"] <= 1
    assert data["pairs"]["compared"] == data["votes"]["pairs"]
    assert data["votes"]["attention_checks"] == 2


def test_rankings_are_also_given_without_the_pairs_the_classifier_recognises(voted):
    run = RecognisabilityRun.objects.get(release=voted)
    flagged = ArenaPair.objects.filter(flagged=True)
    assert all(pair.recognised_probability > 0.5 for pair in flagged)
    assert all(run.probabilities[str(pair.generation_a_id)] <= 0.5
               and run.probabilities[str(pair.generation_b_id)] <= 0.5
               for pair in ArenaPair.objects.filter(flagged=False))

    data = results_refresh(release=voted).data
    everything, unflagged = data["rankings"]["human"], data["rankings"]["human_unflagged"]
    counted_on_flagged = sum(1 for _ in flagged.filter(votes__shadow=False,
                                                       votes__attention=False))
    assert unflagged["comparisons"] == everything["comparisons"] - counted_on_flagged


def test_the_results_page_api_and_csv_carry_date_and_counts(client, voted):
    page = client.get("/arena/arena.0/results/").content.decode()
    result = ArenaResult.objects.get()
    assert f"from {result.votes_counted} counted votes" in page
    assert "Spinner (fixture)" in page and "Can the writers be recognised?" in page

    answer = client.get("/api/v1/releases/arena.0/arena/").json()
    assert answer["results"]["votes_counted"] == result.votes_counted
    assert answer["results"]["computed_at"] == result.computed_at.isoformat()
    assert "staff_rankings" not in answer["results"]
    assert answer["recognisability"]["chance"] == 0.25

    rows = list(csv.DictReader(io.StringIO(client.get("/arena/arena.0/results.csv")
                                           .content.decode())))
    assert {row["table"] for row in rows} == {"human", "human_unflagged", "simulated",
                                              "simulated_unflagged", "human_honesty"}
    assert {row["votes_counted"] for row in rows} == {str(result.votes_counted)}
    assert "expanded t interval" in page
    assert answer["results"]["interval_method"] == arena_statistics.INTERVAL_METHOD
    assert {"unranked_reason", "scenarios"} <= set(rows[0])


def test_staff_see_the_shadow_votes_analysed(client, voted, auditor):
    client.force_login(auditor)
    consent(client)
    vote_next(client)
    results_refresh(release=voted)

    answer = client.get("/api/v1/releases/arena.0/arena/").json()
    assert answer["results"]["staff_rankings"]["shadow"]["comparisons"] == 1
    assert answer["results"]["votes"]["shadow_reasons"] == {"staff": 1}
    assert "Staff: Shadow votes" in client.get("/arena/arena.0/results/").content.decode()


def test_stored_results_are_recomputed_only_after_a_batch_of_new_votes_and_a_pause(
        client, voted, monkeypatch):
    first = results_current(release=voted)
    assert first.votes_counted > 0
    assert results_current(release=voted) == first  # nothing new
    # Five minutes later (a stored result is a record: it is never backdated, time moves on).
    later = timezone.now() + timedelta(minutes=5)
    monkeypatch.setattr(arena_services.timezone, "now", lambda: later)

    consent(client)
    vote_next(client)
    assert results_current(release=voted) == first  # one vote: no batch yet
    monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTES", 2)
    monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTERS", 1)
    # A batch, but the stored figures were computed moments ago (on this clock).
    monkeypatch.setattr(arena_services.timezone, "now", lambda: first.computed_at)
    vote_next(client)
    assert results_current(release=voted) == first
    monkeypatch.setattr(arena_services.timezone, "now", lambda: later)
    assert results_current(release=voted).votes_counted == first.votes_counted + 2
    assert ArenaResult.objects.get(pk=first.pk).computed_at == first.computed_at


def test_a_voter_cannot_find_their_pairs_writers_by_comparing_the_results(client, voted):
    """The figures before and after one voter's counted vote are the same however often they
    are recomputed: counted votes join them only in batches of several voters' votes."""
    before = results_refresh(release=voted)
    shown = set(ArenaPair.objects.exclude(simulation_queued_at=None).values_list("pk", flat=True))
    consent(client)
    assert vote_next(client).status_code == 200
    # A pair nobody was shown before is shown (to a demo voter, by hand: the draw is random).
    arena_services.showing_create(release=voted, voter=arena_services.voter_create(),
                                  background=False, seen=sorted(shown))
    simulation_drain(voted)  # the simulated public answers on it
    new = ArenaPair.objects.exclude(simulation_queued_at=None).exclude(pk__in=shown)
    assert new.filter(simulated_votes__status="done").exists()
    after = results_refresh(release=voted)
    for key in ("rankings", "win_matrix", "pairs", "correlations"):
        assert after.data[key] == before.data[key], key
    assert after.votes_counted == before.votes_counted
    page = client.get("/arena/arena.0/results/").content.decode()
    # It says that later votes wait, not how many: a count that moved with each vote would
    # tell a voter whether theirs was counted or set aside as a shadow vote.
    assert "Votes cast since are not in these figures yet" in page
    assert "waits for the next batch" not in page


def test_counted_votes_join_the_results_only_as_a_batch_of_several_voters():
    def votes(*voters: int, start: int = 1) -> list[dict]:
        return [{"pk": start + n, "voter_id": voter, "origin": f"net{voter}", "shadow": False,
                 "attention": False} for n, voter in enumerate(voters)]

    batch_votes, batch_voters = arena_services.RESULTS_BATCH_VOTES, \
        arena_services.RESULTS_BATCH_VOTERS
    one_voter = votes(*[7] * (batch_votes * 3))
    assert arena_services.counted_through(one_voter, 0) == 0  # many votes, one voter
    several = votes(*[n % batch_voters for n in range(batch_votes)])
    assert arena_services.counted_through(several, 0) == batch_votes  # the newest of them
    assert arena_services.counted_through(several[:-1], 0) == 0  # a vote short
    # After a batch, the next waits for a whole batch of its own.
    assert arena_services.counted_through(several, batch_votes) == batch_votes
    shadow = [{**vote, "shadow": True} for vote in several]
    assert arena_services.counted_through(shadow, 0) == 0  # shadow votes make no batch
    # Five cookies on one network are one origin: no batch, however many votes.
    one_network = [{**vote, "origin": "net0"} for vote in several * 3]
    assert arena_services.counted_through(one_network, 0) == 0
    four_networks = [{**vote, "origin": f"net{vote['voter_id'] % 4}"} for vote in several]
    assert arena_services.counted_through(four_networks, 0) == 0
    # A vote stored before origins were kept counts as its voter's own.
    legacy = [{**vote, "origin": ""} for vote in several]
    assert arena_services.counted_through(legacy, 0) == batch_votes


def test_one_visitor_with_five_cookies_fills_no_batch(client, voted, monkeypatch, rf):
    """The tryout's way in: five consents (five voter cookies) from one address, twenty
    counted votes between them, and the results compared before and after. The votes are
    counted, but they come from one origin, so they wait: no figure moves."""
    before = results_refresh(release=voted)
    monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTES", 4)  # a small batch, same rule
    for _ in range(arena_services.RESULTS_BATCH_VOTERS):
        client.cookies.clear()
        consent(client)
        for _ in range(2):
            assert vote_next(client).status_code == 200
    new = ArenaVote.objects.filter(pk__gt=before.counted_votes_through, shadow=False,
                                   attention=False)
    assert new.values("voter").distinct().count() == arena_services.RESULTS_BATCH_VOTERS
    from audits_app.arena.ratelimits import origin_key

    address = client.defaults.get("REMOTE_ADDR", "127.0.0.1")
    the_test_clients = origin_key(rf.get("/", REMOTE_ADDR=address))
    assert new.count() >= 4 and set(new.values_list("origin", flat=True)) == {the_test_clients}
    after = results_refresh(release=voted)
    assert after.counted_votes_through == before.counted_votes_through
    for key in ("rankings", "win_matrix", "pairs"):
        assert after.data[key] == before.data[key], key


def test_the_origin_is_a_daily_keyed_hash_of_a_network_never_the_address(rf, settings):
    from audits_app.arena.ratelimits import origin_key

    def origin(address: str) -> str:
        return origin_key(rf.get("/", REMOTE_ADDR=address))

    assert origin("203.0.113.7") == origin("203.0.113.200") != origin("203.0.114.7")
    assert origin("2001:db8:1:ffff::1") == origin("2001:db8:1:1::2") != origin("2001:db8:2::1")
    assert len(origin("203.0.113.7")) == 16 and "203" not in origin("203.0.113.7")
    here = origin("203.0.113.7")
    settings.SECRET_KEY = "another secret key for another instance, just as long as it is"
    assert origin("203.0.113.7") != here  # keyed: not a hash anyone could recompute


def test_csv_cells_that_would_run_as_formulas_are_neutralised():
    assert neutralise("=HYPERLINK(\"x\")") == "'=HYPERLINK(\"x\")"
    assert neutralise("@SUM(A1)") == "'@SUM(A1)" and neutralise("+1+1") == "'+1+1"
    assert neutralise("-0.25") == "-0.25" and neutralise(-0.25) == -0.25
    assert neutralise("Spinner (fixture)") == "Spinner (fixture)"


def test_csv_names_are_neutralised_in_the_export(voted):
    result = results_refresh(release=voted)
    text = results_csv(result, {"fixture/spinner": "=cmd|' /C calc'!A0"})
    assert "'=cmd" in text and "\n=cmd" not in text and ",=cmd" not in text


def test_the_api_and_csv_are_404_before_the_arena_opens(client, release):
    assert "/api/v1/releases/arena.0/arena/" in ARENA_URLS
    assert client.get("/api/v1/releases/arena.0/arena/").status_code == 404
    assert client.get("/api/v1/releases/nope.0/arena/").status_code == 404


def test_a_shadow_vote_changes_no_counted_vote_and_no_human_ranking(client, voted):
    """A new voter answers against the grain, too fast to count: recorded as a shadow vote,
    and the public figures stay exactly what they were."""
    before = results_refresh(release=voted).data
    consent(client)
    response = vote_next(client, seconds=1, favourable="right", honest="left")
    assert response.status_code == 200  # recorded: the next pair follows
    from audits_app.arena.models import ArenaVote

    latest = ArenaVote.objects.order_by("-pk").first()
    assert latest.shadow and not latest.attention
    after = results_refresh(release=voted).data

    assert after["votes"]["counted"] == before["votes"]["counted"]
    assert after["rankings"]["human"] == before["rankings"]["human"]


def _rows(answers: list[str], scenarios: int = 2) -> list[dict]:
    """Vote rows as `selectors.vote_rows` gives them: writer 1 is text A, writer 2 text B."""
    return [{"pk": n, "voter_id": n, "pair_id": n, "favourable": answer, "honest": "",
             "a_on_left": True, "attention": False, "attention_passed": None, "shadow": False,
             "shadow_reasons": [], "simulated": False, "pair__flagged": False,
             "pair__model_a_id": 1, "pair__model_b_id": 2, "pair__scenario_id": 10 + s}
            for s in range(scenarios) for n, answer in enumerate(answers, start=100 * s)]


def _figures(rows: list[dict]) -> dict:
    from audits_app.arena.results import arena_results

    counts = np.random.default_rng(1).multinomial(2, [0.5, 0.5], size=200)
    return arena_results(rows, [], writers=["w/one", "w/two"], writer_of={1: "w/one",
                         2: "w/two"}, scenario_ids=[10, 11], counts=counts, level=0.95,
                         rule="paired", published={})


def test_a_tie_is_half_a_win_for_each_text_and_both_bad_is_a_tie(monkeypatch):
    monkeypatch.setattr(arena_statistics, "MIN_COMPARISONS", 5)
    tied = _figures(_rows(["a"] * 10 + ["t"] * 10))
    both_bad = _figures(_rows(["a"] * 10 + ["x"] * 10))
    wins_only = _figures(_rows(["a"] * 15 + ["b"] * 5))
    by_model = {row["model"]: row for row in tied["rankings"]["human"]["rows"]}
    assert by_model["w/one"]["wins"] == 30 and by_model["w/two"]["wins"] == 10
    assert by_model["w/one"]["comparisons"] == 40 == tied["rankings"]["human"]["comparisons"]
    # 10 wins and 10 ties are 15 wins of 20, as in Chatbot Arena's fit
    for other in (both_bad, wins_only):
        assert [r["rating"] for r in other["rankings"]["human"]["rows"]] == pytest.approx(
            [r["rating"] for r in tied["rankings"]["human"]["rows"]])
    assert tied["win_matrix"]["share"] == [[None, 0.75], [0.25, None]]
    assert tied["win_matrix"]["games"] == [[0, 40], [40, 0]]
    assert tied["position"]["human_left_share"] == 1.0  # ties are no side


def test_the_results_page_has_an_interval_plot_and_a_win_rate_matrix(client, voted):
    page = client.get("/arena/arena.0/results/").content.decode()
    result = ArenaResult.objects.get()
    rated = [row for row in result.data["rankings"]["human"]["rows"] if row["rating"] is not None]
    svg = page.split('<svg class="arena-intervals"')[1].split("</svg>")[0]
    assert svg.count('<g class="model"') == len(rated) >= 2
    first = rated[0]

    def shown(value: float) -> str:  # a rating below the average model's has a true minus
        return true_minus(f"{value:.2f}")

    assert (f"rating {shown(first['rating'])}, interval {shown(first['low'])} to "
            f"{shown(first['high'])}") in svg
    matrix = page.split('<table class="win-matrix">')[1].split("</table>")[0]
    games = result.data["win_matrix"]["games"]
    played = [i for i, line in enumerate(games) if any(line)]
    assert matrix.count('<th scope="row">') == len(played)
    writers = result.data["win_matrix"]["writers"]
    i, j = next((i, j) for i in played for j in played if games[i][j])
    share = result.data["win_matrix"]["share"]
    assert share[i][j] + share[j][i] == pytest.approx(1.0)
    assert writers == WRITERS


def test_the_results_page_leads_with_the_ranking_and_shows_what_each_rank_rests_on(
        client, voted):
    page = client.get("/arena/arena.0/results/").content.decode()
    ranking = page.index('class="arena-ranking"')
    assert ranking < page.index('id="interval-plot"') < page.index('id="method"')
    assert ranking < page.index('id="win-matrix"') < page.index("Intervals: ")

    # Under the paired rule a rank is one plus the number of models demonstrably above it,
    # and each row names the models it is demonstrably above: the two must agree, so a rank
    # never rests on points alone.
    rows = [row for row in ArenaResult.objects.get().data["rankings"]["human"]["rows"]
            if row["rank"] is not None]
    assert len(rows) >= 2
    for row in rows:
        assert row["rank"] == 1 + sum(1 for other in rows if row["model"] in other["above"])
    table = page[ranking:].split("</table>")[0]
    rankings = ArenaResult.objects.get().data["rankings"]
    shown = [row for key in ("human", "simulated") for row in rankings[key]["rows"]]
    assert ("above " in table) == any(row["above"] for row in shown)
    assert "above fixture/" not in table, "models are named as on the release's pages"


def test_the_csv_says_which_votes_came_from_simulated_voters(client, voted, monkeypatch):
    rows = list(csv.DictReader(io.StringIO(client.get("/arena/arena.0/results.csv")
                                           .content.decode())))
    assert {(row["table"].startswith("human"), row["voters"], row["votes_simulated"])
            for row in rows} == {(True, "people", "0"), (False, "simulated public", "0")}
    voter = arena_services.voter_create()  # a demo voter: simulated, never a person
    for _ in range(3):
        showing = arena_services.showing_create(release=voted, voter=voter, background=False)
        arena_services.vote_record(showing=showing, voter=voter,
                                   favourable=showing.attention or "left", simulated=True,
                                   now=showing.shown_at + timedelta(seconds=60))
    monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTERS", 1)  # its votes, a batch
    monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTES", 2)
    result = results_refresh(release=voted)
    simulated = result.data["votes"]["simulated"]
    assert simulated > 0
    answer = client.get("/api/v1/releases/arena.0/arena/").json()
    assert answer["results"]["votes"]["simulated"] == simulated
    rows = list(csv.DictReader(io.StringIO(client.get("/arena/arena.0/results.csv")
                                           .content.decode())))
    human = [row for row in rows if row["table"] == "human"]
    assert human and {(row["voters"], row["votes_simulated"]) for row in human} == {
        ("people and simulated voters", str(simulated))}
    assert {row["voters"] for row in rows if row["table"] == "simulated"} == {
        "simulated public"}


def test_a_single_value_interval_of_recognisability_is_explained(client, open_arena,
                                                                  monkeypatch):
    """0.8 [0.8, 0.8] happens when every scenario gives the same share; the page says what
    that means (and does not when every interval has width). The stored run of a published
    release never changes, so the page is shown other summaries of it."""
    from audits_app import http_cache
    from audits_app.arena import presentation

    stored = presentation.recognisability_data
    note = "An interval of a single value"

    def page_with(flat_row: bool) -> str:
        def data(release_id, names):
            summary = stored(release_id, names)
            summary["low"], summary["high"] = 0.2, 0.6
            summary["per_writer"] = [
                {**row, "low": row["accuracy"], "high": row["accuracy"]}
                if flat_row and index == 0 else {**row, "low": 0.1, "high": 0.9}
                for index, row in enumerate(summary["per_writer"])]
            return summary

        monkeypatch.setattr(presentation, "recognisability_data", data)
        http_cache.forget_rendered()
        response = client.get("/arena/arena.0/results/")
        assert response.status_code == 200
        return response.content.decode()

    assert note not in page_with(flat_row=False)
    assert note in page_with(flat_row=True)


def test_the_csv_writes_whole_wins_as_whole_numbers_and_keeps_halves(voted):
    """A tie counts half a win for each text, so wins are stored as floats: 12.0 read as a
    measurement in a spreadsheet. Whole counts are written as integers; 2.5 stays 2.5."""
    stored = results_refresh(release=voted)
    rows = list(csv.DictReader(io.StringIO(results_csv(stored, {}))))
    assert rows and all(row["wins"].isdigit() for row in rows), [row["wins"] for row in rows]
    assert {float(row["wins"]) for row in rows} != {0.0}
    human = stored.data["rankings"]["human"]
    halves = ArenaResult(
        release=stored.release, computed_at=stored.computed_at, votes_counted=3,
        data={"rankings": {"human": {**human, "rows": [
            {**human["rows"][0], "wins": 2.5}, {**human["rows"][1], "wins": 3.0},
            {**human["rows"][2], "wins": 0.0}]}}})
    assert [row["wins"] for row in csv.DictReader(io.StringIO(results_csv(halves, {})))] == [
        "2.5", "3", "0"]


def simulated_votes(release, count: int = 3, monkeypatch=None) -> None:
    """Votes by a demo voter: simulated, never a person; with `monkeypatch`, its votes make
    a batch of the results by themselves."""
    if monkeypatch is not None:
        monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTERS", 1)
        monkeypatch.setattr(arena_services, "RESULTS_BATCH_VOTES", 1)
    voter = arena_services.voter_create()
    for _ in range(count):
        showing = arena_services.showing_create(release=release, voter=voter, background=False)
        arena_services.vote_record(showing=showing, voter=voter,
                                   favourable=showing.attention or "left", simulated=True,
                                   now=showing.shown_at + timedelta(seconds=60))


def ranking_headings(client) -> list[str]:
    from audits_app import http_cache

    http_cache.forget_rendered()
    page = client.get("/arena/arena.0/results/").content.decode()
    headings = [html.unescape(heading) for heading in re.findall(
        r'<th colspan="4">([^<]+) \(\d+ comparisons\)</th>', page)]
    assert len(headings) == 4 and all(heading.startswith("The simulated public")
                                      for heading in headings[1::2]), headings
    return headings


def test_the_ranking_of_counted_votes_says_when_they_are_simulated(client, open_arena, monkeypatch):
    """In the demo every counted vote is a simulated voter's: the column was still headed
    "People's votes". It says whose votes they are, as the CSV's `voters` does."""
    simulated_votes(open_arena, count=6, monkeypatch=monkeypatch)
    result = results_refresh(release=open_arena)
    assert result.data["votes"]["simulated"] == result.votes_counted > 0
    headings = ranking_headings(client)
    assert headings[::2] == [
        "Votes of simulated voters (not people)",
        "Votes of simulated voters (not people), without pairs the classifier recognises"]
    assert not any("People" in heading for heading in headings)
    page = html.unescape(client.get("/arena/arena.0/results/").content.decode())
    plot = page[page.index('id="interval-plot"'):page.index("Which text seems more honest")]
    assert "Ratings from the votes of simulated voters (not people) and their intervals" in plot
    assert "Ratings from the votes of simulated voters (not people) with" in plot  # its title
    assert "People's" not in plot and "people's" not in plot


def test_the_ranking_of_counted_votes_says_when_some_are_simulated(client, voted, monkeypatch):
    assert ranking_headings(client)[::2] == [
        "People's votes", "People's votes, without pairs the classifier recognises"]
    simulated_votes(voted, monkeypatch=monkeypatch)
    results_refresh(release=voted)
    assert ranking_headings(client)[::2] == [
        "Votes of people and simulated voters",
        "Votes of people and simulated voters, without pairs the classifier recognises"]


def test_the_interval_plot_writes_a_true_minus_in_its_text_and_ascii_in_its_coordinates():
    """Ratings are centred on the average model, so half are negative: the plot's ticks and
    tooltips wrote them with a hyphen-minus, where the pages write U+2212."""
    rows = [{"model": "fixture/candid", "model_name": "Candid",
             "first": {"rating": 0.84, "low": 0.31, "high": 1.42, "rank": 1}},
            {"model": "fixture/spinner", "model_name": "Spinner",
             "first": {"rating": -0.84, "low": -1.42, "high": -0.31, "rank": 2}}]
    svg = str(presentation.interval_plot(rows, level=0.95))
    texts = "".join(re.findall(r">([^<]*)<", svg))
    assert f"rating {MINUS}0.84, interval {MINUS}1.42 to {MINUS}0.31" in texts
    assert f"{MINUS}1.5" in texts  # the leftmost tick
    assert not re.search(r"-\d", texts), texts
    assert all(MINUS not in value for value in re.findall(r'="([^"]*)"', svg))
