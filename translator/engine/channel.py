"""The engine's end of the channel (translator/contract/wire.py): a Unix socket the API workers call.

Each call runs as a task of its own, so a connection carries any number of calls at once and a
slow one holds back none of the others; each answer is written when it is ready. A `cancel` frame
(the API worker's caller went away) or the connection's loss (the API worker died) cancels the
call's task, which drops its pieces still queued (the scheduler's `caller_gone`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from translator.contract.protocol import EngineRefusal, EngineReply, Piece, Priority
from translator.contract.wire import CALL, CANCEL, FramedConnection, pieces_of, reply_frame

logger = logging.getLogger(__name__)

# How long without a call in flight ends the drain at shutdown, and how often it looks.
DRAIN_QUIET_S = 1.0
DRAIN_POLL_S = 0.05

# One request's pieces, its priority and its time limit (seconds, None for the engine's own) ->
# the engine's reply.
Serve = Callable[[list[Piece], Priority, float | None], Awaitable[EngineReply]]


class ChannelServer:
    def __init__(self, path: Path, serve: Serve, calls_changed: Callable[[int], None] = lambda _: None) -> None:
        self.path = path
        self._serve = serve
        # Told the number of calls in flight whenever it changes (/metrics: what is at the engine).
        self._calls_changed = calls_changed
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[_Connection] = set()

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # left by a process of this pid that died (pids are reused)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_unix_server(lambda: _Connection(self), path=str(self.path))
        # Only processes of the same user (the server's own workers) may call the model.
        os.chmod(self.path, 0o600)
        logger.info("engine channel listening on %s", self.path)

    @property
    def calls_in_flight(self) -> int:
        return sum(len(c.calls) for c in self._connections)

    def calls_changed(self) -> None:
        self._calls_changed(self.calls_in_flight)

    async def drain(self, timeout_s: float, quiet_s: float = DRAIN_QUIET_S) -> None:
        """At shutdown, before the scheduler closes: answer what the API workers still ask.

        Uvicorn drains the HTTP requests it holds before the engine's shutdown hooks run, but
        calls on this channel are not HTTP requests: closed at once, the engine would refuse the
        calls that the draining API workers' requests wait on (a graceful stop answering 503).
        So the engine keeps serving until every API worker has gone (its connection closes when
        its process exits), or no call has been in flight for `quiet_s` (a request's second call,
        for the sentences placement sent back, follows its first within milliseconds), or
        `timeout_s` has passed."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout_s
        quiet_since = loop.time()
        while self._connections and loop.time() < end:
            if self.calls_in_flight:
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= quiet_s:
                break
            await asyncio.sleep(DRAIN_POLL_S)

    async def close(self) -> None:
        """Stop taking connections and forget the socket."""
        if self._server is not None:
            self._server.close()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def abort(self) -> None:
        for connection in list(self._connections):
            connection.abort()


class _Connection(FramedConnection):
    def __init__(self, server: ChannelServer) -> None:
        super().__init__()
        self._server = server
        self.calls: dict[int, asyncio.Task[None]] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._server._connections.add(self)

    def received(self, messages: list[list[Any]]) -> None:
        for message in messages:
            try:
                self._dispatch(message)
            except (ValueError, TypeError, IndexError) as exc:
                logger.error("engine channel: a malformed %r message (%s); closing the connection", message[0], exc)
                self.abort()
                return

    def _dispatch(self, message: list[Any]) -> None:
        kind = message[0]
        if kind == CALL:
            _, call_id, priority, timeout_ms, rows = message
            urgency = Priority(min(max(int(priority), 0), max(Priority)))
            timeout_s = None if timeout_ms is None else float(timeout_ms) / 1000
            task = asyncio.get_running_loop().create_task(self._call(call_id, pieces_of(rows), urgency, timeout_s))
            self.calls[call_id] = task
            self._server.calls_changed()
        elif kind == CANCEL:
            cancelled = self.calls.pop(message[1], None)
            self._server.calls_changed()
            if cancelled is not None:
                cancelled.cancel()
        else:
            raise ValueError(f"unknown message kind {kind!r}")

    async def _call(self, call_id: int, pieces: list[Piece], priority: Priority, timeout_s: float | None) -> None:
        try:
            reply = await self._server._serve(pieces, priority, timeout_s)
        except asyncio.CancelledError:
            return  # its caller is gone: nobody reads an answer
        except Exception as exc:  # noqa: BLE001 - an answer is owed whatever failed; the caller retries later
            logger.exception("engine channel: a call failed")
            refusal = EngineRefusal(
                reason="engine_error", message=f"the engine failed: {type(exc).__name__}", retry_after_s=5
            )
            reply = EngineReply(refused=refusal)
        finally:
            self.calls.pop(call_id, None)
            self._server.calls_changed()
        if self.writer is not None:
            self.writer.write(reply_frame(call_id, reply))

    def connection_lost(self, exc: Exception | None) -> None:
        # The API worker is gone (or closed the connection): none of its calls has a reader.
        super().connection_lost(exc)
        for task in self.calls.values():
            task.cancel()
        self.calls.clear()
        self._server.calls_changed()
        self._server._connections.discard(self)
