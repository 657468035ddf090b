"""Which queued pieces the next batch takes: queue state in, batch out, no clock and no event loop.

- Most urgent first: every interactive piece before any bulk piece, oldest first within a class.
- At most `max_batch_size` pieces and `max_batch_tokens` padded source tokens (times beams).
- Grouped by length: from a window at the head of each queue (`group_window_batches` batches
  deep), the oldest piece goes with the pieces closest to it in length, so short sentences do not
  pay for a long one's padding; but a piece that would miss its deadline if left for the next
  batch goes first, earliest deadline first, whatever its length: admission promised each request
  a finish time computed from queue order, and newer pieces of a handier length must not push it
  past that (under overload every queued piece is such a piece, and the order is the queue's).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from translator.contract.protocol import Piece, PieceResult, Priority
from translator.engine.batching import padded_tokens


@dataclass(eq=False)
class Job:
    """One request's pieces, as admitted."""

    seq: int
    pieces: list[Piece]
    lengths: list[int]
    priority: Priority
    arrival: float
    deadline: float
    future: asyncio.Future[list[PieceResult]]
    results: list[PieceResult | None] = field(default_factory=list)
    outstanding: int = 0
    cancelled: bool = False

    def __post_init__(self) -> None:
        if not self.results:
            self.results = [None] * len(self.pieces)
            self.outstanding = len(self.pieces)

    def settle(self, index: int, result: PieceResult) -> None:
        if self.results[index] is None:
            self.results[index] = result
            self.outstanding -= 1
        if self.outstanding == 0 and not self.future.done():
            self.future.set_result([r if r is not None else PieceResult(error="not translated") for r in self.results])


@dataclass(frozen=True)
class Entry:
    """One queued piece: its request and its place in it."""

    job: Job
    index: int

    @property
    def length(self) -> int:
        return self.job.lengths[self.index]


@dataclass(frozen=True)
class Batch:
    entries: list[Entry]
    padded_tokens: int

    @property
    def pieces(self) -> list[Piece]:
        return [e.job.pieces[e.index] for e in self.entries]

    @property
    def real_tokens(self) -> int:
        return sum(e.length for e in self.entries)

    def settle(self, results: Sequence[PieceResult]) -> dict[Priority, int]:
        """Give each piece's caller its result; how many requests of each priority it finished."""
        for entry, result in zip(self.entries, results, strict=True):
            if not entry.job.cancelled:
                entry.job.settle(entry.index, result)
        finished = dict.fromkeys(Priority, 0)
        for job in {id(e.job): e.job for e in self.entries}.values():
            if not job.cancelled and job.outstanding == 0:
                finished[job.priority] += 1
        return finished


@dataclass(frozen=True)
class Limits:
    max_batch_size: int
    max_batch_tokens: int
    beams: int
    group_window_batches: int


def next_batch(
    queues: Mapping[Priority, Iterable[Entry]], limits: Limits, now: float, full_batch_s: Callable[[float], float]
) -> Batch | None:
    """The batch to run now, or None when nothing is queued. `full_batch_s(mean source tokens)`: the
    predicted seconds of a full batch of such pieces, which decides which pieces cannot wait."""
    slots = limits.max_batch_size
    chosen: list[Entry] = []
    longest = 0
    for priority in Priority:
        queue = queues.get(priority, ())
        if len(chosen) >= slots:
            break
        picked, longest = _pick(queue, limits, slots - len(chosen), longest, len(chosen), now, full_batch_s)
        chosen.extend(picked)
    if not chosen:
        return None
    return Batch(chosen, padded_tokens=padded_tokens(max(e.length for e in chosen), len(chosen), limits.beams))


def _pick(
    queue: Iterable[Entry],
    limits: Limits,
    slots: int,
    longest: int,
    already: int,
    now: float,
    full_batch_s: Callable[[float], float],
) -> tuple[list[Entry], int]:
    """Up to `slots` entries of `queue`: those that cannot wait for the next batch, then the oldest
    and the entries nearest to it in length."""
    window = list(itertools.islice(queue, slots * max(1, limits.group_window_batches)))
    if not window:
        return [], longest
    if len(window) > slots:
        window = by_urgency_then_length(window, now + 2 * full_batch_s(_mean_length(window)))
    picked: list[Entry] = []
    for entry in window:
        if len(picked) >= slots:
            break
        width = max(longest, entry.length)
        over_budget = padded_tokens(width, already + len(picked) + 1, limits.beams) > limits.max_batch_tokens
        if (already or picked) and over_budget:
            continue
        picked.append(entry)
        longest = width
    return picked, longest


def by_urgency_then_length(window: Sequence[Entry], horizon: float) -> list[Entry]:
    """Pieces due by `horizon` first, earliest deadline first; the rest nearest in length to the
    oldest piece first (ties: older first)."""
    oldest = window[0]

    def order(e: Entry) -> tuple[bool, float, int, int, int]:
        if e.job.deadline <= horizon:
            return (False, e.job.deadline, 0, e.job.seq, e.index)
        return (True, 0.0, abs(e.length - oldest.length), e.job.seq, e.index)

    return sorted(window, key=order)


def _mean_length(window: Sequence[Entry]) -> float:
    return sum(e.length for e in window) / len(window)
