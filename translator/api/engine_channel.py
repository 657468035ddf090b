"""An API worker's end of the engine channel (translator/contract/wire.py): one connection to each
engine process, every call of this worker multiplexed on it.

The engine's sockets are found beside its process records (translator/shm/engine_process.py):
a respawned engine has a new pid and a new socket, found when the old connection is lost. A dead
engine's socket refuses connections at once (nobody holds it open, unlike BentoML's arbiter
socket), and every call in flight on a lost connection fails at once: the engine client retries
such failures after a probe, as it does dropped HTTP connections.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from translator.contract.protocol import EngineReply, Piece
from translator.contract.wire import FramedConnection, ProtocolError, call_frame, cancel_frame, reply_of
from translator.shm.engine_process import channel_path, engine_pids

logger = logging.getLogger(__name__)


class EngineUnreachable(ConnectionError):
    """No engine takes connections (none announced, or its socket refused): nothing was sent."""


class ChannelDropped(ConnectionError):
    """The connection was lost with the call in flight: the engine may or may not have done it."""


def engine_sockets() -> list[Path]:
    """The channels of this server's live engine processes (the API workers' parent is the server)."""
    return [channel_path(pid) for pid in engine_pids(os.getppid())]


class EngineChannel:
    def __init__(self, locate: Callable[[], Sequence[Path]] = engine_sockets) -> None:
        self._locate = locate
        self._connections: dict[Path, _Connection] = {}
        self._connecting: asyncio.Task[None] | None = None
        self._rotation = itertools.count()
        self._ids = itertools.count(1)

    async def call(self, pieces: Sequence[Piece], priority: int, timeout_ms: float | None) -> EngineReply:
        connection = await self._connection()
        call_id = next(self._ids)
        reply = connection.send(call_id, call_frame(call_id, pieces, priority, timeout_ms))
        try:
            return await reply
        except asyncio.CancelledError:
            connection.cancel(call_id)
            raise

    async def _connection(self) -> _Connection:
        live = [c for c in self._connections.values() if c.open]
        if not live:
            # One connect at a time: calls arriving meanwhile wait for it instead of each opening its own.
            if self._connecting is None or self._connecting.done():
                self._connecting = asyncio.ensure_future(self._connect_all())
            await asyncio.shield(self._connecting)
            live = [c for c in self._connections.values() if c.open]
            if not live:
                raise EngineUnreachable("no translation engine takes connections")
        return live[next(self._rotation) % len(live)]

    async def _connect_all(self) -> None:
        loop = asyncio.get_running_loop()
        paths = list(self._locate())
        if not paths:
            raise EngineUnreachable("no translation engine has announced its channel")
        failure: OSError | None = None
        for path in paths:
            if path in self._connections and self._connections[path].open:
                continue
            try:
                _, connection = await loop.create_unix_connection(_Connection, str(path))
            except OSError as exc:  # refused (its process is gone), or its socket removed
                failure = exc
                continue
            self._connections[path] = connection
        if not any(c.open for c in self._connections.values()):
            raise EngineUnreachable(f"the translation engine refused the connection: {failure}")

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()


class _Connection(FramedConnection):
    def __init__(self) -> None:
        super().__init__()
        self._pending: dict[int, asyncio.Future[EngineReply]] = {}
        self.open = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.open = True

    def send(self, call_id: int, frame: bytes) -> asyncio.Future[EngineReply]:
        if not self.open or self.writer is None:
            raise ChannelDropped("the connection to the translation engine is closed")
        future: asyncio.Future[EngineReply] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        self.writer.write(frame)
        return future

    def cancel(self, call_id: int) -> None:
        if self._pending.pop(call_id, None) is not None and self.open and self.writer is not None:
            self.writer.write(cancel_frame(call_id))

    def received(self, messages: list[list[Any]]) -> None:
        for message in messages:
            future = self._pending.pop(message[1], None) if len(message) > 1 else None
            if future is None or future.done():
                continue  # cancelled meanwhile
            try:
                future.set_result(reply_of(message))
            except (ValueError, TypeError, IndexError) as exc:
                future.set_exception(ProtocolError(f"a malformed {message[0]!r} message from the engine: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.open = False
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ChannelDropped(f"the translation engine closed the connection ({exc or 'EOF'})"))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
