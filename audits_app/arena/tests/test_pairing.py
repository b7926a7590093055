"""Pair selection: balanced across writers and scenarios, informative, deterministic."""

from __future__ import annotations

import itertools

import numpy as np

from audits_app.arena.pairing import LOAD_STEP, Catalogue, choose_pair


def catalogue(models: int = 4, scenarios: int = 3, cells: int = 4, missing: int | None = None,
              apart: tuple[int, int] | None = None):
    """Every two writers of every cell; writer `missing` lacks half its texts (it refused);
    the two writers `apart` never make a pair (their texts are the same words, say)."""
    rows = []
    for scenario, cell in itertools.product(range(scenarios), range(cells)):
        present = [m for m in range(models) if not (m == missing and cell % 2 == 0)]
        rows += [(a, b, scenario) for a, b in itertools.combinations(present, 2)
                 if (a, b) != apart]
    array = np.array(rows)
    return Catalogue(ids=np.arange(100, 100 + len(rows)), model_a=array[:, 0],
                     model_b=array[:, 1], scenario=array[:, 2], shown=np.zeros(len(rows), int),
                     n_models=models, n_scenarios=scenarios)


def show_many(pairs: Catalogue, times: int, seed: int = 0, ratings=None) -> Catalogue:
    rng = np.random.default_rng(seed)
    shown = pairs.shown.copy()
    for _ in range(times):
        current = Catalogue(pairs.ids, pairs.model_a, pairs.model_b, pairs.scenario, shown,
                            pairs.n_models, pairs.n_scenarios)
        chosen = choose_pair(current, rng=rng, ratings=ratings)
        shown[np.flatnonzero(pairs.ids == chosen)[0]] += 1
    return Catalogue(pairs.ids, pairs.model_a, pairs.model_b, pairs.scenario, shown,
                     pairs.n_models, pairs.n_scenarios)


def model_counts(pairs: Catalogue) -> np.ndarray:
    return (np.bincount(pairs.model_a, pairs.shown, pairs.n_models)
            + np.bincount(pairs.model_b, pairs.shown, pairs.n_models))


def test_the_same_seed_chooses_the_same_pairs():
    pairs = catalogue()
    first = [choose_pair(pairs, rng=np.random.default_rng(5)) for _ in range(3)]
    assert len(set(first)) == 1
    assert (show_many(pairs, 40, seed=2).shown == show_many(pairs, 40, seed=2).shown).all()


def test_writers_and_scenarios_are_shown_about_equally_often():
    # The refusing writer has fewer pairs; it is still shown as often as the others.
    shown = show_many(catalogue(missing=3), 300, ratings=np.array([2.0, 1.0, 0.0, -1.0]))

    per_model = model_counts(shown)
    per_scenario = np.bincount(shown.scenario, shown.shown, shown.n_scenarios)
    assert per_model.max() - per_model.min() <= 0.05 * per_model.mean()
    assert per_scenario.max() - per_scenario.min() <= 0.05 * per_scenario.mean()


def pairing_counts(pairs: Catalogue) -> dict[tuple[int, int], int]:
    counts: dict[tuple[int, int], int] = {}
    for a, b, shown in zip(pairs.model_a, pairs.model_b, pairs.shown, strict=True):
        key = (int(min(a, b)), int(max(a, b)))
        counts[key] = counts.get(key, 0) + int(shown)
    return counts


def test_every_pairing_that_exists_is_shown_about_as_often_when_one_cannot_exist():
    # Writers 0 and 3 never meet: equal loads of the four writers would leave pairing (1, 2)
    # nearly unshown. The balance is over the five pairings that exist.
    shown = show_many(catalogue(apart=(0, 3)), 300, ratings=np.array([2.0, 1.0, 0.0, -1.0]))

    per_pairing = pairing_counts(shown)
    assert len(per_pairing) == 5
    assert max(per_pairing.values()) - min(per_pairing.values()) <= 2 * LOAD_STEP, per_pairing


def test_texts_are_spread_over_voters_before_a_pair_is_repeated_much():
    shown = show_many(catalogue(), 300, ratings=np.array([2.0, 1.0, 0.0, -1.0]))

    assert shown.shown.max() - shown.shown.min() <= LOAD_STEP


def test_among_balanced_pairs_writers_rated_alike_come_first():
    pairs = catalogue(models=3, scenarios=1, cells=1)  # pairs (0,1), (0,2), (1,2)
    ratings = np.array([0.0, 0.1, 3.0])

    assert choose_pair(pairs, rng=np.random.default_rng(0), ratings=ratings) == 100


def test_pairs_already_shown_to_the_voter_are_never_chosen():
    pairs = catalogue(models=3, scenarios=1, cells=1)

    assert choose_pair(pairs, exclude=[100, 101], rng=np.random.default_rng(0)) == 102
    assert choose_pair(pairs, exclude=[100, 101, 102], rng=np.random.default_rng(0)) is None
