"""Admission on a running server: the configured total holds however connections fall on the
workers, and the engine's health probe is not starved by calls waiting in the engine's queue."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import aiohttp
import pytest
import yaml

from harness.corpus import corpus_sentences
from harness.load import Job, LoadResult, closed_loop, job
from harness.servers import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def configured_limit() -> int:
    config = yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())
    return config["services"]["Translation"]["translation"]["admission"]["max_concurrency"]


def jobs(count: int, records: int) -> list[Job]:
    """Distinct en→fr requests (texts numbered, so the engine cannot deduplicate them away)."""
    pool = [s for s in corpus_sentences() if s[:2] == ("en", "fr")]
    return [job("en", "fr", [f"({i}) {pool[(i + k) % len(pool)][2]}" for k in range(records)]) for i in range(count)]


async def load_watching_readiness(url: str, work: list[Job], clients: int) -> tuple[LoadResult, Counter]:
    """The harness's closed loop, with `/readyz` polled twice a second all along."""
    ready: Counter = Counter()
    done = asyncio.Event()

    async def poll() -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            while not done.is_set():
                async with session.get(f"{url}/readyz") as response:
                    ready[response.status] += 1
                await asyncio.sleep(0.5)

    poller = asyncio.ensure_future(poll())
    try:
        result = await closed_loop(url, work, clients, timeout=300)
    finally:
        done.set()
        await poller
    return result, ready


def test_below_the_total_every_request_is_answered_and_readiness_holds(server):
    limit = configured_limit()
    clients = limit - 16  # 240 under the shipped 256: more than one worker's half, and than the pool
    started = time.monotonic()
    result, ready = asyncio.run(load_watching_readiness(server.url, jobs(clients * 4, 4), clients))
    assert result.kinds == {"ok": clients * 4}, (result.kinds, result.first_failure)
    assert ready and set(ready) == {200}, ready
    print(f"\n{clients} clients x 4 requests under a limit of {limit}: all 200 in {time.monotonic() - started:.1f}s")


def test_above_the_total_the_excess_gets_429_with_retry_after(server):
    limit = configured_limit()
    result, ready = asyncio.run(load_watching_readiness(server.url, jobs(limit + 150, 16), limit + 150))
    statuses = result.statuses
    assert statuses[200] > 0 and statuses[429] > 0, (statuses, result.first_failure)
    # 406 x 16 sentences may also be more than the engine can answer within max_latency_ms: those
    # it refuses itself (503), also with Retry-After. Nothing else.
    assert set(statuses) <= {200, 429, 503}, (statuses, result.first_failure)
    assert all(o.headers.get("retry-after", "").isdigit() for o in result.refusals)
    assert set(ready) == {200}, ready
