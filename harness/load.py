"""The one closed-loop load generator, with the check of every answer against what was asked."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

CLIENT_TIMEOUT_S = 600.0
LIBRETRANSLATE_PATH = "/libretranslate/translate"
DEEPL_PATH = "/deepl/v2/translate"


@dataclass(frozen=True)
class Job:
    """One request and, where known, the exact texts it must come back with."""

    body: dict
    expected: tuple[str, ...] | None = None
    headers: dict[str, str] | None = None  # e.g. {"Priority": "u=7"} for bulk work
    path: str = "/translation"  # or the LibreTranslate API's (`libretranslate_job`)

    @property
    def ids(self) -> list[str]:
        if self.path == LIBRETRANSLATE_PATH:  # answers are positional
            return [str(i) for i in range(len(self.body["q"]))]
        if self.path == DEEPL_PATH:
            return [str(i) for i in range(len(self.body["text"]))]
        return [record["id"] for record in self.body["payload"]["records"]]


def libretranslate_job(native: Job) -> Job:
    """The same request as a LibreTranslate client (Weblate) sends it: a list `q` of texts."""
    payload = native.body["payload"]
    body = {"q": [r["text"] for r in payload["records"]], "source": payload["fromLang"], "target": payload["toLang"]}
    return Job(body, native.expected, native.headers, LIBRETRANSLATE_PATH)


def deepl_job(native: Job) -> Job:
    """The same request as DeepL's clients (Weblate's DeepL machinery) send it: a list `text`."""
    payload = native.body["payload"]
    body = {
        "text": [r["text"] for r in payload["records"]],
        "source_lang": payload["fromLang"].upper(),
        "target_lang": payload["toLang"].upper(),
    }
    return Job(body, native.expected, native.headers, DEEPL_PATH)


def job(source: str, target: str, texts: Iterable[str], expected: Iterable[str] | None = None, prefix: str = "") -> Job:
    """A request of one record per text, ids `prefix0`, `prefix1`, ..."""
    records = [{"id": f"{prefix}{i}", "text": text} for i, text in enumerate(texts)]
    body = {"payload": {"fromLang": source, "toLang": target, "records": records}}
    return Job(body, None if expected is None else tuple(expected))


def check_answer(job: Job, status: int, data: Any) -> tuple[str, list[str] | None]:
    """("ok", the output texts), or (what is wrong, None): not a 200, not the response shape, ids
    missing, duplicated or out of order, or texts other than the expected ones."""
    if status != 200:
        return f"HTTP {status}", None
    try:
        if job.path == LIBRETRANSLATE_PATH:
            texts = list(data["translatedText"])
            ids = [str(i) for i in range(len(texts))]
        elif job.path == DEEPL_PATH:
            texts = [translation["text"] for translation in data["translations"]]
            ids = [str(i) for i in range(len(texts))]
        else:
            result = data["result"]
            ids = [record["id"] for record in result]
            texts = [record["text"] for record in result]
    except (KeyError, TypeError):
        return "bad body", None
    if ids != job.ids:
        return "bad ids", None
    if job.expected is not None and tuple(texts) != job.expected:
        return "wrong text", None
    return "ok", texts


@dataclass
class Outcome:
    kind: str  # "ok", or what went wrong: "HTTP 503", "bad ids", "wrong text", "timeout", ...
    status: int  # 0 when no HTTP answer came
    started: float  # time.monotonic()
    seconds: float
    data: Any = None  # the answer's JSON, or its text when it is not JSON
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    texts: list[str] | None = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    @property
    def answered(self) -> float:
        return self.started + self.seconds

    def detail(self) -> str:
        return f"{self.kind}: {str(self.data)[:300]}"


@dataclass
class LoadResult:
    started: float
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> int:
        return sum(1 for o in self.outcomes if not o.ok)

    @property
    def kinds(self) -> Counter[str]:
        return Counter(o.kind for o in self.outcomes)

    @property
    def statuses(self) -> Counter[int]:
        return Counter(o.status for o in self.outcomes)

    @property
    def latencies_s(self) -> list[float]:
        """Of the successful requests."""
        return [o.seconds for o in self.outcomes if o.ok]

    @property
    def texts(self) -> list[str]:
        return [text for o in self.outcomes if o.texts is not None for text in o.texts]

    @property
    def sentences(self) -> int:
        return len(self.texts)

    @property
    def refusals(self) -> list[Outcome]:
        """429 and 503: the server said no, and when to come back."""
        return [o for o in self.outcomes if o.status in (429, 503)]

    @property
    def first_failure(self) -> str | None:
        return next((o.detail() for o in self.outcomes if not o.ok), None)

    @property
    def seconds(self) -> float:
        """From the start to the last answer."""
        return max([self.started, *(o.answered for o in self.outcomes)]) - self.started or 1e-9


async def closed_loop(
    url: str,
    jobs: Iterable[Job],
    concurrency: int,
    seconds: float | None = None,
    timeout: float = CLIENT_TIMEOUT_S,
) -> LoadResult:
    """`concurrency` clients, each sending its next job as soon as its previous one is answered,
    until `jobs` runs out or `seconds` have passed (the requests then in flight are awaited and
    count). `url` is the server's base URL."""
    iterator = iter(jobs)
    result = LoadResult(time.monotonic())
    deadline = None if seconds is None else result.started + seconds
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout), connector=connector) as session:

        async def client() -> None:
            while deadline is None or time.monotonic() < deadline:
                item = next(iterator, None)
                if item is None:
                    return
                result.outcomes.append(await _send(session, f"{url}{item.path}", item))

        await asyncio.gather(*(client() for _ in range(concurrency)))
    return result


def run_load(
    url: str, jobs: Iterable[Job], concurrency: int, seconds: float | None = None, timeout: float = CLIENT_TIMEOUT_S
) -> LoadResult:
    return asyncio.run(closed_loop(url, jobs, concurrency, seconds, timeout))


async def open_loop(
    url: str, jobs: Iterable[Job], rate_per_s: float, seconds: float, timeout: float = CLIENT_TIMEOUT_S
) -> LoadResult:
    """Jobs sent at `rate_per_s` for `seconds` whatever the answers (overload); all are awaited."""
    iterator = iter(jobs)
    result = LoadResult(time.monotonic())
    # A connection for every request in flight: the server, not the client, must do the refusing.
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout), connector=connector) as session:

        async def one(item: Job) -> None:
            result.outcomes.append(await _send(session, f"{url}{item.path}", item))

        tasks = []
        for k in range(int(rate_per_s * seconds)):
            delay = result.started + k / rate_per_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            item = next(iterator, None)
            if item is None:
                break
            tasks.append(asyncio.ensure_future(one(item)))
        await asyncio.gather(*tasks)
    return result


async def _send(session: aiohttp.ClientSession, url: str, item: Job) -> Outcome:
    started = time.monotonic()
    try:
        async with session.post(url, json=item.body, headers=item.headers) as response:
            raw = await response.read()
            status, headers = response.status, {k.lower(): v for k, v in response.headers.items()}
    except TimeoutError:
        return Outcome("timeout", 0, started, time.monotonic() - started)
    except (aiohttp.ClientError, OSError) as exc:
        return Outcome(type(exc).__name__, 0, started, time.monotonic() - started, data=str(exc))
    seconds = time.monotonic() - started
    try:
        data: Any = json.loads(raw)
    except ValueError:
        data = raw.decode("utf-8", "replace")
    kind, texts = check_answer(item, status, data)
    return Outcome(kind, status, started, seconds, data, headers, texts)
