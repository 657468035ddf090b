"""The lingering close after an early refusal (translator/api/refusal.py): what is discarded, and
for how long. The refusals themselves, under the middleware and uvicorn, are in test_middleware.py."""

from __future__ import annotations

import asyncio

import pytest

from tests import virtual_time
from translator.api.refusal import discard_body

pytestmark = pytest.mark.pure


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

    async def timed(receive, **bounds) -> tuple[int, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        discarded = await discard_body(receive, max_bytes=10**9, **bounds)
        return discarded, loop.time() - started

    # On a virtual clock: each bound holds to the second, however busy the machine, and a bound
    # not kept shows as the hour the silent client sleeps, or as the run's own timeout.
    discarded, seconds = virtual_time.run(timed(slow_receive, max_seconds=0.5, idle_seconds=10))
    assert seconds == pytest.approx(0.5) and 9 <= discarded <= 10  # a byte every 0.05 s
    assert virtual_time.run(timed(silent_receive, max_seconds=60, idle_seconds=0.3)) == (0, pytest.approx(0.3))


def test_discarding_stops_when_the_client_goes():
    messages = [
        {"type": "http.request", "body": b"abc", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive():
        return messages.pop(0)

    assert asyncio.run(discard_body(receive)) == 3
