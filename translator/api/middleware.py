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
import logging
import math
from collections.abc import Callable
from typing import Any

from translator.api.admission import SharedInFlight
from translator.api.auth import ApiKeys
from translator.api.json_errors import ErrorRewriter
from translator.api.libretranslate import edge_request
from translator.api.refusal import Misconfigured, TooManyRequests, UnsupportedMediaType, refuse
from translator.api.request_options import priority_of
from translator.config import ConfigError
from translator.contract import limits
from translator.contract.engine_load import LoadReader
from translator.contract.errors import (
    ClientClosed,
    PayloadTooLarge,
    RequestTimeout,
    TranslationError,
    Unavailable,
)

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
                await refuse(answer.send, TranslationError("internal error before the request was handled"), close=True)
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
        libretranslate = edge_request(scope)
        if libretranslate is not None:
            scope = libretranslate.scope
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, ErrorRewriter(send, scope["method"]))
            return
        # What the headers decide is decided before the body is read: those refusals cost no read
        # and no parse, and none of them holds an admission slot while the rest of the body is
        # discarded.
        if self._untaken > self.max_untaken_bytes:
            await refuse(send, TooManyRequests("too many answers not read by their clients; retry later"), receive)
            return
        if self.keys_problem is not None:
            message = "this server's API keys are misconfigured (its log says how); retry later"
            await refuse(send, Misconfigured(message), receive)
            return
        compatible = libretranslate is not None
        if self.keys is not None and not compatible:
            refusal = self.keys.refusal(scope.get("headers", ()))
            if refusal is not None:
                await refuse(send, refusal, receive)
                return
        media_type = _media_type(scope)
        accepted = media_type in _JSON_TYPES or media_type.endswith("+json")
        if not accepted and not (libretranslate is not None and media_type in libretranslate.media_types):
            # BentoML would hand multipart or pickle bodies to other parsers (500 or 415 lists).
            message = f"Content-Type {media_type!r} is not supported; send application/json"
            await refuse(send, UnsupportedMediaType(message), receive)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await refuse(send, PayloadTooLarge("request body in bytes", self.max_body_bytes), receive)
            return
        if self.admission is not None and self.admission.full():
            await refuse(send, self._too_many(), receive)
            return
        queued = libretranslate.queued if libretranslate is not None else scope["path"] == _TRANSLATION_PATH
        if queued and (late := self._forecast_late(scope)) is not None:
            if self._held < self.held_refusals_max:
                self._held += 1
                try:
                    await asyncio.sleep(min(self.refusal_hold_s, late.retry_after_s))
                finally:
                    self._held -= 1
            await refuse(send, late, receive)
            return
        if declared is not None and self._arriving + declared > self.max_arriving_bytes:
            await refuse(send, TooManyRequests(_CROWDED), receive)
            return
        read = _BodyRead()
        try:
            await asyncio.wait_for(self._read_body(receive, read), self.body_timeout_s)
        except TimeoutError:
            # Not lingering: a client this slow would hold the connection as long again.
            await refuse(send, RequestTimeout(self.body_timeout_s), close=True)
            return
        finally:
            self._arriving -= read.charged
        if read.gone:
            # The client left mid-body: what arrived is not a request to act on. Still answered (into
            # the void: uvicorn drops it), since BentoML's middlewares around this one wait for a
            # response: returning without one left an API worker unable to shut down.
            gone = ClientClosed("the client closed the connection before the end of its body")
            await refuse(send, gone, close=True)
            return
        if read.crowded:
            await refuse(send, TooManyRequests(_CROWDED), receive if not read.ended else None)
            return
        if read.too_large:
            error = PayloadTooLarge("request body in bytes", self.max_body_bytes)
            await refuse(send, error, receive if not read.ended else None)
            return
        body = b"".join(read.chunks)
        rewriter = ErrorRewriter(send, scope["method"])
        if self.admission is None:
            await self.app(scope, _replay(body, receive), rewriter)
            return
        # The slot is taken once the body is complete and given back once the answer is ready:
        # neither a slow upload nor a client that does not read its answer holds one.
        if not self.admission.try_acquire():
            await refuse(send, self._too_many())
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
        split and an engine round trip (translator/contract/engine_load.py)."""
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

    def _too_many(self) -> TranslationError:
        assert self.admission is not None
        return TooManyRequests(f"too many requests in flight (limit {self.admission.limit}); retry later")

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


# The native API's route (service.py's `translation`), which waits in the model's queue: only
# requests that do are refused from the engine's forecast.
_TRANSLATION_PATH = "/translation"
_CROWDED = "too many request bodies arriving at once; retry later"


# What BentoML parses as JSON; text/plain too, since curl and some clients send it by default.
_JSON_TYPES = {"", "application/json", "text/plain"}


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
