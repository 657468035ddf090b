"""The engine channel's wire format: what an API worker and the engine process write to each other.

BentoML's call between services costs the engine process about 1.5 ms of CPU per call (its
ASGI stack: tracing, access log, metrics, body parsing, pydantic), measured with every request a
cache hit, and it saturated near 650 calls/s on 2 cores: the Python around the model, not the
model, decided what a GPU deployment served. So the hot path has a channel of its own: one Unix
socket per engine process, one connection per API worker, many calls in flight on it at once.

A frame is a 4-byte big-endian length and a JSON array; the first element says what it is:
- `["call", id, priority, timeout_ms | null, [[text, source, target, alternatives], ...]]`
- `["cancel", id]`: the caller went away; the engine drops what it had not started;
- `["results", id, [[text, error, error_kind, [alternative, ...]], ...]]`, one per piece, in order;
- `["refused", id, reason, message, retry_after_s]`.
Ids are the API worker's, unique on its connection. Arrays, not objects: no key is sent twice per
piece, and nothing is validated on the way (both ends are this package).
"""

from __future__ import annotations

import asyncio
import json
import logging
import struct
from collections.abc import Iterable, Sequence
from typing import Any, cast

from translator.contract.protocol import EngineRefusal, EngineReply, Piece, PieceResult

logger = logging.getLogger(__name__)

HEADER = struct.Struct("!I")
# Far above any request the API admits (4 MiB of body, json-escaped at worst six bytes a byte):
# a length beyond it is a corrupt stream, and the connection is closed rather than trusted.
MAX_FRAME_BYTES = 256 * 1024 * 1024

CALL = "call"
CANCEL = "cancel"
RESULTS = "results"
REFUSED = "refused"


class ProtocolError(Exception):
    """A frame that is not this protocol's: the connection is closed."""


def _frame(message: Sequence[Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    return HEADER.pack(len(body)) + body


def call_frame(call_id: int, pieces: Iterable[Piece], priority: int, timeout_ms: float | None) -> bytes:
    rows = [[p.text, p.source, p.target, p.alternatives] for p in pieces]
    return _frame([CALL, call_id, priority, timeout_ms, rows])


def cancel_frame(call_id: int) -> bytes:
    return _frame([CANCEL, call_id])


def reply_frame(call_id: int, reply: EngineReply) -> bytes:
    if reply.refused is not None:
        r = reply.refused
        return _frame([REFUSED, call_id, r.reason, r.message, r.retry_after_s])
    rows = [[r.text, r.error, r.error_kind, r.alternatives] for r in reply.results]
    return _frame([RESULTS, call_id, rows])


def pieces_of(rows: Sequence[Sequence[Any]]) -> list[Piece]:
    # model_construct: the API worker validated every field before it sent them.
    return [Piece.model_construct(text=t, source=s, target=g, alternatives=a) for t, s, g, a in rows]


def reply_of(message: Sequence[Any]) -> EngineReply:
    """The EngineReply a `results` or `refused` message carries."""
    if message[0] == REFUSED:
        _, _, reason, text, retry_after_s = message
        return EngineReply.model_construct(
            results=[], refused=EngineRefusal.model_construct(reason=reason, message=text, retry_after_s=retry_after_s)
        )
    results = [PieceResult.model_construct(text=t, error=e, error_kind=k, alternatives=a) for t, e, k, a in message[2]]
    return EngineReply.model_construct(results=results, refused=None)


class FrameReader:
    """Cuts a byte stream into messages; fed whatever the socket delivered."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[list[Any]]:
        self._buffer += data
        messages = []
        start = 0
        buffer = self._buffer
        while len(buffer) - start >= HEADER.size:
            (size,) = HEADER.unpack_from(buffer, start)
            if size > MAX_FRAME_BYTES:
                raise ProtocolError(f"a frame of {size} bytes, over the limit of {MAX_FRAME_BYTES}")
            end = start + HEADER.size + size
            if len(buffer) < end:
                break
            try:
                message = json.loads(buffer[start + HEADER.size : end])
            except ValueError as exc:
                raise ProtocolError(f"a frame that is not JSON: {exc}") from None
            if not isinstance(message, list) or not message:
                raise ProtocolError("a frame that is not a message")
            messages.append(message)
            start = end
        if start:
            del buffer[:start]
        return messages


class TickWriter:
    """Frames written in one turn of the event loop leave in one send: under load, a reply per
    call would be a system call per call."""

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self._transport = transport
        self._pending: list[bytes] = []

    def write(self, frame: bytes) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(frame)

    def _flush(self) -> None:
        frames, self._pending = self._pending, []
        if not self._transport.is_closing():
            self._transport.write(b"".join(frames))


class FramedConnection(asyncio.Protocol):
    """One end of a channel connection: frames in, cut into messages for `received`; a corrupt
    stream closes the connection. `writer` coalesces what is written in one loop turn."""

    def __init__(self) -> None:
        self._reader = FrameReader()
        self.transport: asyncio.Transport | None = None
        self.writer: TickWriter | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses: no isinstance check.
        self.transport = cast(asyncio.Transport, transport)
        self.writer = TickWriter(self.transport)

    def data_received(self, data: bytes) -> None:
        try:
            messages = self._reader.feed(data)
        except ProtocolError as exc:
            logger.error("engine channel: %s; closing the connection", exc)
            self.abort()
            return
        self.received(messages)

    def received(self, messages: list[list[Any]]) -> None:
        raise NotImplementedError

    def connection_lost(self, exc: Exception | None) -> None:
        self.writer = None

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
