"""Closed-loop load: `concurrency` clients, each sending its next request as soon as the previous
one is answered, for a fixed time; then the requests still in flight are awaited and counted.

A request fails when its status is not 200, when it times out or the connection fails, or when
its answer does not carry every record id exactly once, in request order.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import aiohttp

from bench.workload import Request

CLIENT_TIMEOUT_S = 600


@dataclass
class LoadResult:
    concurrency: int
    records: int
    started: float = 0.0
    last_answer: float = 0.0
    requests: int = 0
    failed: int = 0
    outcomes: Counter = field(default_factory=Counter)  # "200", "503", "timeout", "bad ids", ...
    latencies_s: list[float] = field(default_factory=list)  # successful requests only
    sentences: int = 0
    texts: list[str] = field(default_factory=list)
    first_failure: str | None = None

    @property
    def seconds(self) -> float:
        return max(self.last_answer - self.started, 1e-9)


async def _send(session: aiohttp.ClientSession, url: str, request: Request) -> tuple[str, list[str] | None, str]:
    """(outcome, output texts when successful, detail)."""
    try:
        async with session.post(url, json=request.body()) as response:
            body = await response.read()
            if response.status != 200:
                return str(response.status), None, body[:300].decode(errors="replace")
            try:
                result = (await response.json(content_type=None))["result"]
                ids = [record["id"] for record in result]
                texts = [record["text"] for record in result]
            except (ValueError, KeyError, TypeError) as exc:
                return "bad body", None, f"{type(exc).__name__}: {body[:300]!r}"
            if ids != [str(i) for i in range(len(request.texts))]:
                return "bad ids", None, f"ids {ids[:20]} for {len(request.texts)} records"
            return "200", texts, ""
    except TimeoutError:
        return "timeout", None, f"no answer in {CLIENT_TIMEOUT_S}s"
    except (aiohttp.ClientError, OSError) as exc:
        return type(exc).__name__, None, str(exc)
    except Exception as exc:  # noqa: BLE001 - one request's failure must not stop the load
        return f"client {type(exc).__name__}", None, repr(exc)


async def _closed_loop(
    url: str, stream: Iterator[Request], concurrency: int, duration_s: float, result: LoadResult | None
) -> None:
    timeout = aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        deadline = time.monotonic() + duration_s
        if result is not None:
            result.started = result.last_answer = time.monotonic()

        async def client() -> None:
            while time.monotonic() < deadline:
                request = next(stream)
                sent = time.monotonic()
                outcome, texts, detail = await _send(session, url, request)
                answered = time.monotonic()
                if result is None:
                    continue
                result.requests += 1
                result.outcomes[outcome] += 1
                result.last_answer = max(result.last_answer, answered)
                if texts is None:
                    result.failed += 1
                    result.first_failure = result.first_failure or f"{outcome}: {detail}"
                else:
                    result.latencies_s.append(answered - sent)
                    result.sentences += len(texts)
                    result.texts.extend(texts)

        await asyncio.gather(*(client() for _ in range(concurrency)))


def warm_up(base_url: str, stream: Iterator[Request], concurrency: int, seconds: float) -> None:
    """The same closed loop, not measured; returns when the requests in flight are answered."""
    asyncio.run(_closed_loop(f"{base_url}/translation", stream, concurrency, seconds, None))


def measure(base_url: str, stream: Iterator[Request], concurrency: int, records: int, seconds: float) -> LoadResult:
    """Send for `seconds`, then await the requests in flight; they count."""
    result = LoadResult(concurrency=concurrency, records=records)
    asyncio.run(_closed_loop(f"{base_url}/translation", stream, concurrency, seconds, result))
    return result


_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)")


def histogram_totals(exposition: str, metric: str) -> tuple[float, float]:
    """(sum, count) of a Prometheus histogram, summed over label sets. Matches the metric name with
    or without a namespace prefix, as BentoML may add one."""
    total = count = 0.0
    for line in exposition.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        name = match["name"]
        if name == f"{metric}_sum" or name.endswith(f"_{metric}_sum"):
            total += float(match["value"])
        elif name == f"{metric}_count" or name.endswith(f"_{metric}_count"):
            count += float(match["value"])
    return total, count
