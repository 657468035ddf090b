"""Refusing a request before the app sees it, and the lingering close after a refusal given while
the rest of the body is still arriving."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from translator.api.json_errors import Headers, Send, Shape, send_json
from translator.contract.errors import TranslationError

Receive = Callable[[], Any]

CLOSE: Headers = [(b"connection", b"close")]

# After an early refusal (413, 415, 429) the rest of the body is still arriving. Closing then makes
# the kernel answer it with a reset, and clients that send the whole body before reading (Python's
# urllib) see "connection reset" instead of the answer. So the server keeps reading and discarding
# ("lingering close", as nginx and Apache do) until the body ends, the client goes, or one of these
# bounds is reached; then it closes. Nothing read is kept.
LINGER_MAX_BYTES = 64 * 1024 * 1024
LINGER_MAX_SECONDS = 30.0
# A client silent this long is not sending a body any more (e.g. one that sent Expect: 100-continue
# and got its answer instead).
LINGER_IDLE_SECONDS = 5.0


class TooManyRequests(TranslationError):
    """The server, or this worker, has no room for the request now: the client may retry."""

    status = 429


class UnsupportedMediaType(TranslationError):
    status = 415


class Misconfigured(TranslationError):
    """The server cannot serve as configured (its log says why): the client may retry."""

    status = 503


async def refuse(
    send: Send,
    error: TranslationError,
    unread: Receive | None = None,
    close: bool = False,
    shape: Shape | None = None,
) -> None:
    """Answer `error` with its status and headers. `unread` yields the rest of a body not read to
    its end; `close` closes the connection without reading on (a client too slow, or gone); `shape`
    gives the body the shape of the API the request was for (DeepL's `message`).

    The answer goes out whole at once (clients that read while sending, like curl, have it), the
    connection is marked to close when the body was not read to its end (the rest is not going to
    be parsed as a next request), and the response is completed only after the rest of the body has
    been discarded, within bounds: the server closes the socket only then, so the kernel does not
    answer the body still in flight with a reset that clients sending the whole body before reading
    (urllib, requests) would see instead of this answer. `unread` still yields the body while the
    response is incomplete, under uvicorn's h11 and httptools protocols alike; once it is complete,
    uvicorn stops delivering it.
    """
    headers = header_pairs(error.headers())
    body = error.body() if shape is None else shape(error.body())
    if unread is None:
        await send_json(send, error.status, body, [*headers, *CLOSE] if close else headers)
        return
    await send_json(send, error.status, body, [*headers, *CLOSE], before_end=lambda: discard_body(unread))


def header_pairs(headers: dict[str, str]) -> Headers:
    """Headers as ASGI sends them: lower-case names, latin-1 bytes."""
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


async def discard_body(
    receive: Receive,
    max_bytes: int = LINGER_MAX_BYTES,
    max_seconds: float = LINGER_MAX_SECONDS,
    idle_seconds: float = LINGER_IDLE_SECONDS,
) -> int:
    """Read and drop the rest of a request body, bounded in bytes and time; the bytes dropped."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_seconds
    discarded = 0
    while discarded <= max_bytes:
        wait = min(idle_seconds, deadline - loop.time())
        if wait <= 0:
            break
        try:
            message = await asyncio.wait_for(receive(), wait)
        except TimeoutError:
            break
        if message["type"] != "http.request":
            break
        discarded += len(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return discarded
