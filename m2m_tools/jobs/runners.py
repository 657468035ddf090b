"""Where a job's translations come from: the service's HTTP API, or the model in-process.

Both take one request's worth of texts in one language pair at a time; the job keeps many
requests in flight:

* :class:`HttpRunner` posts them to ``{url}/translation`` concurrently at bulk priority
  (``Priority: u=7``, RFC 9218), so the server's cross-request batching does the work exactly as
  in production; it retries 429, 502, 503 and 504 answers (and connection failures) with backoff, honouring
  ``Retry-After``, and keeps fewer requests in flight while the server refuses for being full
  (:class:`InFlightLimit`). Each request opens its own connection, so behind a Kubernetes Service the
  requests spread over every replica, including ones the autoscaler adds during the job;
* :class:`LocalRunner` runs :func:`translator.api.pipeline.translate_payload`, the service's own
  validation, sentence splitting and rejoining, and hands the pieces of all concurrent requests to
  the engine's own scheduler (:class:`translator.engine.scheduler.Scheduler`), which merges them
  into batches exactly as in the engine service.

A request the system refuses for what it holds (a 4xx other than 429) raises
:class:`RequestRejected`; the job then finds the record at fault and rejects only that one. Any
other failure that retrying did not fix raises :class:`RunnerError`, and the job stops (its
finished chunks are saved).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import email.utils
import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from translator.contract import limits
from translator.contract.errors import TranslationError
from translator.contract.protocol import Piece, PieceResult, Priority
from translator.contract.schemas import Payload, Record
from translator.engine.scheduler import Scheduler, SchedulerSettings

if TYPE_CHECKING:
    import aiohttp

    from translator.config import Settings

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# RFC 9218 urgency 7, the lowest: the service schedules it behind interactive requests.
BULK_PRIORITY = "u=7"


class RunnerError(RuntimeError):
    """The translation system failed in a way that retrying will not fix."""


class RequestRejected(RuntimeError):
    """The system refused a request for what it holds (400, 413...): retrying it is pointless."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Runner(Protocol):
    # What decides the translations; hashed into the checkpoint keys.
    identity: dict[str, Any]
    # For people: the URL or the model directory.
    label: str
    # Requests worth keeping in flight at once.
    concurrency: int

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def languages(self) -> frozenset[str] | None: ...

    async def translate(self, source: str, target: str, texts: Sequence[str]) -> list[str]: ...


def plan_requests(texts: Sequence[str], records_per_request: int) -> list[range]:
    """Consecutive index ranges, one per request, within the service's per-request limits.

    A text over the per-record limit gets a request of its own (which the service refuses): the
    job checks lengths before planning, so that only happens to a caller that did not.
    """
    per_request = max(1, min(records_per_request, limits.MAX_RECORDS_PER_REQUEST))
    requests: list[range] = []
    start = chars = 0
    for index, text in enumerate(texts):
        if index > start and (index - start >= per_request or chars + len(text) > limits.MAX_CHARS_PER_REQUEST):
            requests.append(range(start, index))
            start, chars = index, 0
        chars += len(text)
    if start < len(texts):
        requests.append(range(start, len(texts)))
    return requests


# --------------------------------------------------------------------------- HTTP


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


def add_system_arguments(parser: argparse.ArgumentParser, concurrency: int, concurrency_help: str) -> None:
    """The flags that say what translates, shared by m2m-translate and m2m-eval."""
    system = parser.add_mutually_exclusive_group(required=True)
    system.add_argument("--url", help="base URL of a running service, e.g. http://translator:9527")
    system.add_argument("--model", type=Path, help="model directory, translated in-process")
    parser.add_argument(
        "--engine",
        metavar="BACKEND:DTYPE",
        help="with --model: the engine, e.g. ctranslate2:int8, transformers:float32 (default: "
        "bentoconfiguration.yaml's; a service's engine is set in its own configuration)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=concurrency, help=f"{concurrency_help} (default: %(default)s)"
    )
    parser.add_argument(
        "--system-name", help="name of what is served at --url (e.g. the model tag); part of the checkpoint key"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per HTTP request (default: %(default)s)")
    parser.add_argument("--max-retries", type=int, default=8, help="retries per HTTP request (default: %(default)s)")


def runner_from_args(args: Any, invalid: Callable[[str], Exception]) -> Runner:
    """The runner the tools' shared flags (`add_system_arguments`) ask for: ``--url`` or ``--model``
    (with ``--engine``); bad input raises ``invalid(message)``, the calling tool's own error."""
    if args.url:
        if args.engine:
            raise invalid("--engine applies to --model; a service runs the engine its configuration sets")
        return HttpRunner(
            args.url,
            concurrency=args.concurrency,
            timeout_s=args.timeout,
            max_retries=args.max_retries,
            system_name=args.system_name,
        )
    if not args.model.is_dir():
        raise invalid(f"--model {args.model}: no such directory")
    settings = _settings_with_engine(args.engine, invalid)
    from translator.engine.backends import ConversionMissing, choose, is_converted, missing_conversion

    # The engine resolved before anything loads, so what cannot run is a bad-input error, not a
    # traceback from inside the job.
    try:
        backend, _, _ = choose(settings.engine, model_dir=args.model)
    except (ConversionMissing, ValueError) as exc:
        raise invalid(f"--model {args.model}: {exc}") from exc
    if backend == "ctranslate2" and not is_converted(args.model):
        raise invalid(f"--model {args.model}: {missing_conversion(args.model)}")
    try:
        return LocalRunner(args.model, settings=settings)
    except RunnerError as exc:
        raise invalid(f"--model {args.model}: {exc}") from exc


def _settings_with_engine(engine: str | None, invalid: Callable[[str], Exception]) -> Settings:
    from translator.config import load_settings, with_engine

    settings = load_settings()
    if not engine:
        return settings
    try:
        chosen = with_engine(settings.engine, engine)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise invalid(f"--engine {engine}: {exc}") from exc
    return dataclasses.replace(settings, engine=chosen)


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
    ) -> None:
        self.url = url.rstrip("/")
        self.label = self.url
        # The URL alone cannot tell two checkpoints served at the same address apart: a name given
        # with --system-name goes into the key too.
        self.identity = {"kind": "url", "url": self.url, "name": system_name}
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
        return frozenset(str(code) for code in codes)

    async def translate(self, source: str, target: str, texts: Sequence[str]) -> list[str]:
        ids = [str(i) for i in range(len(texts))]
        body = {
            "payload": {
                "fromLang": source,
                "toLang": target,
                "records": [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)],
            }
        }
        answer = await self._request("POST", "/translation", body)
        return records_from(answer, ids, f"POST {self.url}/translation")

    async def _request(self, method: str, path: str, body: Any) -> Any:
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
                async with self._session.request(method, url, json=body) as response:
                    if response.status == 200:
                        answer = await response.json(content_type=None)
                        slots.succeeded()
                        return answer
                    text = await response.text()
                    if 400 <= response.status < 500 and response.status not in RETRY_STATUSES:
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


def _error_message(text: str) -> str:
    try:
        body = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return text[:500]


def records_from(answer: Any, ids: list[str], where: str) -> list[str]:
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, list) or len(result) != len(ids):
        got = len(result) if isinstance(result, list) else "no"
        raise RunnerError(f"{where}: expected {len(ids)} records in 'result', got {got}")
    texts = []
    for expected, record in zip(ids, result, strict=True):
        if not isinstance(record, dict) or record.get("id") != expected or not isinstance(record.get("text"), str):
            raise RunnerError(f"{where}: record {expected!r} missing or out of order in the answer")
        texts.append(record["text"])
    return texts


# --------------------------------------------------------------------------- in-process


class TranslatorLike(Protocol):
    """What the scheduler needs of the model (translator.engine.translator.Translator)."""

    num_beams: int

    @property
    def languages(self) -> list[str]: ...

    def translate(self, pieces: Sequence[Piece]) -> list[PieceResult]: ...

    def count_tokens(self, piece: Piece) -> int: ...


# An in-process run has no latency objective and nobody else to serve: its batches are bounded by
# the token budget alone (as the engine's generate calls are), not by a piece count.
OFFLINE_MAX_BATCH = 4096


class LocalRunner:
    def __init__(
        self,
        model_dir: str | Path,
        *,
        settings: Settings | None = None,
        translator: TranslatorLike | None = None,
        concurrency: int = 64,
    ) -> None:
        from translator.config import load_settings
        from translator.engine.backends import choose

        self.model_dir = Path(model_dir).resolve()
        self.label = str(self.model_dir)
        # The service's own configuration (bentoconfiguration.yaml or BENTOML_CONFIG), so in-process
        # translations use the same generation settings as the served model.
        self.settings = settings or load_settings()
        self.identity = {
            "kind": "model",
            "checkpoint": _checkpoint_version(self.model_dir),
            "generation": dataclasses.asdict(self.settings.generation),
            # int8 may translate a sentence differently: a job resumed on another engine or
            # precision does not reuse the chunks of the first.
            "engine": list(choose(self.settings.engine, model_dir=self.model_dir)),
        }
        # Requests are merged into engine calls anyway; this only bounds the Python work queued.
        self.concurrency = max(1, concurrency)
        self._translator = translator
        self._scheduler: Scheduler | None = None
        self._languages: frozenset[str] = frozenset()

    async def start(self) -> None:
        if self._translator is None:
            from translator.engine.translator import Translator

            engine = dataclasses.replace(self.settings.engine, warmup=False)
            self._translator = await asyncio.to_thread(Translator, self.model_dir, engine, self.settings.generation)
        translator = self._translator
        assert translator is not None
        # The engine's own scheduler merges the pieces of concurrent requests into batches, as in the
        # service: one micro-batcher, whichever way the model is reached. Nothing is refused (no
        # deadline) and it never lingers (every request of a chunk is queued at once).
        self._scheduler = Scheduler(
            translator.translate,
            translator.count_tokens,
            SchedulerSettings(
                max_batch_size=OFFLINE_MAX_BATCH,
                max_batch_tokens=self.settings.engine.max_batch_tokens,
                beams=translator.num_beams,
                max_latency_s=math.inf,
                linger_fraction=0.0,
            ),
        )
        self._scheduler.start()
        self._languages = frozenset(translator.languages)

    async def close(self) -> None:
        if self._scheduler is not None:
            await self._scheduler.close()
            self._scheduler = None

    async def _engine(self, pieces: list[Piece]) -> list[PieceResult]:
        assert self._scheduler is not None, "start() first"
        return await self._scheduler.submit(pieces, Priority.BULK)

    async def languages(self) -> frozenset[str] | None:
        return self._languages

    async def translate(self, source: str, target: str, texts: Sequence[str]) -> list[str]:
        from translator.api.pipeline import translate_payload

        assert self._translator is not None and self._scheduler is not None, "start() first"
        payload = Payload(
            fromLang=source,
            toLang=target,
            records=[Record(id=str(i), text=text) for i, text in enumerate(texts)],
        )
        try:
            result = await translate_payload(payload, self._languages, self._engine)
        except TranslationError as exc:
            # The status the service would answer with decides, as it does for HttpRunner.
            if 400 <= exc.status < 500:
                raise RequestRejected(f"in-process {source}-{target}: {exc.message}", exc.status) from exc
            raise RunnerError(f"in-process {source}-{target}: {exc.message}") from exc
        return records_from(result.model_dump(), [str(i) for i in range(len(texts))], f"in-process {self.label}")


def _checkpoint_version(model_dir: Path) -> str:
    from translator.store import RegistrationError, checkpoint_files, content_version

    # The same content hash save_model.py uses for the BentoML tag: a copied or moved checkpoint
    # keeps its checkpoints, a retrained one does not.
    try:
        return content_version(checkpoint_files(model_dir))
    except RegistrationError as exc:
        raise RunnerError(str(exc)) from exc
