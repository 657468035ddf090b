"""The token budget of a `generate` call, and the grouping of pieces under it.

A batch of 32 may hold 32 five-word sentences or 32 paragraphs: what a call costs in memory and
time is its rows padded to the longest, times the beams. `padded_tokens` is that cost, the one
formula the scheduler (which forms batches under the budget) and the translator (which splits
anything over it, and otherwise runs a scheduler batch as one call) both use.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def padded_tokens(longest: int, rows: int, beams: int) -> int:
    """Source tokens a `generate` call of `rows` rows, padded to `longest`, costs with `beams` beams:
    what `max_batch_tokens` bounds."""
    return longest * rows * beams


def plan_batches(lengths: Sequence[int], max_tokens: int, *, beams: int = 1) -> list[list[int]]:
    """Split item indices into sub-batches whose padded cost (rows x longest x beams) stays within
    `max_tokens`. Longest items go first so that each sub-batch's padding is small; an item that
    alone exceeds the budget still gets a sub-batch of its own rather than being dropped.
    """
    if max_tokens < 1 or beams < 1:
        raise ValueError("max_tokens and beams must be >= 1")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in order:
        length = max(lengths[index], 1)
        # Sorted longest first, so the first item of `current` fixes the padded width.
        width = longest if current else length
        if current and padded_tokens(width, len(current) + 1, beams) > max_tokens:
            batches.append(current)
            current = []
            width = length
        current.append(index)
        longest = width
    if current:
        batches.append(current)
    return batches


def deduplicate(keys: Sequence[K]) -> tuple[list[K], list[int]]:
    """Unique keys in first-seen order, and for every input position the index of its key.

    Concurrent clients often send the same sentence (boilerplate, retries); translating it once per
    batch is free throughput and, with deterministic decoding, gives the same text.
    """
    seen: dict[K, int] = {}
    unique: list[K] = []
    positions: list[int] = []
    for key in keys:
        slot = seen.get(key)
        if slot is None:
            slot = seen[key] = len(unique)
            unique.append(key)
        positions.append(slot)
    return unique, positions
