"""BentoML's and Starlette's error answers rewritten into JSON objects that name the problem
(translator/api/json_errors.py); the rewriting in the middleware is tested in test_middleware.py."""

from __future__ import annotations

import json

import pytest

from translator.api.json_errors import error_body

pytestmark = pytest.mark.pure


def test_bentoml_list_body_becomes_an_object():
    assert error_body(415, b'[{"error": "unsupported media type"}]') == {"error": "unsupported media type"}


def test_validation_error_names_the_field():
    raw = json.dumps(
        {
            "error": "1 validation error for Input",
            "detail": [{"type": "missing", "loc": ["payload", "records", 0, "id"], "msg": "Field required"}],
        }
    ).encode()
    body = error_body(400, raw)
    assert body["error"] == "payload.records.0.id: Field required"
    assert body["detail"][0]["loc"] == ["payload", "records", 0, "id"]


def test_invalid_json_message():
    raw = json.dumps(
        {
            "error": "1 validation error",
            "detail": [
                {"type": "json_invalid", "loc": [], "msg": "Invalid JSON", "ctx": {"error": "EOF while parsing"}}
            ],
        }
    ).encode()
    assert error_body(400, raw)["error"] == "request body is not valid JSON: EOF while parsing"


def test_plain_text_and_empty_bodies():
    assert error_body(404, b"Not Found") == {"error": "Not Found"}
    assert error_body(405, b"") == {"error": "Method Not Allowed"}
    assert error_body(500, b"boom") == {"error": "boom"}
