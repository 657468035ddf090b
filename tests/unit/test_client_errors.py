"""The log line of a client's mistake (translator/api/client_errors.py), on log records shaped as
BentoML's `log_exception` makes them; tests/e2e/test_api.py reads a live server's log."""

from __future__ import annotations

import logging
import sys
from http import HTTPStatus

import pytest
from bentoml.exceptions import BentoMLException, InvalidArgument
from pydantic import BaseModel, ConfigDict, ValidationError

from translator.api.client_errors import ClientErrorLog, client_error_line, install
from translator.contract.schemas import Payload

pytestmark = pytest.mark.pure

MARKER = "zq7mark"  # short: pydantic cuts long inputs short in its message


class Input(BaseModel):
    """As BentoML wraps the API's argument: the body's top-level key is `payload`."""

    model_config = ConfigDict(extra="forbid")
    payload: Payload


def record_of(exc: BaseException, path: str = "/translation") -> logging.LogRecord:
    try:
        raise exc
    except BaseException:
        exc_info = sys.exc_info()
    message, args = "Exception on %s [%s]", (path, "POST")
    return logging.LogRecord("bentoml._internal.server.http_app", logging.ERROR, __file__, 1, message, args, exc_info)


def refusal(body: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Input.model_validate(body)
    return caught.value


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"payload": {"fromLang": MARKER, "toLang": "de"}}, "POST /translation: 400 payload.records (missing)"),
        ({MARKER: 1}, "POST /translation: 400 payload (missing), request body (extra_forbidden)"),
        (
            {"payload": {"fromLang": "en", "toLang": "de", "records": [], MARKER: MARKER}},
            "POST /translation: 400 payload (extra_forbidden)",  # the unknown key is the client's text
        ),
        (
            {"payload": {"fromLang": "en", "toLang": "de", "records": [{"text": MARKER}]}},
            "POST /translation: 400 payload.records.0.id (missing)",
        ),
    ],
)
def test_a_refused_input_is_one_info_line_naming_field_and_kind_without_content(body, expected):
    record = record_of(refusal(body))
    assert MARKER in str(record.exc_info[1])  # what BentoML's traceback would have printed
    assert ClientErrorLog().filter(record) is True
    assert record.levelno == logging.INFO and record.exc_info is None and record.exc_text is None
    assert record.getMessage() == expected
    assert MARKER not in logging.Formatter().format(record)


def test_many_problems_are_counted_not_listed():
    body = {"payload": {"fromLang": "en", "toLang": "de", "records": [{"text": MARKER}] * 8}}
    line = client_error_line(record_of(refusal(body)))
    assert line is not None and line.endswith("and 3 more") and line.count("(missing)") == 5


def test_bentomls_own_4xx_names_its_kind_only():
    exc = BentoMLException(f"cannot parse {MARKER}", error_code=HTTPStatus.UNSUPPORTED_MEDIA_TYPE)
    assert client_error_line(record_of(exc)) == "POST /translation: 415 BentoMLException"
    assert client_error_line(record_of(InvalidArgument(MARKER))) == "POST /translation: 400 InvalidArgument"


@pytest.mark.parametrize(
    "exc", [RuntimeError("engine failed"), BentoMLException("boom", error_code=HTTPStatus.INTERNAL_SERVER_ERROR)]
)
def test_server_errors_keep_their_traceback(exc):
    record = record_of(exc)
    assert ClientErrorLog().filter(record) is True
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert record.getMessage() == "Exception on /translation [POST]"


def test_install_adds_the_filter_once():
    logger = logging.getLogger("test.client_errors")
    install(logger.name)
    install(logger.name)
    assert sum(isinstance(f, ClientErrorLog) for f in logger.filters) == 1
