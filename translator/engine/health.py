"""The model loop, watched: when the engine cannot serve, and what its callers are told.

If the loop ends while the scheduler is open (a bug outside the backend call, an observer that
raises), the model itself is gone (its runner process died, translator/engine/model_runner.py),
or a batch runs far past its prediction (`stall_factor` times, and at least
`stall_min_s`: a backend stuck in its thread), the scheduler says why in `failure`, answers every
waiting caller at once with a refusal (503 with Retry-After at the API), and refuses new work; the
engine reports not ready, and Kubernetes restarts the pod once the API workers have seen it so for
long enough. A stuck batch that ends after all clears the failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from translator.engine.admission import Refused
from translator.engine.observer import RefusalReason

logger = logging.getLogger(__name__)

# Retry-After of a refusal by an unhealthy engine: a restarted pod loads its model in about this.
UNHEALTHY_RETRY_S = 30
# Retry-After of a refusal by an engine shutting down.
SHUTTING_DOWN_RETRY_S = 5


def unavailable(
    closed: bool, failure: str | None, counted: Callable[[RefusalReason], None] | None = None
) -> Refused | None:
    """The refusal for any work while the scheduler is closed or failed; None while it serves.
    `counted` is told its reason (new work refused: counted like the deadline's refusals, so that an
    engine refusing everything shows on the same counter)."""
    if closed:
        reason, refusal = (
            RefusalReason.SHUTTING_DOWN,
            Refused(RefusalReason.SHUTTING_DOWN, "the engine is shutting down", SHUTTING_DOWN_RETRY_S),
        )
    elif failure is not None:
        reason, refusal = (
            RefusalReason.UNHEALTHY,
            Refused(RefusalReason.UNHEALTHY, f"the engine cannot translate now: {failure}", UNHEALTHY_RETRY_S),
        )
    else:
        return None
    if counted is not None:
        counted(reason)
    return refusal


def stall(pieces: int, running_s: float, predicted_s: float, factor: float, min_s: float) -> str | None:
    """Why a batch running `running_s` seconds counts as stuck, or None while it does not."""
    limit = max(min_s, factor * predicted_s)
    if running_s <= limit:
        return None
    return (
        f"a batch of {pieces} pieces has run {running_s:.0f} s, past its limit of {limit:.0f} s "
        f"({factor:g} times its predicted {predicted_s:.1f} s)"
    )


class Watchdog:
    """Watches the running batch (`running()`: its pieces, seconds run, predicted seconds, or None
    when none runs) every `interval_s`; reports a stall or the loop's end to `on_failure` once."""

    def __init__(
        self,
        running: Callable[[], tuple[int, float, float] | None],
        on_failure: Callable[[str], None],
        factor: float,
        min_s: float,
        interval_s: float,
        broken: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._running = running
        # Why the model cannot be asked any more (its runner process died), None while it can.
        self._broken = broken
        self._on_failure = on_failure
        self.factor, self.min_s, self.interval_s = factor, min_s, interval_s
        # Why the scheduler cannot serve (its loop ended, a batch is stuck); None while healthy.
        self.failure: str | None = None
        self.stalled = False

    def fail(self, reason: str) -> None:
        logger.error("translation engine unhealthy: %s", reason)
        self.failure = reason
        self._on_failure(reason)

    def batch_ended(self, seconds: float) -> None:
        if self.stalled and self._broken() is None:
            # Its callers were answered when it was declared stuck; the model works again.
            logger.warning("the batch declared stuck ended after %.1f s; accepting work again", seconds)
            self.stalled, self.failure = False, None

    def loop_ended(self, task: asyncio.Task[None]) -> None:
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            logger.error("the model loop crashed", exc_info=exc)
        self.fail(f"the model loop stopped ({type(exc).__name__ if exc else 'cancelled'}: {exc})")

    async def watch(self, closed: Callable[[], bool]) -> None:
        while not closed():
            await asyncio.sleep(self.interval_s)
            if self.failure is None and (broken := self._broken()) is not None:
                self.fail(broken)  # for good: a pod restart brings the model back
                continue
            running = self._running()
            if running is None or self.stalled:
                continue
            stuck = stall(*running, self.factor, self.min_s)
            if stuck is not None:
                self.stalled = True
                self.fail(stuck)
