"""ASGI middleware of the public service: what BentoML does not do for us.

A request that may carry a body (POST, PUT, PATCH) meets, in this order:
- the checks its headers decide (`EdgeMiddleware._checks`), each refusing it or letting it on:
  answers not read by their clients, API keys when the operator asks for them
  (translator/api/auth.py), the media type, the declared length, admission (429 + Retry-After),
  the engine's forecast, the bodies arriving at once. Those refusals cost no read and no parse,
  and none of them holds an admission slot (translator/api/refusal.py: the lingering close);
- the body read, bounded in bytes and time (translator/api/request_body.py);
- an admission slot, taken once the body is complete and given back once the answer is ready: a
  client trickling bytes, or not reading its answer, never holds a slot that every worker shares.

Each part of every answer is bounded in time, and an answer its client stops reading is counted
until the client goes (translator/api/answer_timing.py); error answers are JSON objects that name
the problem (translator/api/json_errors.py). The LibreTranslate-compatible API
(translator/api/libretranslate.py) also takes forms, and reads its API key from the body: its
requests pass here with their keys unchecked.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from translator.api import access, deepl, openapi
from translator.api.answer_timing import TimedAnswer, UnreadAnswers, not_taken
from translator.api.auth import ApiKeys
from translator.api.json_errors import ErrorRewriter, Message, Send, Shape
from translator.api.libretranslate import edge_request
from translator.api.params import read_params
from translator.api.refusal import (
    Misconfigured,
    Receive,
    TooManyRequests,
    UnsupportedMediaType,
    header_pairs,
    refuse,
)
from translator.api.request_body import BodyReader, replay
from translator.api.request_options import priority_of
from translator.config import ConfigError
from translator.contract import limits
from translator.contract.errors import TranslationError, Unavailable
from translator.shm.engine_load import LoadReader
from translator.shm.in_flight import SharedInFlight

logger = logging.getLogger(__name__)

Scope = dict[str, Any]

# The native API's route (service.py's `translation`), which waits in the model's queue.
_TRANSLATION_PATH = "/translation"
# The native routes that parse their body as JSON (BentoML's, and `POST /glossaries`): a body of
# another type is a 415 there. Elsewhere the route decides, and an unknown route is a 404 whatever
# its body.
_JSON_PATHS = frozenset({_TRANSLATION_PATH, "/glossaries"})
_BODY_METHODS = ("POST", "PUT", "PATCH")
_DOCS_PATHS = ("/", "/docs.json")
# What BentoML parses as JSON; text/plain too, since curl and some clients send it by default.
_JSON_TYPES = {"", "application/json", "text/plain"}


@dataclass(frozen=True)
class _Arrival:
    """A request as its headers show it, before its body is read."""

    scope: Scope
    rule: access.KeyRule  # how the API it is for takes its key
    public: bool  # to a route that needs no key (translator/api/access.py)
    queued: bool  # waits in the model's queue: refused from the engine's forecast
    media_type: str
    media_types: frozenset[str] | None  # taken besides JSON; None: any (the route decides)
    declared: int | None  # Content-Length
    shape: Shape | None  # the error shape of the API it is for (DeepL's); None: the native one


def _arrival(scope: Scope, routes: access.RouteTable | None) -> _Arrival:
    # DeepL's API (#33) sends its key in its own header scheme, checked by its routes.
    libretranslate = edge_request(scope) or deepl.edge_request(scope)
    if libretranslate is not None:
        scope = libretranslate.scope
    return _Arrival(
        scope,
        rule=libretranslate.keys if libretranslate is not None else access.NATIVE,
        public=access.is_public(scope["method"], scope.get("path", ""))
        or (routes is not None and not routes.routed(scope)),
        queued=libretranslate.queued if libretranslate is not None else scope.get("path") == _TRANSLATION_PATH,
        media_type=_media_type(scope),
        media_types=libretranslate.media_types if libretranslate is not None else _native_media_types(scope),
        declared=_declared_length(scope),
        shape=libretranslate.shape if libretranslate is not None else None,
    )


Check = Callable[[_Arrival], Awaitable[TranslationError | None]]


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
        routes: access.RouteTable | None = None,
        docs: openapi.Docs | None = None,
    ) -> None:
        self.app = app
        # `/docs.json` completed and `/` our own page (translator/api/openapi.py); None: BentoML's.
        self.docs = docs
        self._docs_json: bytes | None = None
        self._docs_page: bytes | None = None
        # The routes the key is asked at (None: every path not declared public).
        self.routes = routes
        self.send_timeout_s = send_timeout_s
        self.unread = UnreadAnswers(max_untaken_bytes)
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
        self.bodies = BodyReader(max_body_bytes, max_arriving_bytes, body_timeout_s)
        # Admission control for the whole server (all workers): beyond it, a fast 429 rather than
        # an ever longer queue.
        self.admission = admission
        # Decided from the headers, in this order, before the body is read: these refusals cost
        # no read and no parse, and hold no admission slot while the rest of the body is discarded.
        self._checks: tuple[Check, ...] = (
            self._answers_unread,
            self._keys_misconfigured,
            self._key_refused,
            self._media_type_refused,
            self._declared_too_large,
            self._server_full,
            self._engine_late,
            self._bodies_crowded,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answer = TimedAnswer(send, self.send_timeout_s)
        try:
            await self._answer(scope, receive, answer)
        except Exception as exc:
            if (untaken := not_taken(exc)) is None:
                raise
            logger.warning("%s %s: %s; holding it until the client goes", scope["method"], scope.get("path"), untaken)
            await self.unread.hold(receive, answer)

    async def _answer(self, scope: Scope, receive: Receive, answer: TimedAnswer) -> None:
        try:
            await self._http(scope, receive, answer.send)
        except Exception as exc:
            if not_taken(exc) is not None:
                raise
            # Never an unanswered request: a failure of this middleware's own (a header it could
            # not read, say) is logged and answered, where the server would otherwise leave the
            # client waiting without a word.
            logger.exception("%s %s failed before an answer", scope["method"], scope.get("path"))
            if answer.started:
                raise
            await refuse(answer.send, TranslationError("internal error before the request was handled"), close=True)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.docs is not None and scope["method"] in ("GET", "HEAD") and scope.get("path") in _DOCS_PATHS:
            await self._documentation(scope, receive, send, self.docs)
            return
        arrival = _arrival(scope, self.routes)
        if scope["method"] not in _BODY_METHODS:
            checks: tuple[Check, ...] = (self._keys_misconfigured, self._key_refused)
            for check in checks:
                if (refusal := await check(arrival)) is not None:
                    await refuse(send, refusal, shape=arrival.shape)
                    return
            await self.app(arrival.scope, receive, ErrorRewriter(send, scope["method"], arrival.shape))
            return
        for check in self._checks:
            if (refusal := await check(arrival)) is not None:
                await refuse(send, refusal, receive, shape=arrival.shape)
                return
        body = await self.bodies.read(receive, send, arrival.shape)
        if body is None:
            return
        if (refusal := await self._key_in_body_refused(arrival, body, receive)) is not None:
            await refuse(send, refusal, shape=arrival.shape)
            return
        rewriter = ErrorRewriter(send, scope["method"], arrival.shape)
        if self.admission is None:
            await self.app(arrival.scope, replay(body, receive), rewriter)
            return
        if not self.admission.try_acquire():
            await refuse(send, self._too_many(), shape=arrival.shape)
            return
        await self._admitted(arrival.scope, replay(body, receive), rewriter, self.admission)

    async def _admitted(self, scope: Scope, receive: Receive, send: Send, admission: SharedInFlight) -> None:
        """The app's answer, in an admission slot taken already: the slot is given back once the
        answer is ready, so that a client that does not read its answer holds none."""
        held = True

        def give_back() -> None:
            nonlocal held
            if held:
                held = False
                admission.release()

        async def answering(message: Message) -> None:
            if message["type"] == "http.response.start":
                give_back()
            await send(message)

        try:
            await self.app(scope, receive, answering)
        finally:
            give_back()

    async def _documentation(self, scope: Scope, receive: Receive, send: Send, docs: openapi.Docs) -> None:
        """`/`: the documentation page; `/docs.json`: BentoML's document of its routes, completed."""
        from translator.ui.routes import DOCS_HEADERS, asset

        # Made once a worker: its routes, its model's codes and whether keys are on do not change.
        status = 200
        if scope["path"] == "/":
            if self._docs_page is None:
                self._docs_page = asset("docs.html")
            body = self._docs_page
            headers = [(b"content-type", b"text/html; charset=utf-8"), *header_pairs(DOCS_HEADERS)]
        else:
            if self._docs_json is None:
                answer: list[Message] = []

                async def keep(message: Message) -> None:
                    answer.append(message)

                await self.app(scope, receive, keep)
                status = answer[0]["status"]
                body = b"".join(m.get("body", b"") for m in answer[1:])
                if status == 200:
                    self._docs_json = openapi.completed(body, docs)
            if self._docs_json is not None:
                body = self._docs_json
            headers = [(b"content-type", b"application/json")]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

    # The checks of `_checks`: each the refusal of a request from its headers, or None.

    async def _answers_unread(self, arrival: _Arrival) -> TranslationError | None:
        if self.unread.too_many():
            return TooManyRequests("too many answers not read by their clients; retry later")
        return None

    async def _keys_misconfigured(self, arrival: _Arrival) -> TranslationError | None:
        if self.keys_problem is not None and not arrival.public:
            return Misconfigured(access.MISCONFIGURED)
        return None

    async def _key_refused(self, arrival: _Arrival) -> TranslationError | None:
        """The key from the headers or the query string; one that may come in the body (LibreTranslate's
        `api_key`, DeepL's `auth_key`) is looked for there once the body is read."""
        if arrival.public:
            return None
        scope, rule = arrival.scope, arrival.rule
        offered = rule.header_key(scope.get("headers", ())) or _query_key(scope, rule.param)
        if offered is None and rule.param is not None and scope["method"] in _BODY_METHODS:
            return None
        scope[access.SCOPE_KEY] = offered
        return access.refusal(self.keys, None, rule, offered)

    async def _key_in_body_refused(self, arrival: _Arrival, body: bytes, receive: Receive) -> TranslationError | None:
        scope, rule = arrival.scope, arrival.rule
        if arrival.public or access.SCOPE_KEY in scope or rule.param is None:
            return None
        from starlette.requests import Request

        scope.setdefault("query_string", b"")  # ASGI requires it; a hand-made scope may lack it
        try:
            # Read once: the route reads the same parameters (translator/api/params.py).
            value = (await read_params(Request(scope, replay(body, receive)))).get(rule.param)
        except TranslationError:
            value = None  # a body that does not read holds no key; the route says what is wrong with it
        offered = value.encode("utf-8") if isinstance(value, str) and value else None
        scope[access.SCOPE_KEY] = offered
        return access.refusal(self.keys, None, rule, offered)

    async def _media_type_refused(self, arrival: _Arrival) -> TranslationError | None:
        media_type = arrival.media_type
        if arrival.media_types is None or media_type in _JSON_TYPES or media_type.endswith("+json"):
            return None
        if media_type in arrival.media_types:
            return None
        # BentoML would hand multipart or pickle bodies to other parsers (500 or 415 lists).
        return UnsupportedMediaType(f"Content-Type {media_type!r} is not supported; send application/json")

    async def _declared_too_large(self, arrival: _Arrival) -> TranslationError | None:
        return self.bodies.declared_too_large(arrival.declared)

    async def _server_full(self, arrival: _Arrival) -> TranslationError | None:
        return self._too_many() if self.admission is not None and self.admission.full() else None

    async def _engine_late(self, arrival: _Arrival) -> TranslationError | None:
        if not arrival.queued or (late := self._forecast_late(arrival.scope)) is None:
            return None
        if self._held < self.held_refusals_max:
            self._held += 1
            try:
                await asyncio.sleep(min(self.refusal_hold_s, late.retry_after_s))
            finally:
                self._held -= 1
        return late

    async def _bodies_crowded(self, arrival: _Arrival) -> TranslationError | None:
        return self.bodies.declared_crowded(arrival.declared)

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

    def _too_many(self) -> TranslationError:
        assert self.admission is not None
        return TooManyRequests(f"too many requests in flight (limit {self.admission.limit}); retry later")


def _native_media_types(scope: Scope) -> frozenset[str] | None:
    # `POST /documents` takes its file as a multipart form (translator/api/documents.py).
    from translator.api.documents import UPLOAD_TYPES, accepts_upload

    path = scope.get("path", "")
    if accepts_upload(path):
        return UPLOAD_TYPES
    return frozenset() if path in _JSON_PATHS else None


def _query_key(scope: Scope, param: str | None) -> bytes | None:
    if param is None or not scope.get("query_string"):
        return None
    from urllib.parse import parse_qs

    values = parse_qs(scope["query_string"].decode("latin-1"), keep_blank_values=False).get(param)
    return values[0].encode("utf-8") if values else None


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
