"""The API worker's side of every engine call: the gate, retries, and one mapping of failures.

Whatever goes wrong between the two services ends as a `TranslationError` with a status a client
can act on: 503 with `Retry-After` when the engine is down, overloaded or dropped the connection,
504 when the request ran out of time. Never a 500: an exception that escapes here would be one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import aiohttp

from translator.api.engine_gate import EngineGate
from translator.contract.errors import GatewayTimeout, TranslationError, TranslationFailed, Unavailable
from translator.contract.protocol import EngineReply, Piece, PieceResult, Priority

logger = logging.getLogger(__name__)

# (pieces, priority, timeout in ms or None) -> the engine's reply, as a model or its JSON form.
RawCall = Callable[[list[Piece], int, float | None], Awaitable[Any]]

# Tries per call when connections drop while the engine itself answers: after an engine restart
# the pool may hold several dead connections, each failing at once.
ATTEMPTS = 4
# BentoML's client to the engine keeps one aiohttp connection pool per worker, of aiohttp's
# default size (100), and its readiness probe takes its connection from the same pool. Calls wait
# at the engine for as long as their queue takes, so a worker with 100 of them in flight would
# starve the probe, time it out, and close the gate on a healthy engine. Calls beyond this many
# wait here instead, their time counted against their deadline; the rest of the pool is the
# probes'. tests/e2e/test_admission.py pins it with more requests in flight than the pool holds.
CALLS_IN_FLIGHT = 96
# The engine answers a request whose deadline passed itself (504, `expired`); this worker stops
# waiting this long after the deadline in any case, whatever the engine is doing (an event loop
# blocked, a connection nobody answers).
DEADLINE_SLACK_S = 2.0


def _loop_time_at(monotonic_instant: float) -> float:
    """The event loop's clock reading at a `time.monotonic()` instant (the clocks may differ)."""
    return asyncio.get_running_loop().time() + (monotonic_instant - time.monotonic())


class EngineClient:
    def __init__(
        self,
        gate: EngineGate,
        call: RawCall,
        attempts: int = ATTEMPTS,
        calls_in_flight: int = CALLS_IN_FLIGHT,
        deadline_slack_s: float = DEADLINE_SLACK_S,
    ) -> None:
        self.gate = gate
        self.deadline_slack_s = deadline_slack_s
        self._call = call
        self.attempts = attempts
        self._slots = asyncio.Semaphore(calls_in_flight)

    async def translate(
        self,
        pieces: list[Piece],
        priority: Priority = Priority.INTERACTIVE,
        deadline: float | None = None,
        binding: bool = False,
    ) -> Sequence[PieceResult]:
        """Translate pieces by `deadline`, a `time.monotonic()` instant the engine plans with.

        The engine answers a request whose deadline passes itself (504, `expired`), and a slot to
        call it is waited for only until the deadline. A `binding` deadline (the caller's own,
        `X-Deadline-Ms`) is kept here too, whatever the engine is doing: past it and the slack, the
        caller gets its 504 without the engine's word. The server's own latency objective is not
        binding so: the engine may admit a request alone on an idle model although it is predicted
        late (it could never be answered sooner), and answers it when it is done."""
        try:
            async with asyncio.timeout_at(
                _loop_time_at(deadline + self.deadline_slack_s) if binding and deadline is not None else None
            ):
                await self._take_slot(deadline)
                try:
                    return await self._translate(pieces, priority, deadline)
                finally:
                    self._slots.release()
        except TimeoutError as exc:
            raise GatewayTimeout("the translation engine did not answer before the request's deadline") from exc

    async def _take_slot(self, deadline: float | None) -> None:
        if deadline is None:
            await self._slots.acquire()
            return
        try:
            async with asyncio.timeout_at(_loop_time_at(deadline)):
                await self._slots.acquire()
        except TimeoutError:
            raise GatewayTimeout("the request ran out of time waiting for a call to the engine") from None

    async def _translate(
        self, pieces: list[Piece], priority: Priority, deadline: float | None
    ) -> Sequence[PieceResult]:
        for attempt in range(1, self.attempts + 1):
            timeout_ms = None
            if deadline is not None:
                timeout_ms = (deadline - time.monotonic()) * 1000
                if timeout_ms <= 0:
                    raise GatewayTimeout("the request ran out of time before the engine could answer it")
            try:
                raw = await self.gate.call(lambda: self._call(pieces, int(priority), timeout_ms))  # noqa: B023
            except TranslationError:
                raise
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                # A dropped connection or an answer cut short: a stale pooled connection (the pool
                # recycling it, or kept from before an engine restart), or a dead engine; a refused
                # connection: a full accept backlog, or an engine that is gone or got SIGTERM. The
                # probe tells them apart, and translation is idempotent, so a retry is safe.
                if attempt < self.attempts and await self.gate.probe():
                    logger.warning("engine call failed (%s: %s); retrying", type(exc).__name__, exc)
                    continue
                # An engine that refuses connections while it drains still answers the calls it
                # holds, on their own connections: refuse new calls but leave those to finish.
                self.gate.mark_down(
                    f"the translation engine is unreachable ({type(exc).__name__})",
                    abandon_waiting=not isinstance(exc, aiohttp.ClientConnectorError),
                )
                raise Unavailable(f"the translation engine is unreachable: {type(exc).__name__}") from exc
            except TimeoutError as exc:
                raise GatewayTimeout("the translation engine did not answer in time") from exc
            except aiohttp.ClientError as exc:
                raise Unavailable(f"the call to the translation engine failed: {type(exc).__name__}") from exc
            except Exception as exc:  # noqa: BLE001 - BentoML's client errors and anything else: never a 500
                status = getattr(exc, "error_code", None)
                logger.warning("engine call failed: %r (status %s)", exc, status)
                if int(status or 0) == 504:
                    raise GatewayTimeout("the translation engine did not answer in time") from exc
                raise TranslationFailed(f"the translation engine failed: {type(exc).__name__}") from exc
            return self._results(raw, len(pieces))
        raise AssertionError("unreachable")

    @staticmethod
    def _results(raw: Any, expected: int) -> list[PieceResult]:
        try:
            reply = raw if isinstance(raw, EngineReply) else EngineReply.model_validate(raw)
        except ValueError as exc:
            raise TranslationFailed(f"the translation engine sent an answer of the wrong shape: {exc}") from exc
        if reply.refused is not None:
            if reply.refused.reason == "expired":
                raise GatewayTimeout(reply.refused.message)
            raise Unavailable(reply.refused.message, retry_after_s=reply.refused.retry_after_s)
        if len(reply.results) != expected:
            raise TranslationFailed(f"the engine answered {len(reply.results)} pieces for {expected} sent")
        return reply.results
