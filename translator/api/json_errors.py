"""Error answers as JSON objects that name the problem (translator/contract/errors.py): the
middleware's own, and BentoML's and Starlette's rewritten, since BentoML answers its own 4xx with a
JSON list, pydantic failures with a generic title, and unknown routes with plain text."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from translator.contract.errors import RETRY_AFTER_SECONDS, validation_message

Message = dict[str, Any]
Send = Callable[[Message], Any]
Headers = list[tuple[bytes, bytes]]
# An API's own error shape, made from `{"error": ...}` (DeepL's `{"message": ...}`).
Shape = Callable[[dict[str, Any]], dict[str, Any]]


class ErrorRewriter:
    """Passes successful responses through untouched; buffers error responses and rewrites them."""

    def __init__(self, send: Send, method: str, shape: Shape | None = None) -> None:
        self.send = send
        self.method = method
        self.shape = shape
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
        if self.shape is not None:
            body = self.shape(body)
        await send_json(self.send, status, body, headers)


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


async def send_json(
    send: Send,
    status: int,
    body: dict[str, Any],
    headers: Headers | None = None,
    before_end: Callable[[], Awaitable[Any]] | None = None,
) -> None:
    """Answer `body` as JSON, with a Retry-After on a 429 or 503 that has none; `before_end` is
    awaited once the body is out, before the response ends."""
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
