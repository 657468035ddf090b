from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from translator.engine.batching import deduplicate, plan_batches

pytestmark = pytest.mark.pure


def test_sorts_longest_first_and_respects_budget():
    lengths = [3, 10, 5, 10, 2]
    batches = plan_batches(lengths, max_tokens=20)
    assert batches == [[1, 3], [2, 0, 4]]
    for batch in batches:
        assert max(lengths[i] for i in batch) * len(batch) <= 20


def test_item_over_budget_gets_its_own_batch():
    assert plan_batches([50, 4, 4], max_tokens=10) == [[0], [1, 2]]


def test_beams_multiply_the_cost():
    assert plan_batches([4, 4, 4, 4], max_tokens=16, beams=2) == [[0, 1], [2, 3]]


def test_64_long_sentences_are_split():
    batches = plan_batches([200] * 64, max_tokens=8192, beams=5)
    assert all(len(b) * 200 * 5 <= 8192 for b in batches)
    assert sorted(i for b in batches for i in b) == list(range(64))


@given(st.lists(st.integers(0, 300), max_size=80), st.integers(1, 5000), st.integers(1, 5))
def test_every_index_exactly_once_and_within_budget(lengths, budget, beams):
    batches = plan_batches(lengths, budget, beams=beams)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        cost = max(max(lengths[i], 1) for i in batch) * len(batch) * beams
        assert len(batch) == 1 or cost <= budget


def test_invalid_budget():
    with pytest.raises(ValueError):
        plan_batches([1], 0)


def test_deduplicate_keeps_first_seen_order():
    unique, positions = deduplicate(["a", "b", "a", "c", "b"])
    assert unique == ["a", "b", "c"]
    assert positions == [0, 1, 0, 2, 1]
    assert [unique[p] for p in positions] == ["a", "b", "a", "c", "b"]
