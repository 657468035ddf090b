"""Domain errors and the one table that maps them to HTTP answers.

Every error a client can see is a JSON object `{"error": <message>, ...}` whose message names the
field and the problem. BentoML's own error bodies (lists, generic validation titles) are rewritten
into the same shape by `translator.api.json_errors`, using `validation_message` below.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

# Seconds a client should wait before retrying an overloaded or unavailable service.
RETRY_AFTER_SECONDS = 5


class TranslationError(Exception):
    status = 500

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def body(self) -> dict[str, Any]:
        return {"error": self.message, **self.detail}

    def headers(self) -> dict[str, str]:
        return {}


class InvalidRequest(TranslationError):
    status = 400


class UnsupportedLanguage(InvalidRequest):
    def __init__(self, field: str, code: str) -> None:
        super().__init__(
            f"{field}: unsupported language code {code!r}; GET /languages lists the supported codes",
            field=field,
        )


class Unauthorized(TranslationError):
    """No API key where the server requires one."""

    status = 401

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="translation"'}


class Forbidden(TranslationError):
    """An API key the server does not accept."""

    status = 403


class PayloadTooLarge(TranslationError):
    status = 413

    def __init__(self, what: str, limit: int, got: int | None = None, field: str | None = None) -> None:
        got_text = f" (got {got})" if got is not None else ""
        detail: dict[str, Any] = {"limit": limit} if field is None else {"limit": limit, "field": field}
        super().__init__(f"{what} exceeds the limit of {limit}{got_text}", **detail)


class RequestTimeout(TranslationError):
    """The request body did not arrive in time: a client trickling bytes is refused and let go."""

    status = 408

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"request body did not arrive within {limit_s:g} s", limit_s=limit_s)


class TranslationIncomplete(TranslationError):
    """A sentence whose translation does not end within the model's limit, even in parts:
    the request fails rather than return a translation cut short."""

    status = 422


class Unavailable(TranslationError):
    """The engine cannot answer now (overloaded, starting, restarting): the client may retry."""

    status = 503

    def __init__(self, message: str, retry_after_s: float = RETRY_AFTER_SECONDS, **detail: Any) -> None:
        super().__init__(message, **detail)
        self.retry_after_s = max(1, math.ceil(retry_after_s))

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_s)}


class ClientClosed(TranslationError):
    """The client went away before its answer was ready (nginx's 499: only logs ever see it)."""

    status = 499


class GatewayTimeout(TranslationError):
    """The engine did not answer within the time the request had."""

    status = 504


class TranslationFailed(Unavailable):
    """The engine failed as a whole (connection lost, a batch that crashed, an answer of the wrong
    shape): it may answer on a retry."""


# The `kind` of an error that one record causes and that will repeat identically on a retry.
RECORD_FAILED = "record_failed"


class RecordFailed(TranslationError):
    """The engine translated the request but failed on one record's text, alone: retrying sends the
    same text to the same model and fails the same way. So 500 naming the record, and no
    Retry-After: a retry storm of poison records is what a 503 would invite. Bulk jobs set the
    record aside (its `kind` says so) and go on."""

    status = 500

    def __init__(self, message: str, record_id: str, index: int) -> None:
        super().__init__(message, kind=RECORD_FAILED, record=record_id, field=f"payload.records.{index}.text")


def http_response(exc: TranslationError) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers())


def validation_message(errors: Iterable[Mapping[str, Any]]) -> str:
    """One line per pydantic error: `payload.records.0.id: Field required`.

    BentoML wraps the API's arguments in a model of its own, so `loc` starts with the argument
    name (`payload`), which is also the top-level key of the request body: the path is the one the
    client wrote.
    """
    lines = []
    for error in errors:
        loc = ".".join(str(part) for part in error.get("loc", ()) if part != "__root__")
        msg = str(error.get("msg", "invalid value"))
        if error.get("type") == "json_invalid":
            ctx = error.get("ctx") or {}
            lines.append(f"request body is not valid JSON: {ctx.get('error', msg)}")
        elif loc:
            lines.append(f"{loc}: {msg}")
        else:
            lines.append(f"request body: {msg}")
    return "; ".join(lines) or "invalid request"
