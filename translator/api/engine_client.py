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

from translator.api.engine_channel import EngineUnreachable
from translator.api.engine_gate import EngineGate
from translator.contract.errors import GatewayTimeout, TranslationError, TranslationFailed, Unavailable
from translator.contract.protocol import EngineReply, Piece, PieceResult, Priority
from translator.contract.wire import ProtocolError

logger = logging.getLogger(__name__)

# (pieces, priority, timeout in ms or None) -> the engine's reply, as a model or its JSON form.
RawCall = Callable[[list[Piece], int, float | None], Awaitable[Any]]

# Tries per call when connections drop while the engine itself answers: after an engine restart
# the old connection fails at once, and the call goes again on a new one.
ATTEMPTS = 4
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
        deadline_slack_s: float = DEADLINE_SLACK_S,
    ) -> None:
        self.gate = gate
        self.deadline_slack_s = deadline_slack_s
        self._call = call
        self.attempts = attempts

    async def translate(
        self,
        pieces: list[Piece],
        priority: Priority = Priority.INTERACTIVE,
        deadline: float | None = None,
        binding: bool = False,
    ) -> Sequence[PieceResult]:
        """Translate pieces by `deadline`, a `time.monotonic()` instant the engine plans with.

        The engine answers a request whose deadline passes itself (504, `expired`). A `binding`
        deadline (the caller's own, `X-Deadline-Ms`) is kept here too, whatever the engine is
        doing: past it and the slack, the caller gets its 504 without the engine's word. The
        server's own latency objective is not binding so: the engine may admit a request alone on
        an idle model although it is predicted late (it could never be answered sooner), and
        answers it when it is done."""
        try:
            async with asyncio.timeout_at(
                _loop_time_at(deadline + self.deadline_slack_s) if binding and deadline is not None else None
            ):
                return await self._translate(pieces, priority, deadline)
        except TimeoutError as exc:
            raise GatewayTimeout("the translation engine did not answer before the request's deadline") from exc

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
            except ConnectionError as exc:
                # A dropped connection (kept from before an engine restart, or a dead engine), or a
                # refused one (an engine that is gone or has stopped taking connections). The probe
                # tells them apart, and translation is idempotent, so a retry is safe.
                if attempt < self.attempts and await self.gate.probe():
                    logger.warning("engine call failed (%s: %s); retrying", type(exc).__name__, exc)
                    continue
                # An engine that refuses connections while it drains still answers the calls it
                # holds, on their own connections: refuse new calls but leave those to finish.
                self.gate.mark_down(
                    f"the translation engine is unreachable ({type(exc).__name__})",
                    abandon_waiting=not isinstance(exc, EngineUnreachable),
                )
                raise Unavailable(f"the translation engine is unreachable: {type(exc).__name__}") from exc
            except TimeoutError as exc:
                raise GatewayTimeout("the translation engine did not answer in time") from exc
            except ProtocolError as exc:
                raise TranslationFailed(f"the translation engine sent an unreadable answer: {exc}") from exc
            except Exception as exc:  # noqa: BLE001 - whatever else fails here: never a 500
                logger.warning("engine call failed: %r", exc)
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
