"""What the server's log says of a client's mistake: one INFO line naming the route, the status,
the fields and the kinds of problem, never the request's content.

BentoML 1.4 logs a request its input model refuses (a missing field, a body that is not JSON) as
`[ERROR] Exception on /translation [POST]` with the pydantic traceback, whose text quotes the
request (`input_value={'fromLang': 'en', ...}`): client text in the logs, and log-based alerts
firing on clients' errors. It answers the client well (a 400, rewritten by
translator/api/json_errors.py); only its log line is wrong. That line comes from the logger of
BentoML's HTTP app module, which is not public API: tests/e2e/test_api.py pins it on a running
server (bad inputs, then the log read back). Errors of the server (5xx) keep their traceback.
"""

from __future__ import annotations

import logging
from typing import Any

# The logger BentoML's `log_exception` writes to (bentoml/_internal/server/http_app.py).
BENTOML_HTTP_LOGGER = "bentoml._internal.server.http_app"
# At most this many problems named in one line (a body can hold thousands).
MAX_NAMED = 5


class ClientErrorLog(logging.Filter):
    """Rewrites BentoML's log record of a request refused for its input into one line at INFO,
    with no traceback; any other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        line = client_error_line(record)
        if line is not None:
            record.msg, record.args = line, None
            record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def install(logger_name: str = BENTOML_HTTP_LOGGER) -> None:
    """Once per process (an API worker), after BentoML has configured logging."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, ClientErrorLog) for f in logger.filters):
        logger.addFilter(ClientErrorLog())


def client_error_line(record: logging.LogRecord) -> str | None:
    """`POST /translation: 400 payload.records (missing)` for a record whose exception is a
    client's mistake; None for anything else."""
    exc = record.exc_info[1] if record.exc_info else None
    if exc is None:
        return None
    status, problems = _client_problem(exc)
    if status is None:
        return None
    path, method = _route(record)
    return f"{method} {path}: {status} {problems}"


def _client_problem(exc: BaseException) -> tuple[int | None, str]:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        named = [f"{_field(error)} ({error.get('type', 'invalid')})" for error in errors[:MAX_NAMED]]
        more = f" and {len(errors) - MAX_NAMED} more" if len(errors) > MAX_NAMED else ""
        return 400, ", ".join(named) + more
    status = _bentoml_status(exc)
    if status is not None and 400 <= status < 500:
        return status, type(exc).__name__  # its message may quote the request: the kind only
    return None, ""


def _field(error: Any) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    if error.get("type") == "extra_forbidden" and loc:
        loc = loc[:-1]  # the unknown key's own name is the client's text
    return ".".join(loc) or "request body"


def _bentoml_status(exc: BaseException) -> int | None:
    code = getattr(exc, "error_code", None)  # BentoMLException's HTTPStatus
    try:
        return int(code) if code is not None else None
    except (TypeError, ValueError):
        return None


def _route(record: logging.LogRecord) -> tuple[str, str]:
    # BentoML's arguments are the request's path and method; anything else is not quoted.
    args = record.args if isinstance(record.args, tuple) else ()
    path = str(args[0]) if len(args) >= 1 else "?"
    method = str(args[1]) if len(args) >= 2 else "?"
    return path[:200], method[:10]
