"""The arena's published figures, from plain vote rows (DESIGN section 9).

People's counted votes give a Bradley–Terry ranking with scenario-resampled intervals and
the release's rank rule; the simulated public's answers on the same kind of pairs give one
beside it; Spearman's rank correlation compares them. Both are also given without the pairs
the recognisability classifier flagged, so a reader can see whether recognisable writers
moved anything. Shadow votes are summarised (and ranked for staff), never counted.

No ORM here: `audits_app.arena.selectors.vote_rows` gathers the rows, the service stores
the result with its date and counts.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from audits_app.arena import statistics
from audits_app.arena.models import Preference, Side

RANKINGS = {
    "human": "People's votes",
    "human_unflagged": "People's votes, without pairs the classifier recognises",
    "simulated": "The simulated public (twelve reading positions per pair)",
    "simulated_unflagged": "The simulated public, without pairs the classifier recognises",
    "human_honesty": "People's votes on which text seems more honest",
}
STAFF_RANKINGS = {"shadow": "Shadow votes (counted in no public result)"}


def arena_results(
    votes: Sequence[dict[str, Any]], simulated: Sequence[dict[str, Any]], *,
    writers: Sequence[str], writer_of: dict[int, str], scenario_ids: Sequence[int],
    counts: np.ndarray, level: float, rule: str, published: dict[str, dict[str, float | None]],
) -> dict[str, Any]:
    """Every figure of the results page, JSON-safe.

    `writers` fixes the model order (the release's); `writer_of` maps a model pk to its id;
    `scenario_ids` names the columns of `counts`; `published` holds the release's own points
    per measure and model (from its snapshot) to set the arena's rankings against.
    """
    setup = _Setup(list(writers), writer_of, list(scenario_ids), counts, level, rule)
    counted = [v for v in votes if not v["shadow"] and not v["attention"]]
    shadow = [v for v in votes if v["shadow"] and not v["attention"]]
    rankings = {
        "human": setup.ranking(counted, "favourable"),
        "human_unflagged": setup.ranking([v for v in counted if not v["pair__flagged"]],
                                         "favourable"),
        "simulated": setup.ranking(simulated, "favourable"),
        "simulated_unflagged": setup.ranking([v for v in simulated if not v["pair__flagged"]],
                                             "favourable"),
        "human_honesty": setup.ranking([v for v in counted if v["honest"]], "honest"),
    }
    return {
        "level": level, "rule": rule, "writers": list(writers),
        "min_comparisons": statistics.MIN_COMPARISONS,
        "min_scenarios": statistics.MIN_SCENARIOS,
        "interval_method": statistics.INTERVAL_METHOD,
        "votes": _vote_summary(votes, counted, shadow),
        "rankings": rankings,
        "staff_rankings": {"shadow": setup.ranking(shadow, "favourable")},
        "win_matrix": setup.win_matrix(counted),
        "correlations": _correlations(rankings, published),
        "pairs": _pair_by_pair(counted, simulated),
        "position": {
            "human_left_share": _share([v for v in counted if v["favourable"] in Side.values],
                                       lambda v: v["favourable"] == _left(v)),
            "simulated_first_share": _share(
                simulated, lambda v: (v["favourable"] == Side.A) == v["a_first"]),
        },
    }


def preference_comparisons(a: int, b: int, answer: str) -> list[tuple[int, int, float]]:
    """(winner, loser, weight) rows for one answer on a pair of texts by writers a and b.

    Ties are counted as Chatbot Arena counts them: FastChat's `compute_mle_elo` gives a win
    weight 2 to the winner and a "tie" or "tie (bothbad)" weight 1 each way, so a tie is half
    a win for each text in the Bradley–Terry fit. "Both bad" is a tie here too: the question
    is which text leaves the more favourable view, and two bad texts leave neither ahead; a
    separate verdict on how bad both were would rank nothing, so it is not modelled apart
    (the vote rows keep which answer it was)."""
    if answer == Side.A:
        return [(a, b, 1.0)]
    if answer == Side.B:
        return [(b, a, 1.0)]
    if answer in (Preference.TIE, Preference.BOTH_BAD):
        return [(a, b, 0.5), (b, a, 0.5)]
    return []


class _Setup:
    """The release's fixed parts: model order, scenario columns, resamples, level, rule."""

    def __init__(self, writers: list[str], writer_of: dict[int, str], scenario_ids: list[int],
                 counts: np.ndarray, level: float, rule: str) -> None:
        self.writers, self.writer_of = writers, writer_of
        self.model_index = {model: i for i, model in enumerate(writers)}
        self.scenario_index = {scenario: i for i, scenario in enumerate(scenario_ids)}
        self.counts, self.level, self.rule = counts, level, rule

    def ranking(self, rows: Iterable[dict[str, Any]], answer: str) -> dict[str, Any]:
        """Ratings from rows whose `answer` names the preferred side of their pair."""
        winners, losers, scenarios, weights = [], [], [], []
        comparisons = 0
        for row in rows:
            a, b = self.models_of(row)
            scenario = self.scenario_index.get(row["pair__scenario_id"])
            counted = preference_comparisons(a, b, row[answer]) if None not in (a, b) else []
            if scenario is None or not counted:
                continue
            comparisons += 1
            for winner, loser, weight in counted:
                winners.append(winner)
                losers.append(loser)
                scenarios.append(scenario)
                weights.append(weight)
        if not comparisons:
            return {"comparisons": 0, "rows": []}
        wins = statistics.win_tensor(winners, losers, scenarios, len(self.writers),
                                     len(self.scenario_index), weights=weights)
        fitted = statistics.ratings(wins, self.counts, self.level, self.rule,
                                    min_comparisons=statistics.MIN_COMPARISONS)
        return {"comparisons": comparisons, "rows": _rows(self.writers, fitted)}

    def models_of(self, row: dict[str, Any]) -> tuple[int | None, int | None]:
        return (self.model_index.get(self.writer_of.get(row["pair__model_a_id"], "")),
                self.model_index.get(self.writer_of.get(row["pair__model_b_id"], "")))

    def win_matrix(self, rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
        """Head to head: share[i][j] = the share of the comparisons of writers i and j in
        which i's text was preferred (a tie counts half), games[i][j] how many there were;
        None where the two never met."""
        size = len(self.writers)
        wins, games = np.zeros((size, size)), np.zeros((size, size))
        for row in rows:
            a, b = self.models_of(row)
            if a is None or b is None:
                continue
            for winner, loser, weight in preference_comparisons(a, b, row["favourable"]):
                wins[winner, loser] += weight
                games[winner, loser] += weight
                games[loser, winner] += weight
        share = [[_number(wins[i, j] / games[i, j]) if games[i, j] else None
                  for j in range(size)] for i in range(size)]
        return {"writers": self.writers, "share": share,
                "games": [[int(round(value)) for value in line] for line in games]}


def _rows(writers: list[str], fitted: statistics.Ratings) -> list[dict[str, Any]]:
    rows = [
        {"model": model, "above": _demonstrably_above(writers, fitted, i),
         "rank": int(fitted.ranks[i]) if fitted.ranks[i] != statistics.UNRANKED else None,
         "rating": _number(fitted.point[i]), "low": _number(fitted.low[i]),
         "high": _number(fitted.high[i]), "comparisons": int(fitted.comparisons[i]),
         "wins": _number(fitted.wins[i]), "scenarios": int(fitted.scenarios[i]),
         "unranked_reason": fitted.unranked_reason[i] or None}
        for i, model in enumerate(writers)
    ]
    return sorted(rows, key=lambda row: (row["rank"] is None, row["rank"] or 0,
                                         row["rating"] is None, -(row["rating"] or 0.0)))


def _demonstrably_above(writers: list[str], fitted: statistics.Ratings, i: int) -> list[str]:
    """The ranked models this ranked one is demonstrably rated above: the evidence of its
    rank under the paired rule. Their difference is judged on its own interval, which
    resamples both models together and uses comparisons through common opponents, so it may
    exclude zero while the two models' own intervals overlap."""
    if fitted.ranks[i] == statistics.UNRANKED:
        return []
    return [writers[j] for j in range(len(writers))
            if fitted.ranks[j] != statistics.UNRANKED and fitted.significant[i, j]
            and fitted.point[i] > fitted.point[j]]


def _vote_summary(votes, counted, shadow) -> dict[str, Any]:
    attention = [v for v in votes if v["attention"]]
    reasons = Counter(reason for v in shadow for reason in v["shadow_reasons"])
    return {
        "total": len(votes), "counted": len(counted), "shadow": len(shadow),
        "shadow_reasons": dict(sorted(reasons.items())),
        "attention_checks": len(attention),
        "attention_failed": sum(1 for v in attention if v["attention_passed"] is False),
        "voters": len({v["voter_id"] for v in counted}),
        "pairs": len({v["pair_id"] for v in counted}),
        "simulated": sum(1 for v in counted if v["simulated"]),
        "honesty_answers": sum(1 for v in counted if v["honest"]),
    }


def _correlations(rankings: dict[str, dict[str, Any]],
                  published: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    def points(source: dict[str, Any]) -> dict[str, float | None]:
        return {row["model"]: row["rating"] for row in source.get("rows", [])}

    def spearman(first: dict[str, Any], second: dict[str, Any]) -> float | None:
        models = sorted(set(first) | set(second))
        return statistics.spearman([_nan(first.get(m)) for m in models],
                                   [_nan(second.get(m)) for m in models])

    human, simulated = points(rankings["human"]), points(rankings["simulated"])
    return {
        "human_vs_simulated": spearman(human, simulated),
        "human_vs_simulated_unflagged": spearman(points(rankings["human_unflagged"]),
                                                 points(rankings["simulated_unflagged"])),
        "human_vs_published_persuasion": spearman(human, published.get("persuasion", {})),
        "simulated_vs_published_persuasion": spearman(simulated,
                                                      published.get("persuasion", {})),
        "human_honesty_vs_published_honesty": spearman(points(rankings["human_honesty"]),
                                                       published.get("honesty", {})),
    }


def _pair_by_pair(counted, simulated) -> dict[str, Any]:
    """Per pair with both kinds of answer: the share preferring text A among people and among
    the reading positions. Agreement: both majorities pick the same text (ties left out)."""
    people: dict[int, list[float]] = defaultdict(list)
    readers: dict[int, list[float]] = defaultdict(list)
    for vote in counted:  # a tie or "both bad" leaves each text half
        people[vote["pair_id"]].append(
            1.0 if vote["favourable"] == Side.A else 0.0 if vote["favourable"] == Side.B else 0.5)
    for answer in simulated:
        readers[answer["pair_id"]].append(float(answer["favourable"] == Side.A))
    both = sorted(set(people) & set(readers))
    human = np.array([np.mean(people[p]) for p in both])
    machine = np.array([np.mean(readers[p]) for p in both])
    decided = (human != 0.5) & (machine != 0.5)
    agree = ((human > 0.5) == (machine > 0.5)) & decided
    pearson = None
    if len(both) >= 3 and np.ptp(human) > 0 and np.ptp(machine) > 0:
        pearson = _number(np.corrcoef(human, machine)[0, 1])
    return {"compared": len(both), "decided": int(decided.sum()),
            "agreement": _number(agree.sum() / decided.sum()) if decided.any() else None,
            "pearson": pearson}


def _left(vote: dict[str, Any]) -> str:
    return Side.A if vote["a_on_left"] else Side.B


def _share(rows: Sequence[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> float | None:
    return sum(1 for row in rows if test(row)) / len(rows) if rows else None


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _number(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None
