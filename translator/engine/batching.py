"""Token-aware grouping of the pieces that BentoML's dispatcher hands the engine.

The dispatcher counts items, not tokens: a batch of 32 may hold 32 five-word sentences or 32
paragraphs. Grouping by length inside the engine wins back the padding (sentences of similar length
share a `generate` call) and bounds memory (no call exceeds the token budget).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


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
        if current and width * (len(current) + 1) * beams > max_tokens:
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
