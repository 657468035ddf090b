"""A refill pause for BentoML's batch dispatcher, so closed-loop clients share one full batch.

Measured with the benchmark (bench/, 418M architecture, 2-core CPU, 32 one-record clients): the
model got batches of 16.6 pieces on average, not 32, and the service made 0.55x the offline
limit. BentoML's CorkDispatcher sends whatever is queued the moment the previous batch returns.
At that moment only the clients that were not in that batch are waiting; the ones it just
answered come back a few milliseconds later and find the model busy again. The two halves then
alternate forever, each batch half full.

`RefillingDispatcher` holds the dispatcher's one-batch-at-a-time semaphore for a short pause after
each batch, while the queue is below `max_batch_size`, so that the clients just answered can join
the next batch. The pause ends as soon as the batch is full, and never lasts more than a small
fraction of the last batch's compute time (capped), so it costs at most a few percent when
nobody comes back (a lone client, or open-loop traffic). Tied to bentoml 1.4.39's dispatcher
internals (`_sema`, `_queue`, `get_batch_size`): `install` checks them and refuses otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

logger = logging.getLogger(__name__)


def refill_dispatcher_class(base: type, fraction: float, max_pause_s: float) -> type:
    class RefillingDispatcher(base):  # type: ignore[valid-type,misc,unused-ignore]
        refill_fraction = fraction
        refill_max_s = max_pause_s

        async def outbound_call(self, inputs_info: Any, training: bool = False) -> None:
            started = time.monotonic()
            await super().outbound_call(inputs_info, training)
            pause = min(self.refill_max_s, self.refill_fraction * (time.monotonic() - started))
            if training or pause <= 0:
                return
            # The base class released the semaphore in its `finally`, and nothing has run on the
            # event loop since: taking it back now keeps the controller from dispatching a
            # half-full batch during the pause.
            if not self._sema.acquire():
                return
            try:
                deadline = time.monotonic() + pause
                while self._queued_items() < self.max_batch_size and time.monotonic() < deadline:
                    await asyncio.sleep(0.001)
            finally:
                self._sema.release()

        def _queued_items(self) -> int:
            total = 0
            for job in self._queue:
                try:
                    total += self.get_batch_size(job.data)
                except Exception:  # noqa: BLE001 - the base class counts such a job as one too
                    total += 1
            return total

    RefillingDispatcher.__name__ = RefillingDispatcher.__qualname__ = "RefillingDispatcher"
    return RefillingDispatcher


def install(fraction: float, max_pause_ms: float) -> bool:
    """Make BentoML's service apps build their batch dispatchers from `RefillingDispatcher`."""
    if fraction <= 0 or max_pause_ms <= 0:
        return False
    from _bentoml_impl.server import app as server_app
    from bentoml._internal.marshal.dispatcher import CorkDispatcher

    current = getattr(server_app, "CorkDispatcher", None)
    if current is not CorkDispatcher:
        if getattr(current, "__name__", "") == "RefillingDispatcher":
            return True
        logger.warning("BentoML's dispatcher is not the one this patch was written for; refill pause not installed")
        return False
    needed = ("_sema", "_queue", "get_batch_size", "max_batch_size", "outbound_call")
    probe: Any = CorkDispatcher(max_latency_in_ms=1000, max_batch_size=2, fallback=lambda: None)
    if not all(hasattr(probe, name) for name in needed):
        logger.warning("BentoML's dispatcher lacks %s; refill pause not installed", needed)
        return False
    server_app.CorkDispatcher = refill_dispatcher_class(CorkDispatcher, fraction, max_pause_ms / 1000)
    return True
