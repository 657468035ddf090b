"""Admission on a running server: the configured total holds however connections fall on the
workers, the engine's health probe is not starved by calls waiting in the engine's queue, and
clients trickling their bodies hold no admission slot."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest
import yaml

from harness.load import Job, LoadResult, closed_loop
from harness.servers import ROOT, register, start_server
from tests.e2e.helpers import config_with, numbered_jobs

pytestmark = [pytest.mark.server, pytest.mark.slow]


def configured_limit() -> int:
    config = yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())
    return config["services"]["Translation"]["translation"]["admission"]["max_concurrency"]


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
    result, ready = asyncio.run(load_watching_readiness(server.url, numbered_jobs(clients * 4, 4), clients))
    assert result.kinds == {"ok": clients * 4}, (result.kinds, result.first_failure)
    assert ready and set(ready) == {200}, ready
    print(f"\n{clients} clients x 4 requests under a limit of {limit}: all 200 in {time.monotonic() - started:.1f}s")


def test_above_the_total_the_excess_gets_429_with_retry_after(server):
    limit = configured_limit()
    result, ready = asyncio.run(load_watching_readiness(server.url, numbered_jobs(limit + 150, 16), limit + 150))
    statuses = result.statuses
    assert statuses[200] > 0 and statuses[429] > 0, (statuses, result.first_failure)
    # 406 x 16 sentences may also be more than the engine can answer within max_latency_ms: those
    # it refuses itself (503), also with Retry-After. Nothing else.
    assert set(statuses) <= {200, 429, 503}, (statuses, result.first_failure)
    assert all(o.headers.get("retry-after", "").isdigit() for o in result.refusals)
    assert set(ready) == {200}, ready


TRICKLING_CLIENTS = 40
SMALL_ADMISSION = 16


async def trickle(url: str, stop: asyncio.Event, opened: list[int]) -> None:
    """A client that sends its headers and then one byte of its body a second, until stopped."""
    address = urlsplit(url)
    reader, writer = await asyncio.open_connection(address.hostname, address.port)
    body_length = 1000
    writer.write(
        f"POST /translation HTTP/1.1\r\nHost: {address.netloc}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {body_length}\r\n\r\n{{".encode()
    )
    opened.append(1)
    try:
        for _ in range(body_length - 2):
            await writer.drain()
            try:
                await asyncio.wait_for(stop.wait(), 1.0)
                return
            except TimeoutError:
                writer.write(b" ")
    finally:
        writer.close()


def test_clients_trickling_their_bodies_do_not_starve_admission(fixture_model: Path, tmp_path: Path) -> None:
    # Before: the slot was taken before the body was read, so 40 such clients under an admission
    # of 16 got every normal request meanwhile refused with 429.
    config = config_with(
        tmp_path, lambda s: s["Translation"]["translation"]["admission"].update(max_concurrency=SMALL_ADMISSION)
    )
    home = tmp_path / "home"
    home.mkdir()
    srv = start_server(home, register(fixture_model, home), tmp_path / "server.log", config=config)

    async def scenario() -> LoadResult:
        stop = asyncio.Event()
        opened: list[int] = []
        slow = [asyncio.ensure_future(trickle(srv.url, stop, opened)) for _ in range(TRICKLING_CLIENTS)]
        try:
            while len(opened) < TRICKLING_CLIENTS:
                await asyncio.sleep(0.1)
            await asyncio.sleep(2)  # every slow request has reached the middleware
            return await closed_loop(srv.url, numbered_jobs(40, 2), 4, timeout=120)
        finally:
            stop.set()
            await asyncio.gather(*slow)

    try:
        result = asyncio.run(scenario())
        assert result.kinds == {"ok": 40}, (result.kinds, result.first_failure, srv.log()[-2000:])
    finally:
        srv.stop()
