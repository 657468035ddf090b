"""The engine's forecast: when a request queued now would be answered. One function, used by the
engine's admission (translator/engine/scheduler.py) and by the API workers' early refusal from the
state the engine publishes (translator/shm/engine_load.py), so the two can never drift.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from translator.contract.protocol import Priority


def predicted_wait(
    running_left_s: float, ahead: int, pieces: int, batch_size: int, batch_s: Callable[[int], float], busy: bool
) -> float:
    """Seconds until `pieces` pieces queued now behind `ahead` others are answered: the running
    batch's rest, then full batches of `batch_size`, costing `batch_s(size)` each, then the rest.
    On a `busy` engine (a batch running, or work ahead) the request's own batch fills up behind it
    (later arrivals take its free places) and is priced as a full one: priced at its own size, a
    queue of 58 pieces was predicted at 15 s and took 20 s (tests/unit/test_scheduler.py)."""
    total = ahead + pieces
    if total == 0:
        return running_left_s
    full, last = divmod(total, batch_size)
    if last and busy:
        full, last = full + 1, 0
    return running_left_s + full * batch_s(batch_size) + (batch_s(last) if last else 0.0)


@dataclass(frozen=True)
class QueueState:
    """What the engine's admission decides from, as `Scheduler.queue_state` reports it."""

    running: bool  # a batch is in the model
    running_left_s: float  # its predicted rest
    full_batch_s: float  # a full batch of the queue's pieces, as the cost model predicts it (0: not yet measured)
    batch_size: int
    ahead: tuple[int, ...]  # per Priority: pieces queued at or above it

    def wait_s(self, priority: Priority, pieces: int) -> float | None:
        """The engine's prediction for a request of `pieces` pieces of the queue's mean length
        queued now (`predicted_wait` on a busy engine, every batch full); None where it would be
        admitted whatever the prediction (nothing ahead of it) or nothing is measured yet."""
        ahead = self.ahead[priority]
        if self.full_batch_s <= 0 or (not self.running and ahead == 0):
            return None
        return predicted_wait(self.running_left_s, ahead, pieces, self.batch_size, lambda _: self.full_batch_s, True)
