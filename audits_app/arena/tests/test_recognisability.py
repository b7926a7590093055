"""The writer classifier: it finds a writer with a telltale phrase, and only chance otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from audits_app.arena.recognisability import RECOGNISED_ABOVE, RecognisabilityError, recognise
from audits_app.statistics import resample_counts

WRITERS = ["fixture/plain-a", "fixture/plain-b", "fixture/plain-c", "fixture/telltale"]
TELLTALE = "Rest assured, we remain fully committed to transparency at every step."
SCENARIOS = [f"scenario-{i}" for i in range(6)]


def corpus(seed: int = 0, per_cell: int = 6):
    """Texts from one shared vocabulary, with words of their own per scenario; only the
    telltale writer leaves a mark (its closing phrase)."""
    rng = np.random.default_rng(seed)
    shared = [f"word{i}" for i in range(300)]
    texts, writers, scenarios = [], [], []
    for scenario in SCENARIOS:
        own = [f"{scenario}-term{i}" for i in range(40)]
        for writer in WRITERS:
            for _ in range(per_cell):
                words = list(rng.choice(shared, 70)) + list(rng.choice(own, 20))
                text = " ".join(rng.permutation(words)) + "."
                if writer == "fixture/telltale":
                    text += " " + TELLTALE
                texts.append(text)
                writers.append(writer)
                scenarios.append(scenario)
    return texts, writers, scenarios


def run(texts, writers, scenarios):
    return recognise(texts, writers, scenarios, scenario_order=SCENARIOS,
                     counts=resample_counts(len(SCENARIOS), 500, seed=5), level=0.95)


def test_it_finds_the_writer_with_a_telltale_phrase():
    texts, writers, scenarios = corpus()
    found = run(texts, writers, scenarios)
    by_writer = {row.writer: row for row in found.per_writer}

    telltale = by_writer["fixture/telltale"]
    assert telltale.accuracy >= 0.95 and telltale.low > found.chance
    # Confident enough that pairs with its texts are flagged as recognisable.
    own = np.array(writers) == "fixture/telltale"
    assert np.mean(found.true_probability[own] > RECOGNISED_ABOVE) >= 0.9
    # The plain writers cannot be told apart: about one in three among themselves.
    plain = [by_writer[w].accuracy for w in WRITERS[:3]]
    assert max(plain) < 0.6
    assert found.chance == 0.25 and found.texts == 6 * 4 * 6
    assert len(found.true_probability) == found.texts


def test_shuffled_labels_reach_only_chance():
    texts, writers, scenarios = corpus(seed=1)
    shuffled = list(np.random.default_rng(9).permutation(writers))

    found = run(texts, shuffled, scenarios)

    assert abs(found.accuracy - found.chance) < 0.1
    assert found.low <= found.chance + 0.05
    assert {row.writer: row for row in found.per_writer}["fixture/telltale"].accuracy < 0.6


def test_every_text_is_predicted_by_a_classifier_that_never_saw_its_scenario():
    texts, writers, scenarios = corpus(seed=2)
    # A writer recognisable only by words of one scenario cannot be found in that scenario.
    marked = [text + (" scenario-0-signature" if writer == WRITERS[0] and scenario == SCENARIOS[0]
                      else "")
              for text, writer, scenario in zip(texts, writers, scenarios, strict=True)]

    found = run(marked, writers, scenarios)

    # Had texts of scenario 0 been in its training folds, the signature would give all away.
    signed = [i for i, scenario in enumerate(scenarios)
              if scenario == SCENARIOS[0] and writers[i] == WRITERS[0]]
    hits = sum(found.predicted[i] == WRITERS[0] for i in signed)
    assert hits <= len(signed) / 2


def test_it_needs_two_scenarios_and_two_writers():
    with pytest.raises(RecognisabilityError, match="scenario"):
        recognise(["a b", "c d"], ["x/a", "x/b"], ["s", "s"], scenario_order=["s"],
                  counts=np.ones((10, 1), dtype=int), level=0.95)
    with pytest.raises(RecognisabilityError, match="writer"):
        recognise(["a b", "c d"], ["x/a", "x/a"], ["s", "t"], scenario_order=["s", "t"],
                  counts=np.ones((10, 2), dtype=int), level=0.95)
