"""One domain error, each API's answer a conversion of it, and one endpoint wrapper for every route.

Errors are raised as `TranslationError` (translator/contract/errors.py) wherever they arise, with
the native API's field names (`payload.records.3.text`). Each API answers them in the shape and
words its clients read: the native `{"error", ...detail}`; LibreTranslate's `{"error"}` with its
parameter names and CORS headers; DeepL's `{"message"}` with its parameter names and its statuses
(a 401 is its 403, a validation failure its 400). Those conversions were three functions with two
field-renaming tables in three modules (#50); they are one `ErrorShape` each here, used by the
routes (`endpoint`) and by the edge's own refusals and rewritten errors (translator/api/middleware.py).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from translator.api.disconnect import CallerGone
from translator.contract.errors import ClientClosed, TranslationError

# As LibreTranslate answers: browser pages of other origins may call the API (with a key, when keys
# are on; no cookies are involved).
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type, Authorization, Priority, X-Deadline-Ms",
}


@dataclass(frozen=True)
class ErrorShape:
    """How one API answers the domain error."""

    # The native API's field names as this API's parameters, in a message: (pattern, replacement).
    fields: tuple[tuple[str, str], ...] = ()
    # The keys the message goes under; the first is the API's own.
    message_keys: tuple[str, ...] = ("error",)
    detail: bool = True  # the error's detail (`field`, `limit`, pydantic's list) beside the message
    statuses: Mapping[int, int] = field(default_factory=dict)  # a status as this API answers it
    headers: Mapping[str, str] = field(default_factory=dict)  # on every answer of this API

    def body(self, native: dict[str, Any]) -> dict[str, Any]:
        """A native error body (`{"error": ..., ...}`) in this API's shape."""
        message = str(native.get("error", ""))
        for pattern, replacement in self.fields:
            message = re.sub(pattern, replacement, message)
        out = {key: message for key in self.message_keys}
        if self.detail:
            out.update((k, v) for k, v in native.items() if k != "error")
        return out

    def status(self, status: int) -> int:
        return self.statuses.get(status, status)

    def response(self, exc: TranslationError) -> Any:
        from starlette.responses import JSONResponse

        headers = {**exc.headers(), **self.headers}
        return JSONResponse(self.body(exc.body()), status_code=self.status(exc.status), headers=headers)


NATIVE = ErrorShape()
LIBRETRANSLATE = ErrorShape(
    # `payload.glossaryId` before `payload.glossary`, which it starts with.
    fields=(
        (re.escape("payload.records"), "q"),
        (re.escape("payload.glossaryId"), "glossary_id"),
        (re.escape("payload.glossary"), "glossary"),
        (re.escape("payload.translationMemory"), "translation_memory"),
    ),
    detail=False,
    headers=CORS,
)
DEEPL = ErrorShape(
    # `payload.records.3.text` is `text.3`.
    fields=(
        (r"payload\.records(\.\d+)?(\.text)?", r"text\1"),
        (r"(?:payload\.)?\bglossaryId\b", "glossary_id"),
        (r"(?:payload\.)?\btranslationMemory\b", "translation_memory_id"),
    ),
    # "error" too: the edge passes an error body on as it is when it has one
    # (translator/api/json_errors.py).
    message_keys=("message", "error"),
    detail=False,
    statuses={422: 400, 500: 400, 401: 403},
)


def endpoint(
    shape: ErrorShape,
    work: Callable[[Any], Awaitable[Any]],
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Callable[[Any], Awaitable[Any]]:
    """A route's endpoint: `work(request)`'s answer (a Response as it is, anything else as JSON with
    `status`), its `TranslationError` in the API's shape, a caller gone as 499 (nobody reads it)."""
    from starlette.responses import JSONResponse, Response

    answer_headers = {**shape.headers, **(headers or {})}

    async def run(request: Any) -> Any:
        try:
            answer = await work(request)
        except TranslationError as exc:
            return shape.response(exc)
        except CallerGone:
            return shape.response(ClientClosed("the client closed the connection"))
        if isinstance(answer, Response):
            return answer
        return JSONResponse(answer, status_code=status, headers=answer_headers)

    return run
