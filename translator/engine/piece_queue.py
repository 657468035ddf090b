"""The engine's queue of pieces: one line per priority, with running counts.

Pieces and source tokens queued per priority are kept as pieces come and go, so that a prediction
costs the same whatever the queue's length (it was a walk of the whole queue on every submit:
quadratic under a burst of bulk requests).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from translator.contract.protocol import Priority
from translator.engine.batch_policy import Entry, Job


class PieceQueue:
    def __init__(self) -> None:
        self.lines: dict[Priority, deque[Entry]] = {p: deque() for p in Priority}
        self._counts: dict[Priority, list[int]] = {p: [0, 0] for p in Priority}

    def add(self, job: Job) -> None:
        self.lines[job.priority].extend(Entry(job, index) for index in range(len(job.pieces)))
        self._count(job.priority, len(job.pieces), sum(job.lengths))

    def take(self, entries: Iterable[Entry]) -> None:
        """Remove `entries` (a batch chosen from the heads of the lines)."""
        taken = {id(e) for e in entries}
        for priority, line in self.lines.items():
            if any(id(e) in taken for e in line):
                kept = [e for e in line if id(e) not in taken]
                for entry in line:
                    if id(entry) in taken:
                        self._count(priority, -1, -entry.length)
                line.clear()
                line.extend(kept)

    def drop(self, job: Job) -> int:
        """Remove a request's pieces still queued; how many there were."""
        line = self.lines[job.priority]
        kept = [e for e in line if e.job is not job]
        dropped = len(line) - len(kept)
        if dropped:
            self._count(job.priority, -dropped, -sum(e.length for e in line if e.job is job))
            line.clear()
            line.extend(kept)
        return dropped

    def clear(self) -> None:
        for line in self.lines.values():
            line.clear()
        self._counts = {p: [0, 0] for p in Priority}

    @property
    def pieces(self) -> int:
        return sum(pieces for pieces, _ in self._counts.values())

    @property
    def tokens(self) -> int:
        return sum(tokens for _, tokens in self._counts.values())

    def pieces_of(self, priority: Priority) -> int:
        return self._counts[priority][0]

    def at_or_above(self, priority: Priority) -> tuple[int, int]:
        """(pieces, source tokens) queued at `priority` or more urgent: what a request would wait behind."""
        ahead = [self._counts[p] for p in Priority if p <= priority]
        return sum(pieces for pieces, _ in ahead), sum(tokens for _, tokens in ahead)

    def _count(self, priority: Priority, pieces: int, tokens: int) -> None:
        self._counts[priority][0] += pieces
        self._counts[priority][1] += tokens
