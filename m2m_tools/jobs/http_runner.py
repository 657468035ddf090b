"""`HttpRunner`: a running service over HTTP, as a client in production would call it: bulk
priority, retries of 429/502/503/504 with backoff honouring `Retry-After`, fewer requests in
flight while the server refuses for being full (`InFlightLimit`), a connection per request so
that requests spread over every replica behind a Kubernetes Service.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from m2m_tools.jobs.runner import RequestRejected, RunnerError, Translated, records_from
from translator.contract.errors import RECORD_FAILED

if TYPE_CHECKING:
    import aiohttp


logger = logging.getLogger(__name__)


RETRY_STATUSES = frozenset({429, 502, 503, 504})


# RFC 9218 urgency 7, the lowest: the service schedules it behind interactive requests.
BULK_PRIORITY = "u=7"


def retry_delay(attempt: int, retry_after: str | None, *, base: float, cap: float, now: float | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based).

    ``Retry-After`` (seconds or an HTTP date) wins when the server sends it; otherwise exponential
    backoff with jitter, so that many clients refused at once do not come back at once.
    """
    if retry_after:
        value = retry_after.strip()
        try:
            return min(cap, max(0.0, float(value)))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            current = now if now is not None else time.time()
            return min(cap, max(0.0, when.timestamp() - current))
        logger.debug("ignoring unparseable Retry-After %r", retry_after)
    return min(cap, base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


class InFlightLimit:
    """At most `limit` requests in flight, `limit` adapting to the server's refusals (AIMD).

    A 429 or a 503 with ``Retry-After`` means the server is healthy but full: the service refuses
    what it predicts it cannot answer within its latency objective. Sending the same number of
    requests again would be refused again, so the limit halves (once per round of requests: the
    refusals of requests sent before the last decrease do not count again) and grows back by one
    per round of successes, up to `maximum`. The job then keeps as many requests in flight as
    the replicas it reaches can answer in time, whatever their number and speed.
    """

    def __init__(self, maximum: int) -> None:
        self.maximum = max(1, maximum)
        self.limit = self.maximum
        self.in_flight = 0
        self.successes = 0
        self._credit = 0.0
        self._decreases = 0
        self._changed = asyncio.Condition()

    async def acquire(self) -> int:
        """Waits for a slot; returns the round (decrease count) the request is sent in."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            return self._decreases

    async def release(self) -> None:
        async with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()

    def succeeded(self) -> None:
        self.successes += 1
        self._credit += 1 / self.limit
        if self._credit >= 1 and self.limit < self.maximum:
            self._credit = 0.0
            self.limit += 1

    def refused(self, sent_in_round: int) -> None:
        if sent_in_round == self._decreases and self.limit > 1:
            self._decreases += 1
            self._credit = 0.0
            self.limit = max(1, self.limit // 2)
            logger.info("the server is full: %d requests in flight at most, for now", self.limit)


class HttpRunner:
    def __init__(
        self,
        url: str,
        *,
        concurrency: int = 8,
        timeout_s: float = 600.0,
        max_retries: int = 8,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        system_name: str | None = None,
        memory: str | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.label = self.url
        # The URL alone cannot tell two checkpoints served at the same address apart: a name given
        # with --system-name goes into the key too.
        self.identity: dict[str, Any] = {"kind": "url", "url": self.url, "name": system_name}
        self.memory = memory
        if memory is not None:
            self.identity["memory"] = memory  # a job without one keeps the key it always had
        self.concurrency = max(1, concurrency)
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.retries = 0
        self._session: aiohttp.ClientSession | None = None
        self._slots: InFlightLimit | None = None

    async def start(self) -> None:
        import aiohttp

        # A fresh connection per request (force_close): a Kubernetes Service balances connections,
        # not requests, so reused ones would pin the job to the replicas it met first. Opening one
        # costs well under a millisecond in a cluster; a request costs seconds of translation.
        connector = aiohttp.TCPConnector(limit=self.concurrency, force_close=True)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            raise_for_status=False,
            headers={"Priority": BULK_PRIORITY},
        )
        self._slots = InFlightLimit(self.concurrency)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def languages(self) -> frozenset[str] | None:
        try:
            body = await self._request("GET", "/languages", None)
        except RequestRejected as exc:
            logger.warning("cannot list the server's languages (%s); not checking them up front", exc)
            return None
        codes = body.get("languages") if isinstance(body, dict) else None
        if not isinstance(codes, list):
            logger.warning("GET %s/languages gave no language list; not checking them up front", self.url)
            return None
        # Every code the server takes (NLLB's `eng_Latn` and `zh-Hans` beside the listed `en`, `zh`).
        accepted = body.get("acceptedCodes")
        if isinstance(accepted, list):
            return frozenset(str(code) for code in [*codes, *accepted])
        # A server from before `acceptedCodes`: its listed codes and the model's own, and nothing is
        # refused up front that it might take (an alias): the server's 400 names what it does not.
        model_codes = body.get("modelCodes")
        if isinstance(model_codes, dict) and set(model_codes.values()) != set(codes):
            return None
        return frozenset(str(code) for code in codes)

    async def translate(self, source: str, target: str, texts: Sequence[str], fmt: str = "text") -> list[Translated]:
        ids = [str(i) for i in range(len(texts))]
        payload: dict[str, Any] = {
            "fromLang": source,
            "toLang": target,
            "records": [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)],
        }
        if fmt != "text":
            payload["format"] = fmt  # a plain corpus's requests stay as they always were
        if self.memory is not None:
            payload["translationMemory"] = self.memory
        body = {"payload": payload}
        answer = await self._request("POST", "/translation", body)
        return records_from(answer, ids, f"POST {self.url}/translation")

    async def memory_info(self) -> dict[str, Any] | None:
        assert self.memory is not None
        try:
            answer = await self._request("GET", f"/memories/{quote(self.memory, safe='')}", None)
        except RequestRejected as exc:
            if exc.status == 404:
                return None
            raise RunnerError(str(exc)) from exc
        return answer if isinstance(answer, dict) else None

    async def learn(self, filename: str, data: bytes, target: str) -> int:
        import aiohttp

        assert self.memory is not None

        def form() -> aiohttp.FormData:  # made again for each try: aiohttp sends a FormData once
            made = aiohttp.FormData()
            made.add_field("targetLang", target)
            made.add_field("file", data, filename=filename, content_type="application/octet-stream")
            return made

        path = f"/memories/{quote(self.memory, safe='')}/segments"
        answer = await self._request("POST", path, None, form=form)
        imported = answer.get("imported") if isinstance(answer, dict) else None
        count = imported.get("segments") if isinstance(imported, dict) else None
        if not isinstance(count, int):
            raise RunnerError(f"POST {self.url}{path} gave no count of segments imported")
        return count

    async def _request(
        self, method: str, path: str, body: Any, form: Callable[[], aiohttp.FormData] | None = None
    ) -> Any:
        import aiohttp

        assert self._session is not None and self._slots is not None, "start() first"
        slots = self._slots
        url = f"{self.url}{path}"
        attempt = 0
        while True:
            retry_after: str | None = None
            full = False
            successes_before = slots.successes
            sent_in = await slots.acquire()  # the slot is held for the exchange, not the wait after it
            try:
                sent = {"data": form()} if form is not None else {"json": body}
                async with self._session.request(method, url, **sent) as response:
                    if response.status == 200:
                        answer = await response.json(content_type=None)
                        slots.succeeded()
                        return answer
                    text = await response.text()
                    if 400 <= response.status < 500 and response.status not in RETRY_STATUSES:
                        raise RequestRejected(
                            f"{method} {url} answered {response.status}: {_error_message(text)}", response.status
                        )
                    if _error_kind(text) == RECORD_FAILED:
                        # One record's text fails, and will fail again: set aside, not retried.
                        raise RequestRejected(
                            f"{method} {url} answered {response.status}: {_error_message(text)}", response.status
                        )
                    if response.status not in RETRY_STATUSES:
                        raise RunnerError(f"{method} {url} answered {response.status}: {_error_message(text)}")
                    retry_after = response.headers.get("Retry-After")
                    problem = f"{response.status} {_error_message(text)}"
                    full = response.status == 429 or (response.status == 503 and retry_after is not None)
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            finally:
                await slots.release()
            if full:
                slots.refused(sent_in)
            # A server that is full but answering others is no failure: such a refusal counts
            # against the retries only when no request at all succeeded since this one was sent.
            if not (full and slots.successes > successes_before):
                attempt += 1
            if attempt > self.max_retries:
                raise RunnerError(f"{method} {url} failed {attempt} times, last with {problem}")
            delay = retry_delay(max(attempt, 1), retry_after, base=self.backoff_s, cap=self.max_backoff_s)
            self.retries += 1
            logger.info("%s %s: %s; retry in %.1f s", method, url, problem, delay)
            await asyncio.sleep(delay)


def _error_kind(text: str) -> str | None:
    try:
        body = json.loads(text)
    except ValueError:
        return None
    return str(body["kind"]) if isinstance(body, dict) and "kind" in body else None


def _error_message(text: str) -> str:
    try:
        body = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return text[:500]
