from __future__ import annotations

import asyncio
import json

from translator.middleware import EdgeMiddleware, error_body


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


def run_app(middleware: EdgeMiddleware, body: bytes, headers=()):
    sent = []
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)] or [b""]

    async def receive():
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/translation", "headers": list(headers)}
    asyncio.run(middleware(scope, receive, send))
    status = sent[0]["status"]
    payload = b"".join(m.get("body", b"") for m in sent[1:])
    return status, dict(sent[0]["headers"]), payload


async def echo_app(scope, receive, send):
    message = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": message["body"]})


async def failing_app(scope, receive, send):
    await receive()
    await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'[{"error": "busy"}]'})


def test_body_over_the_limit_is_413_without_reaching_the_app():
    status, _, payload = run_app(EdgeMiddleware(echo_app, max_body_bytes=2500), b"x" * 3000)
    assert status == 413
    assert json.loads(payload) == {"error": "request body in bytes exceeds the limit of 2500", "limit": 2500}


def test_declared_content_length_over_the_limit_is_413():
    status, _, _ = run_app(EdgeMiddleware(echo_app, max_body_bytes=10), b"", headers=[(b"content-length", b"11")])
    assert status == 413


def test_body_under_the_limit_reaches_the_app_whole():
    status, _, payload = run_app(EdgeMiddleware(echo_app, max_body_bytes=5000), b"y" * 4321)
    assert (status, payload) == (200, b"y" * 4321)


def test_error_responses_are_rewritten_with_retry_after():
    status, headers, payload = run_app(EdgeMiddleware(failing_app), b"{}")
    assert status == 503
    assert json.loads(payload) == {"error": "busy"}
    assert headers[b"retry-after"] == b"5"
    assert int(headers[b"content-length"]) == len(payload)
