"""ASGI middleware of the public service: what BentoML does not do for us.

- API keys, when the operator asks for them (translator/api/auth.py): checked first, so a caller
  without one costs no read and no admission slot;
- admission (429 + Retry-After), decided before the body is read and held only from the moment
  the body is complete: a client trickling bytes never holds a slot that every worker shares;
- a request-body byte limit (BentoML reads any body whole into memory) and time limit (408),
  and a time limit on each part of the answer: a client that does not read its answer holds no
  admission slot (given back once the answer is ready), and what it was sent is counted until it
  goes, new requests refused past a bound;
- error bodies as JSON objects that name the problem: BentoML answers its own 4xx with a JSON
  list, pydantic failures with a generic title, and unknown routes with plain text;
- the LibreTranslate-compatible API (translator/api/libretranslate.py) also takes forms, and
  reads its API key from the body: its requests pass here with their keys unchecked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import urllib.parse
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from translator.api.auth import ApiKeys
from translator.api.libretranslate import TRANSLATE_PATH, normalized_path
from translator.api.request_options import priority_of
from translator.config import ConfigError
from translator.contract import limits
from translator.contract.errors import (
    RETRY_AFTER_SECONDS,
    ClientClosed,
    PayloadTooLarge,
    RequestTimeout,
    TranslationError,
    Unavailable,
    validation_message,
)
from translator.shm.engine_load import LoadReader
from translator.shm.in_flight import SharedInFlight

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Message], Any]


class EdgeMiddleware:
    def __init__(
        self,
        app: Any,
        max_body_bytes: int = limits.MAX_BODY_BYTES,
        admission: SharedInFlight | None = None,
        body_timeout_s: float = limits.BODY_TIMEOUT_S,
        keys: ApiKeys | Callable[[], ApiKeys | None] | None = None,
        max_arriving_bytes: int = limits.MAX_ARRIVING_BODY_BYTES,
        engine_load: LoadReader | None = None,
        refusal_hold_s: float = limits.REFUSAL_HOLD_S,
        held_refusals_max: int = limits.HELD_REFUSALS_MAX,
        send_timeout_s: float = limits.SEND_TIMEOUT_S,
        max_untaken_bytes: int = limits.MAX_UNTAKEN_ANSWER_BYTES,
    ) -> None:
        self.app = app
        self.send_timeout_s = send_timeout_s
        self.max_untaken_bytes = max_untaken_bytes
        self._untaken = 0  # bytes of answers their clients stopped reading, still held
        # The engine's forecast of its queue: what it would refuse is refused here, unread, and
        # after a pause (limits.REFUSAL_HOLD_S says why).
        self.engine_load = engine_load
        self.refusal_hold_s = refusal_hold_s
        self.held_refusals_max = held_refusals_max
        self._held = 0
        # A callable is asked here, in the worker; keys asked for but not given fail closed.
        self.keys_problem: str | None = None
        if callable(keys):
            try:
                keys = keys()
            except ConfigError as exc:
                keys, self.keys_problem = None, str(exc)
        self.keys = keys
        self.max_arriving_bytes = max_arriving_bytes
        self._arriving = 0  # bytes received of the bodies this worker is reading now
        self.max_body_bytes = max_body_bytes
        # Admission control for the whole server (all workers): beyond it, a fast 429 rather than
        # an ever longer queue.
        self.admission = admission
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answer = _TimedAnswer(send, self.send_timeout_s)
        try:
            try:
                await self._http(scope, receive, answer.send)
            except _AnswerNotTaken:
                raise
            except Exception as exc:
                if isinstance(exc, ExceptionGroup) and exc.subgroup(_AnswerNotTaken) is not None:
                    raise _AnswerNotTaken(str(exc)) from exc  # raised in a task group of the app

                # Never an unanswered request: a failure of this middleware's own (a header it could
                # not read, say) is logged and answered, where the server would otherwise leave the
                # client waiting without a word.
                logger.exception("%s %s failed before an answer", scope["method"], scope.get("path"))
                if answer.started:
                    raise
                await _send_json(answer.send, 500, {"error": "internal error before the request was handled"}, _CLOSE)
        except _AnswerNotTaken as exc:
            # The client does not read its answer. Closing cannot free what it was sent: uvicorn's
            # close waits for the unread bytes to leave, for as long as the client keeps the socket
            # open. So the request stays here, its bytes counted (new requests are refused past a
            # bound), until the client goes.
            logger.warning("%s %s: %s; holding it until the client goes", scope["method"], scope.get("path"), exc)
            self._untaken += answer.body_bytes
            try:
                while (await receive())["type"] != "http.disconnect":
                    pass
            finally:
                self._untaken -= answer.body_bytes

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        compatible_path = normalized_path(scope.get("path", ""))
        if compatible_path is not None and compatible_path != scope["path"]:
            # Clients join a base URL and a path naively: answer, do not redirect (not all follow).
            raw_path = urllib.parse.quote(compatible_path).encode("ascii")  # raw_path is percent-encoded
            scope = {**scope, "path": compatible_path, "raw_path": raw_path}
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, _ErrorRewriter(send, scope["method"]))
            return
        # What the headers decide is decided before the body is read: those refusals cost no read
        # and no parse, and none of them holds an admission slot while the rest of the body is
        # discarded.
        if self._untaken > self.max_untaken_bytes:
            await _refuse(send, receive, 429, {"error": "too many answers not read by their clients; retry later"})
            return
        if self.keys_problem is not None:
            message = "this server's API keys are misconfigured (its log says how); retry later"
            await _refuse(send, receive, 503, {"error": message})
            return
        compatible = compatible_path is not None
        if self.keys is not None and not compatible:
            refusal = self.keys.refusal(scope.get("headers", ()))
            if refusal is not None:
                extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in refusal.headers().items()]
                await _refuse(send, receive, refusal.status, refusal.body(), extra)
                return
        media_type = _media_type(scope)
        accepted = media_type in _JSON_TYPES or media_type.endswith("+json")
        if not accepted and not (compatible and media_type in _FORM_TYPES):
            # BentoML would hand multipart or pickle bodies to other parsers (500 or 415 lists).
            message = f"Content-Type {media_type!r} is not supported; send application/json"
            await _refuse(send, receive, 415, {"error": message})
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            error = PayloadTooLarge("request body in bytes", self.max_body_bytes)
            await _refuse(send, receive, error.status, error.body())
            return
        if self.admission is not None and self.admission.full():
            await _refuse(send, receive, 429, self._too_many())
            return
        if scope["path"] in _ENGINE_ROUTES and (late := self._forecast_late(scope)) is not None:
            if self._held < self.held_refusals_max:
                self._held += 1
                try:
                    await asyncio.sleep(min(self.refusal_hold_s, late.retry_after_s))
                finally:
                    self._held -= 1
            await _refuse(send, receive, late.status, late.body(), _header_pairs(late.headers()))
            return
        if declared is not None and self._arriving + declared > self.max_arriving_bytes:
            await _refuse(send, receive, 429, {"error": _CROWDED})
            return
        read = _BodyRead()
        try:
            await asyncio.wait_for(self._read_body(receive, read), self.body_timeout_s)
        except TimeoutError:
            # Not lingering: a client this slow would hold the connection as long again.
            timeout = RequestTimeout(self.body_timeout_s)
            await _send_json(send, timeout.status, timeout.body(), _CLOSE)
            return
        finally:
            self._arriving -= read.charged
        if read.gone:
            # The client left mid-body: what arrived is not a request to act on. Still answered (into
            # the void: uvicorn drops it), since BentoML's middlewares around this one wait for a
            # response: returning without one left an API worker unable to shut down.
            gone = ClientClosed("the client closed the connection before the end of its body")
            await _send_json(send, gone.status, gone.body(), _CLOSE)
            return
        if read.crowded:
            await _refuse(send, receive if not read.ended else None, 429, {"error": _CROWDED})
            return
        if read.too_large:
            error = PayloadTooLarge("request body in bytes", self.max_body_bytes)
            await _refuse(send, receive if not read.ended else None, error.status, error.body())
            return
        body = b"".join(read.chunks)
        rewriter = _ErrorRewriter(send, scope["method"])
        if self.admission is None:
            await self.app(scope, _replay(body, receive), rewriter)
            return
        # The slot is taken once the body is complete and given back once the answer is ready:
        # neither a slow upload nor a client that does not read its answer holds one.
        if not self.admission.try_acquire():
            await _refuse(send, None, 429, self._too_many())
            return
        admission, held = self.admission, True

        def give_back() -> None:
            nonlocal held
            if held:
                held = False
                admission.release()

        async def answering(message: Message) -> None:
            if message["type"] == "http.response.start":
                give_back()
            await rewriter(message)

        try:
            await self.app(scope, _replay(body, receive), answering)
        finally:
            give_back()

    def _forecast_late(self, scope: Scope) -> Unavailable | None:
        """The engine's refusal of this request, when its forecast says it would refuse it: a
        client that ignores Retry-After then costs a header parse, not a body read, a parse, a
        split and an engine round trip (translator/shm/engine_load.py)."""
        if self.engine_load is None:
            return None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        try:
            priority = priority_of(headers)
        except TranslationError:
            return None  # a bad header is answered by the request's own validation
        late = self.engine_load.late_by(priority)
        if late is None:
            return None
        return Unavailable(
            f"the engine is overloaded: a request now would be answered about {late:.0f} s past the latency "
            f"objective; retry after {max(1, math.ceil(late)):.0f} s",
            retry_after_s=late,
        )

    def _too_many(self) -> dict[str, Any]:
        assert self.admission is not None
        return {"error": f"too many requests in flight (limit {self.admission.limit}); retry later"}

    async def _read_body(self, receive: Receive, read: _BodyRead) -> None:
        """Read the body into `read`, each chunk charged to the bytes this worker is receiving:
        past that bound the read stops (`crowded`), as it does past the body limit (`too_large`).
        Bytes are charged as they arrive, not as declared: a connection that sends its headers and
        nothing more takes none of the bound from the clients that do send."""
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                read.gone = read.ended = True
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            read.ended = not message.get("more_body", False)
            if size > self.max_body_bytes:
                read.too_large = True
                return
            if self._arriving + len(chunk) > self.max_arriving_bytes:
                read.crowded = True
                return
            self._arriving += len(chunk)
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


class _AnswerNotTaken(Exception):
    """The client did not take a part of its answer within the send time limit."""


class _TimedAnswer:
    """A response's `send`, each message bounded in time (uvicorn's send waits, for ever, while the
    client does not read), with what went out counted."""

    def __init__(self, send: Send, timeout_s: float) -> None:
        self._send = send
        self.timeout_s = timeout_s
        self.started = False
        self.body_bytes = 0

    async def send(self, message: Message) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        self.body_bytes += len(message.get("body", b""))
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._send(message)
        except TimeoutError:
            raise _AnswerNotTaken(f"the client took no part of its answer within {self.timeout_s:.0f} s") from None


_CLOSE = [(b"connection", b"close")]
# The routes whose requests queue for the model: only those are refused from the engine's forecast.
_ENGINE_ROUTES = frozenset({"/translation", TRANSLATE_PATH})
_CROWDED = "too many request bodies arriving at once; retry later"


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

# What BentoML parses as JSON; text/plain too, since curl and some clients send it by default.
_JSON_TYPES = {"", "application/json", "text/plain"}
# LibreTranslate clients send forms (libretranslatepy, Discourse, Nextcloud).
_FORM_TYPES = {"application/x-www-form-urlencoded", "multipart/form-data"}


def _media_type(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return value.decode("latin-1").split(";")[0].strip().lower()
    return ""


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class _ErrorRewriter:
    """Passes successful responses through untouched; buffers error responses and rewrites them."""

    def __init__(self, send: Send, method: str) -> None:
        self.send = send
        self.method = method
        self.start: Message | None = None
        self.chunks: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            if message["status"] < 400 or self.method == "HEAD":
                await self.send(message)
                return
            self.start = message
            return
        if self.start is None or message["type"] != "http.response.body":
            await self.send(message)
            return
        self.chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        status = self.start["status"]
        headers = [
            (k, v) for k, v in self.start.get("headers", []) if k.lower() not in (b"content-length", b"content-type")
        ]
        body = error_body(status, b"".join(self.chunks))
        await _send_json(self.send, status, body, headers)


def error_body(status: int, raw: bytes) -> dict[str, Any]:
    """Turn whatever BentoML or Starlette answered into `{"error": <message>, ...}`."""
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = None
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict):
        data = data[0]
    if isinstance(data, dict) and "error" in data:
        detail = data.get("detail")
        if status == 400 and isinstance(detail, list) and detail and isinstance(detail[0], dict):
            # A pydantic failure: BentoML's message is "N validation error(s) for Input".
            return {"error": validation_message(detail), "detail": detail}
        if isinstance(data["error"], str):
            return data
    text = raw.decode("utf-8", "replace").strip() if raw and data is None else ""
    reason = _reason(status)
    return {"error": text if text and text != reason else reason}


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


def _header_pairs(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


async def _refuse(
    send: Send,
    receive: Receive | None,
    status: int,
    body: dict[str, Any],
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Answer before the request body has been read (all of it, or at all); `receive` is None when
    its end has been read already.

    The answer goes out whole at once (clients that read while sending, like curl, have it), the
    connection is marked to close (the rest of the body is not going to be parsed as a next
    request), and the response is completed only after the rest of the body has been discarded,
    within bounds: the server closes the socket only then, so the kernel does not answer the body
    still in flight with a reset that clients sending the whole body before reading (urllib,
    requests) would see instead of this answer. `receive` still yields the body while the response
    is incomplete, under uvicorn's h11 and httptools protocols alike; once it is complete, uvicorn
    stops delivering it.
    """
    if receive is None:
        await _send_json(send, status, body, headers)
        return
    closing = [*(headers or []), (b"connection", b"close")]
    await _send_json(send, status, body, closing, before_end=lambda: _discard_body(receive))


async def _discard_body(
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


async def _send_json(
    send: Send,
    status: int,
    body: dict[str, Any],
    headers: list[tuple[bytes, bytes]] | None = None,
    before_end: Callable[[], Awaitable[Any]] | None = None,
) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    out = list(headers or [])
    out += [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if status in (429, 503) and not any(k.lower() == b"retry-after" for k, _ in out):
        out.append((b"retry-after", str(RETRY_AFTER_SECONDS).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    # The body goes out first and the end of the response separately, as BentoML's own responses
    # do: BentoML 1.4.39's access log (outside this middleware) decodes the request's Content-Type
    # as UTF-8 on the *final* body message, before passing it on, and raises on a non-UTF-8 one
    # (`Content-Type: application/json\xff`). With body and end in one message the client got the
    # headers and no body; this way it gets the whole JSON error and only the end marker is lost
    # (the connection is then closed). Found by tests/e2e/test_fuzz.py.
    await send({"type": "http.response.body", "body": payload, "more_body": True})
    if before_end is not None:
        await before_end()
    await send({"type": "http.response.body", "body": b"", "more_body": False})
