"""How long the callers a batch answered take to come back: what the scheduler's linger waits for.

Closed-loop callers (a bulk job's workers, a person reading each answer before the next, a load
test) send their next request once answered. Between the answer and that request lie the API
worker, the network and the client itself; on a busy node that trip takes far longer than any
fixed share of a batch assumes: with 32 one-record clients on 2 cores and a 2.5 s batch, a linger
of 5% (126 ms) started the next batch with 28 of them on average (bench/results/storm-c5a.md).
So the trip is measured instead of assumed.

After every batch the scheduler says how many requests of each priority it finished; from then
on every request that arrives counts as one of them coming back. The time until all of them are
back is one sample (a batch whose callers are not all back before the next batch ends gives
none: some left, or were refused before they reached the engine); a priority's return time is a
high quantile of its recent samples, with a margin. All of them, not most: the last callers back
are not outliers but the end of a queue (the API workers answer and read them one after another),
and a batch started without them leaves them for the next (timing nine in ten of them, 32
one-record clients filled batches of 25.8 on average where a fixed linger of 5% had filled 32).
Nothing here is a timer: the scheduler asks, and decides how long to wait
(translator/engine/scheduler.py).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping

from translator.contract.protocol import Priority

# Samples kept per priority: the return time follows the node's load, so only recent ones count.
HISTORY = 32
# The return time is this quantile of the samples, times MARGIN: a wait that ends just before the
# slowest usual caller is back wastes the whole wait.
QUANTILE = 0.9
MARGIN = 1.25


class Returns:
    """Callers expected back since the last batch, and how long they have been taking."""

    def __init__(self) -> None:
        self._samples: dict[Priority, deque[float]] = {p: deque(maxlen=HISTORY) for p in Priority}
        self._since = 0.0
        self._answered: dict[Priority, int] = dict.fromkeys(Priority, 0)
        self._arrived: dict[Priority, int] = dict.fromkeys(Priority, 0)
        self._sampled: dict[Priority, bool] = dict.fromkeys(Priority, True)

    def batch_done(self, now: float, finished: Mapping[Priority, int]) -> None:
        """A batch ended at `now` having finished these requests: their callers are awaited from now
        (and those of the batch before, if not back yet, no longer: they are late or gone)."""
        self._since = now
        for priority in Priority:
            self._answered[priority] = finished.get(priority, 0)
            self._arrived[priority] = 0
            self._sampled[priority] = self._answered[priority] == 0

    def arrived(self, now: float, priority: Priority) -> None:
        """A request arrived (admitted or not: a caller came back either way)."""
        self._arrived[priority] += 1
        if not self._sampled[priority] and self._arrived[priority] >= self._answered[priority]:
            self._samples[priority].append(max(0.0, now - self._since))
            self._sampled[priority] = True

    def missing(self, priority: Priority) -> int:
        """Callers of `priority` answered by the last batch and not back yet."""
        return max(0, self._answered[priority] - self._arrived[priority])

    def answered(self) -> list[Priority]:
        """The priorities the last batch finished requests of."""
        return [p for p in Priority if self._answered[p]]

    def return_s(self, priorities: Iterable[Priority]) -> float | None:
        """How long callers of these priorities take to come back (the slowest of them); None
        until one such return has been timed."""
        times = [estimate(self._samples[p]) for p in priorities if self._samples[p]]
        return max(times) if times else None


def estimate(samples: Iterable[float]) -> float:
    ordered = sorted(samples)
    return MARGIN * ordered[min(len(ordered) - 1, math.ceil(QUANTILE * len(ordered)) - 1)]
