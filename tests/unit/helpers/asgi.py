"""An ASGI app driven without a server: a body sent in chunks through a middleware, and the app
behind it that echoes the body back."""

from __future__ import annotations

import asyncio

from translator.api.middleware import EdgeMiddleware


def run_app(middleware: EdgeMiddleware, body: bytes, headers=(), path: str = "/translation"):
    sent = []
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)] or [b""]

    async def receive():
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": list(headers)}
    asyncio.run(middleware(scope, receive, send))
    status = sent[0]["status"]
    payload = b"".join(m.get("body", b"") for m in sent[1:])
    return status, dict(sent[0]["headers"]), payload


async def echo_app(scope, receive, send):
    message = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": message["body"]})
