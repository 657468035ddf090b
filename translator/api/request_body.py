"""Reading request bodies in an API worker, since BentoML reads any body whole into memory: each
body bounded in bytes (413) and in time (408), and the bytes of all the bodies arriving at once
bounded too (429), charged as they arrive, not as declared: a connection that sends its headers and
nothing more takes none of the bound from the clients that do send."""

from __future__ import annotations

import asyncio

from translator.api.json_errors import Message, Send, Shape
from translator.api.refusal import Receive, TooManyRequests, refuse
from translator.contract.errors import ClientClosed, PayloadTooLarge, RequestTimeout, TranslationError

_CROWDED = "too many request bodies arriving at once; retry later"


class BodyReader:
    """The request bodies this worker is receiving."""

    def __init__(self, max_bytes: int, max_arriving_bytes: int, timeout_s: float) -> None:
        self.max_bytes = max_bytes
        self.max_arriving_bytes = max_arriving_bytes
        self.timeout_s = timeout_s
        self.arriving = 0  # bytes received of the bodies being read now

    def declared_too_large(self, declared: int | None) -> TranslationError | None:
        """The refusal of a body whose declared length is over the limit, before reading it."""
        return self._too_large() if declared is not None and declared > self.max_bytes else None

    def declared_crowded(self, declared: int | None) -> TranslationError | None:
        """The refusal of a body that could not arrive now within the bytes arriving at once."""
        if declared is not None and self.arriving + declared > self.max_arriving_bytes:
            return TooManyRequests(_CROWDED)
        return None

    async def read(self, receive: Receive, send: Send, shape: Shape | None = None) -> bytes | None:
        """The whole body; None when it was refused instead (answered on `send`, in `shape`)."""
        read = _BodyRead()
        try:
            await asyncio.wait_for(self._read(receive, read), self.timeout_s)
        except TimeoutError:
            # Not lingering: a client this slow would hold the connection as long again.
            await refuse(send, RequestTimeout(self.timeout_s), close=True, shape=shape)
            return None
        finally:
            self.arriving -= read.charged
        if read.gone:
            # The client left mid-body: what arrived is not a request to act on. Still answered (into
            # the void: uvicorn drops it), since BentoML's middlewares around ours wait for a
            # response: returning without one left an API worker unable to shut down.
            gone = ClientClosed("the client closed the connection before the end of its body")
            await refuse(send, gone, close=True, shape=shape)
            return None
        if read.crowded or read.too_large:
            error = TooManyRequests(_CROWDED) if read.crowded else self._too_large()
            await refuse(send, error, None if read.ended else receive, shape=shape)
            return None
        return b"".join(read.chunks)

    def _too_large(self) -> TranslationError:
        return PayloadTooLarge("request body in bytes", self.max_bytes)

    async def _read(self, receive: Receive, read: _BodyRead) -> None:
        """Read the body into `read`, each chunk charged to the bytes this worker is receiving:
        past that bound the read stops (`crowded`), as it does past the body limit (`too_large`)."""
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                read.gone = read.ended = True
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            read.ended = not message.get("more_body", False)
            if size > self.max_bytes:
                read.too_large = True
                return
            if self.arriving + len(chunk) > self.max_arriving_bytes:
                read.crowded = True
                return
            self.arriving += len(chunk)
            read.charged += len(chunk)
            read.chunks.append(chunk)
            if read.ended:
                return


class _BodyRead:
    """A request body as far as it was read, and why the read stopped."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.charged = 0  # bytes counted in the worker's arriving bytes
        self.ended = False  # its last byte was read
        self.gone = False  # the client disconnected before the end
        self.too_large = False
        self.crowded = False


def replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the app: the body read, whole, then what the client sends next (its
    disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
