"""The lingering close after an early refusal (translator/api/refusal.py): what is discarded, and
for how long. The refusals themselves, under the middleware and uvicorn, are in test_middleware.py."""

from __future__ import annotations

import asyncio
import time

from translator.api.refusal import discard_body


def test_discarding_is_bounded_in_bytes():
    async def endless():
        return {"type": "http.request", "body": b"z" * 1000, "more_body": True}

    discarded = asyncio.run(discard_body(endless, max_bytes=50_000, max_seconds=60, idle_seconds=60))
    assert 50_000 <= discarded <= 51_000


def test_discarding_is_bounded_in_time_and_by_a_silent_client():
    async def slow_receive():
        await asyncio.sleep(0.05)
        return {"type": "http.request", "body": b"z", "more_body": True}

    async def silent_receive():
        await asyncio.sleep(3600)

    started = time.monotonic()
    asyncio.run(discard_body(slow_receive, max_bytes=10**9, max_seconds=0.5, idle_seconds=10))
    assert 0.4 < time.monotonic() - started < 2
    started = time.monotonic()
    assert asyncio.run(discard_body(silent_receive, max_bytes=10**9, max_seconds=60, idle_seconds=0.3)) == 0
    assert 0.2 < time.monotonic() - started < 2


def test_discarding_stops_when_the_client_goes():
    messages = [
        {"type": "http.request", "body": b"abc", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive():
        return messages.pop(0)

    assert asyncio.run(discard_body(receive)) == 3
