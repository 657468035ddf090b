"""What the engine publishes of its queue for the API workers' early refusal: its `QueueState`, as
`Scheduler.queue_state` reports it. The publishing itself, through shared memory, is runtime
mechanism (translator/shm/engine_load.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from translator.contract.protocol import Priority


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
        queued now, on a busy engine (its own batch priced as full, as `Scheduler.predicted_wait`
        does there); None where it would be admitted whatever the prediction (nothing ahead of
        it) or nothing is measured yet."""
        ahead = self.ahead[priority]
        if self.full_batch_s <= 0 or (not self.running and ahead == 0):
            return None
        return self.running_left_s + math.ceil((ahead + pieces) / self.batch_size) * self.full_batch_s
