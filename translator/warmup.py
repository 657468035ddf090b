"""Warm the engine's batch dispatcher up before readiness says yes.

BentoML 1.4's dispatcher (CorkDispatcher) starts with a guessed cost model and spends its first
eleven calls "training": it sends them to the model one at a time, whatever is queued, and only
then fits `duration = a * calls + b` from what it saw. Until then a burst is served one call per
batch and shed harder than capacity requires. Worse, if every sample it has seen is a batch of
one, the least-squares fit cannot tell `a` from `b`: it splits a single call's time evenly, over-
estimates big batches, and sheds them. So the warm-up first feeds the training calls, then bursts
of increasing size (up to `max_batch_size`), through the same HTTP path real traffic takes, and
readiness turns true only after that.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from translator.schemas import Piece, PieceResult

logger = logging.getLogger(__name__)

# CorkDispatcher.controller in bentoml 1.4.39: 8 calls (2 skipped + 6 kept), then 3 single ones.
DISPATCHER_TRAINING_CALLS = 11

# Returns the engine's results, or None when the dispatcher shed the call (a 503): with a tight
# max_latency_ms a warm-up burst may be, and that is the dispatcher working, not the engine failing.
EngineCall = Callable[[list[Piece]], Awaitable[Sequence[PieceResult | dict] | None]]


class WarmupFailed(RuntimeError):
    """The engine did not translate the warm-up pieces: it is not fit to take traffic."""


@dataclass(frozen=True)
class WarmupReport:
    calls: int
    shed: int
    seconds: float


def burst_sizes(max_batch_size: int) -> list[int]:
    """2, 4, 8, ... up to and including max_batch_size: the sizes the dispatcher will later form."""
    sizes = []
    size = 2
    while size < max_batch_size:
        sizes.append(size)
        size *= 2
    sizes.append(max_batch_size)
    return sizes


def warmup_piece(index: int, source: str, target: str) -> Piece:
    # Distinct texts: the engine translates identical pieces once per batch, which would make a
    # burst look cheaper than real traffic and teach the dispatcher a wrong cost.
    return Piece(text=f"Sentence number {index} warms the translation engine up.", source=source, target=target)


async def warm_dispatcher(call: EngineCall, source: str, target: str, max_batch_size: int) -> WarmupReport:
    started = time.monotonic()
    counter = 0
    shed = 0

    async def one() -> None:
        nonlocal counter, shed
        counter += 1
        piece = warmup_piece(counter, source, target)
        answers = await call([piece])
        if answers is None:
            shed += 1
            return
        [answer] = answers
        # Through BentoML's client the answer may come back as the model or as its JSON form.
        result = answer if isinstance(answer, PieceResult) else PieceResult.model_validate(answer)
        if result.error or result.text is None:
            raise WarmupFailed(f"warm-up piece {piece.text!r} failed: {result.error}")

    for _ in range(DISPATCHER_TRAINING_CALLS):
        await one()
    for size in burst_sizes(max_batch_size):
        await asyncio.gather(*(one() for _ in range(size)))
    report = WarmupReport(calls=counter, shed=shed, seconds=time.monotonic() - started)
    logger.info("dispatcher warmed up with %d calls (%d shed) in %.1f s", report.calls, report.shed, report.seconds)
    return report
