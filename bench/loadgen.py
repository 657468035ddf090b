"""Load: closed loops (`concurrency` clients, each sending its next request as soon as the previous
one is answered, for a fixed time; then the requests still in flight are awaited and counted),
several of them at once with their own headers (interactive beside bulk), or an open loop
(requests at a fixed rate whatever the answers: overload).

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
    # Refusals (429, 503): how long each took to come back, and how many lacked a Retry-After.
    refusal_latencies_s: list[float] = field(default_factory=list)
    refusals_without_retry_after: int = 0

    @property
    def seconds(self) -> float:
        return max(self.last_answer - self.started, 1e-9)


REFUSALS = ("429", "503")


async def _send(
    session: aiohttp.ClientSession, url: str, request: Request, headers: dict[str, str] | None = None
) -> tuple[str, list[str] | None, str]:
    """(outcome, output texts when successful, detail); a refusal's detail is its Retry-After."""
    try:
        async with session.post(url, json=request.body(), headers=headers) as response:
            body = await response.read()
            if str(response.status) in REFUSALS:
                return str(response.status), None, response.headers.get("Retry-After", "")
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


def _record(result: LoadResult, sent: float, answered: float, outcome: str, texts: list[str] | None, detail: str):
    result.requests += 1
    result.outcomes[outcome] += 1
    result.last_answer = max(result.last_answer, answered)
    if texts is None:
        result.failed += 1
        if outcome in REFUSALS:
            result.refusal_latencies_s.append(answered - sent)
            result.refusals_without_retry_after += not detail.isdigit()
            detail = f"Retry-After {detail or 'missing'}"
        result.first_failure = result.first_failure or f"{outcome}: {detail}"
    else:
        result.latencies_s.append(answered - sent)
        result.sentences += len(texts)
        result.texts.extend(texts)


@dataclass
class Clients:
    """One group of closed-loop clients: their requests, how many, and the headers they send."""

    stream: Iterator[Request]
    concurrency: int
    headers: dict[str, str] | None = None
    result: LoadResult | None = None


def _session(connections: int) -> aiohttp.ClientSession:
    timeout = aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)
    return aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=connections))


async def _closed_loops(url: str, groups: list[Clients], duration_s: float) -> None:
    async with _session(sum(g.concurrency for g in groups)) as session:
        deadline = time.monotonic() + duration_s
        for group in groups:
            if group.result is not None:
                group.result.started = group.result.last_answer = time.monotonic()

        async def client(group: Clients) -> None:
            while time.monotonic() < deadline:
                request = next(group.stream)
                sent = time.monotonic()
                outcome, texts, detail = await _send(session, url, request, group.headers)
                if group.result is not None:
                    _record(group.result, sent, time.monotonic(), outcome, texts, detail)

        await asyncio.gather(*(client(g) for g in groups for _ in range(g.concurrency)))


def warm_up(base_url: str, stream: Iterator[Request], concurrency: int, seconds: float) -> None:
    """The same closed loop, not measured; returns when the requests in flight are answered."""
    asyncio.run(_closed_loops(f"{base_url}/translation", [Clients(stream, concurrency)], seconds))


def measure(base_url: str, stream: Iterator[Request], concurrency: int, records: int, seconds: float) -> LoadResult:
    """Send for `seconds`, then await the requests in flight; they count."""
    result = LoadResult(concurrency=concurrency, records=records)
    asyncio.run(_closed_loops(f"{base_url}/translation", [Clients(stream, concurrency, result=result)], seconds))
    return result


def measure_groups(base_url: str, groups: list[Clients], seconds: float) -> None:
    """Several closed loops at once (each group's `result` filled in), e.g. interactive beside bulk."""
    asyncio.run(_closed_loops(f"{base_url}/translation", groups, seconds))


def measure_open_loop(
    base_url: str, stream: Iterator[Request], rate_per_s: float, records: int, seconds: float
) -> LoadResult:
    """Requests sent at `rate_per_s` for `seconds` whatever the answers (overload), all awaited."""
    result = LoadResult(concurrency=0, records=records)

    async def run() -> None:
        url = f"{base_url}/translation"
        # Enough connections for every request in flight: the server, not the client, must refuse.
        async with _session(int(rate_per_s * seconds) + 1) as session:
            result.started = result.last_answer = time.monotonic()
            tasks = []

            async def one(request: Request) -> None:
                sent = time.monotonic()
                outcome, texts, detail = await _send(session, url, request)
                _record(result, sent, time.monotonic(), outcome, texts, detail)

            for k in range(int(rate_per_s * seconds)):
                delay = result.started + k / rate_per_s - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.ensure_future(one(next(stream))))
            await asyncio.gather(*tasks)

    asyncio.run(run())
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
