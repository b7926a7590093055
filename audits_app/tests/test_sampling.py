"""Sampling spot-check batches: stratified by model x condition x jury class, disagreement
oversampled, seeded."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from audits_app.models import SpotCheck
from audits_app.spotchecks.sampling import allocate, stratified_sample
from audits_app.spotchecks.selectors import jury_texts
from audits_app.spotchecks.services import spotcheck_batch_create
from audits_app.statistics.agreement import LABELS
from audits_app.tests.juries import build_jury, make_user


@pytest.fixture
def jury_release(small_demo_release):
    build_jury(small_demo_release)
    return small_demo_release


def test_allocation_follows_weight_and_caps_at_stratum_size():
    allocation = allocate({"a": 10.0, "b": 30.0, "c": 2.0}, {"a": 10, "b": 20, "c": 1}, 20)
    assert sum(allocation.values()) == 20
    assert allocation["b"] > allocation["a"] > allocation["c"] - 1
    assert all(allocation[name] <= size for name, size in {"a": 10, "b": 20, "c": 1}.items())
    assert allocate({"a": 1.0}, {"a": 3}, 10) == {"a": 3}


def test_stratified_sample_holds_strata_and_oversamples_disagreement():
    rng = np.random.default_rng(7)
    strata = [f"m{m}|C{c}|{label}" for m in range(3) for c in range(2) for label in LABELS
              for _ in range(40)]
    disagreed = rng.random(len(strata)) < 0.2
    weights = np.where(disagreed, 2.0, 1.0)
    chosen = stratified_sample(strata, weights, 240, seed=11)

    assert len(chosen) == len(set(chosen)) == 240
    expected = allocate(
        {name: float(weights[[i for i, s in enumerate(strata) if s == name]].sum())
         for name in set(strata)},
        Counter(strata), 240)
    assert Counter(strata[i] for i in chosen) == Counter(
        {name: count for name, count in expected.items() if count})
    sample_share = disagreed[chosen].mean()
    assert sample_share > disagreed.mean() + 0.05
    assert stratified_sample(strata, weights, 240, seed=11) == chosen
    assert stratified_sample(strata, weights, 240, seed=12) != chosen


def test_batch_is_stratified_by_model_condition_and_class(jury_release):
    texts = jury_texts(jury_release)
    first, second = make_user("ann"), make_user("bob")
    batch = spotcheck_batch_create(release=jury_release, share=0.5, seed=3,
                                   double_code_share=0.25, auditors=[first, second])

    items = list(batch.items.all())
    assert len(items) == batch.size == round(0.5 * len(texts))
    for item in items:
        text = texts[item.generation_id]
        assert item.stratum == f"{text.model_id}|{text.condition}|{text.jury_class}"
        assert item.jurors_disagreed == text.disagreed
    strata = Counter(text.stratum for text in texts.values())
    assert set(Counter(item.stratum for item in items)) <= set(strata)
    doubled = [item for item in items if item.double_coded]
    assert len(doubled) == round(0.25 * len(items))
    for item in doubled:
        assert sorted(item.checks.values_list("auditor__username", flat=True)) == ["ann", "bob"]
    assert SpotCheck.objects.filter(item__batch=batch).count() == len(items) + len(doubled)


def test_a_second_batch_draws_other_texts(jury_release):
    first = spotcheck_batch_create(release=jury_release, size=5)
    second = spotcheck_batch_create(release=jury_release, size=5)
    assert not (set(first.items.values_list("generation_id", flat=True))
                & set(second.items.values_list("generation_id", flat=True)))
    assert first.seed != second.seed


def test_a_batch_queues_its_texts_in_no_order_of_writer_or_id(jury_release):
    """In the sample's own order (by id) one writer's texts sat together in the queue; the
    queue's order is random, and neither ids nor writers run in it."""
    batch = spotcheck_batch_create(release=jury_release, size=12, seed=3)
    in_queue = list(batch.items.order_by("position").values_list("generation_id", flat=True))
    assert len(in_queue) == 12
    assert in_queue != sorted(in_queue)  # on chance alone: once in 479,001,600 batches


def test_double_coding_with_a_single_auditor_is_refused(jury_release):
    """Every double-coded text went to the one auditor once, silently."""
    from audits_app.models import SpotCheckBatch
    from audits_app.spotchecks.services import BatchError

    with pytest.raises(BatchError, match="double coding gives a text to two auditors"):
        spotcheck_batch_create(release=jury_release, size=4, double_code_share=0.5,
                               auditors=[make_user("ann")])
    assert not SpotCheckBatch.objects.exists()
