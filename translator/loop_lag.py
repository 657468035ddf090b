"""Event-loop lag: how late a timer fires on a process's event loop, as a Prometheus histogram.

Both processes serve from one event loop each: whatever runs on it without yielding (parsing a
large body, splitting, encoding, a slow callback) delays every other request of that process. A
timer asked for every half second and fired late by that much is the measure; the histogram
`translation_event_loop_lag_seconds{process="api"|"engine"}` shows it per process on /metrics.
"""

from __future__ import annotations

import asyncio
import functools
import gc
from collections.abc import Callable
from typing import Any

INTERVAL_S = 0.5
_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class LoopLagMonitor:
    def __init__(self, record: Callable[[float], None], interval_s: float = INTERVAL_S) -> None:
        self.record = record
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin measuring (call from within the loop to measure)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            # gather, not a suppressed await: a cancellation of the closer itself still propagates.
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time() + self.interval_s
            await asyncio.sleep(self.interval_s)
            self.record(max(0.0, loop.time() - asked))


@functools.cache
def _histogram() -> Any:
    import bentoml

    return bentoml.metrics.Histogram(
        name="translation_event_loop_lag_seconds",
        documentation="How late a timer fired on the process's event loop (work that did not yield)",
        labelnames=["process"],
        buckets=_BUCKETS,
    )


def prometheus_recorder(process: str) -> Callable[[float], None]:
    """Where a monitor in a BentoML worker records: the histogram, labelled with the process."""
    return _histogram().labels(process=process).observe


def settle_heap() -> None:
    """Once a process has loaded what it keeps for life (BentoML, the model, the tokenizer): keep
    the garbage collector's full passes off those objects. Otherwise every few thousand requests'
    allocations make a pass walk the whole heap, with every request of the process waiting."""
    gc.collect()
    gc.freeze()
