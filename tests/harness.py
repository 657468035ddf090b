"""One implementation of each test mechanism, for the tests, the benchmark and the locustfile alike:
the fixture corpus as language pairs, the server launcher, the closed-loop load generator with its
answer check, and the reading of `/metrics`.

It lives in tests/ (architecture.md: "one shared helper module for servers, load and metrics
parsing") rather than in bench/: the test suite is the first user and must not pull in the
benchmark (its baseline server, plots and checkpoints) to get a free port; bench/ and the
locustfile import it from here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import requests
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
# A 418M model on a busy 2-core CPU; the fixture model is ready in well under a minute.
START_TIMEOUT_S = 900.0
CLIENT_TIMEOUT_S = 600.0


# --------------------------------------------------------------------------- the fixture corpus


@dataclass(frozen=True)
class DocumentPair:
    """One fixture-corpus document in one direction: aligned sentence lists."""

    source_lang: str
    target_lang: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]

    @property
    def pair(self) -> tuple[str, str]:
        return self.source_lang, self.target_lang


def corpus_documents() -> list[DocumentPair]:
    """Every document of the fixture corpus in both directions, in corpus order (the one place the
    corpus is expanded into pairs)."""
    from fixture.build import load_corpus

    out = []
    for doc in load_corpus():
        sources, targets = tuple(doc["source"]), tuple(doc["target"])
        out.append(DocumentPair(doc["src_lang"], doc["tgt_lang"], sources, targets))
        out.append(DocumentPair(doc["tgt_lang"], doc["src_lang"], targets, sources))
    return out


def corpus_sentences() -> list[tuple[str, str, str, str]]:
    """(source language, target language, sentence, its translation), each source sentence once per
    target language, in corpus order."""
    out: dict[tuple[str, str, str], str] = {}
    for doc in corpus_documents():
        for source, target in zip(doc.sources, doc.targets, strict=True):
            out.setdefault((doc.source_lang, doc.target_lang, source), target)
    return [(*key, target) for key, target in out.items()]


# --------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.asynccontextmanager
async def stand_in_server(routes: list[Any]) -> AsyncIterator[str]:
    """A small aiohttp server on a free local port, for the tools' HTTP runner to talk to: yields
    its base URL (no trailing slash) and stops it on exit."""
    from aiohttp import web

    app = web.Application()
    app.add_routes(routes)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


def decoy_checkpoint(checkpoint: Path, destination: Path) -> Path:
    """A copy of `checkpoint` that loads and converts like it but translates nothing right (every
    weight matrix's rows reversed): registered beside the real one, it shows which one a server
    or a bento took, since only the real one reproduces the fixture's corpus."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(checkpoint, destination, ignore=shutil.ignore_patterns("ctranslate2"))
    weights = destination / "model.safetensors"
    tensors = {name: t.flip(0).contiguous() if t.dim() > 1 else t for name, t in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})
    return destination


def register(model: str | Path, bentoml_home: Path) -> str:
    """Register a checkpoint through save_model.py, exactly as `make serve` does it."""
    env = {**os.environ, "BENTOML_HOME": str(bentoml_home), "BENTOML_DO_NOT_TRACK": "true"}
    done = subprocess.run(
        [sys.executable, "save_model.py", "--model-id", str(model), "--quiet"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"save_model.py failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


@dataclass
class Server:
    name: str
    url: str
    process: subprocess.Popen
    log_path: Path
    extra: dict = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, chars: int = 5000) -> str:
        return self.log()[-chars:]

    def metrics(self) -> str:
        return requests.get(f"{self.url}/metrics", timeout=30).text

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM to the whole process group, SIGKILL after `timeout` seconds."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
            except ProcessLookupError:
                pass
        # Workers that outlived their parent would keep the port and the memory.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return self.process.returncode


def spawn(name: str, command: list[str], env: dict[str, str], log_path: Path, port: int) -> Server:
    """Start a server process in its own process group, its output in `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    return Server(name, f"http://127.0.0.1:{port}", process, log_path)


def wait_ready(
    server: Server,
    path: str = "/readyz",
    check: Callable[[requests.Response], bool] = lambda _: True,
    timeout: float = START_TIMEOUT_S,
) -> Server:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            response = requests.get(f"{server.url}{path}", timeout=10)
            if response.status_code == 200 and check(response):
                return server
        except requests.RequestException:
            pass
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"{server.name} not ready after {timeout:.0f}s:\n{server.log_tail()}")


def launch_server(bentoml_home: Path, model_tag: str | None, log_path: Path, config: Path | None = None) -> Server:
    """`bentoml serve service:Translation` pinned to `model_tag` on a free port, not waited for;
    with None, plain `bentoml serve` (bentofile.yaml's service, the store's latest model), as a user
    types it after save_model.py (what `make serve` runs).

    `config` None: BENTOML_CONFIG of this environment (else the repository's file)."""
    port = free_port()
    env = {**os.environ, "BENTOML_HOME": str(bentoml_home), "BENTOML_DO_NOT_TRACK": "true"}
    env.pop("TRANSLATOR_MODEL", None)
    if model_tag is not None:
        env["TRANSLATOR_MODEL"] = model_tag
    if config is not None:
        env["BENTOML_CONFIG"] = str(config)
    target = ["service:Translation"] if model_tag is not None else []
    command = [sys.executable, "-m", "bentoml", "serve", *target, "--host", "127.0.0.1"]
    return spawn("service", [*command, "--port", str(port)], env, log_path, port)


def start_server(
    bentoml_home: Path,
    model_tag: str | None,
    log_path: Path,
    config: Path | None = None,
    timeout: float = START_TIMEOUT_S,
) -> Server:
    """`launch_server`, then wait until `/readyz` says ready (the engine loaded and warmed up)."""
    return wait_ready(launch_server(bentoml_home, model_tag, log_path, config), "/readyz", timeout=timeout)


# --------------------------------------------------------------------------- load


@dataclass(frozen=True)
class Job:
    """One request and, where known, the exact texts it must come back with."""

    body: dict
    expected: tuple[str, ...] | None = None
    headers: dict[str, str] | None = None  # e.g. {"Priority": "u=7"} for bulk work

    @property
    def ids(self) -> list[str]:
        return [record["id"] for record in self.body["payload"]["records"]]


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
                result.outcomes.append(await _send(session, f"{url}/translation", item))

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
            result.outcomes.append(await _send(session, f"{url}/translation", item))

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


# --------------------------------------------------------------------------- metrics


def samples(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    """(labels, value) of every sample called `name` (e.g. `translation_batch_pieces_sum`) in a
    Prometheus text exposition, read with prometheus_client's parser. BentoML prefixes some of its
    own metrics with a namespace (`bentoml_service_`...): `name` matches with or without one."""
    return [
        (dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name or sample.name.endswith(f"_{name}")
    ]


def histogram_totals(exposition: str, metric: str) -> tuple[float, float]:
    """(sum, count) of a histogram, summed over its label sets."""
    total = sum(value for _, value in samples(exposition, f"{metric}_sum"))
    count = sum(value for _, value in samples(exposition, f"{metric}_count"))
    return total, count


def histogram_buckets(exposition: str, metric: str, **labels: str) -> dict[float, float]:
    """Cumulative bucket counts by upper bound, summed over the label sets that have `labels`."""
    buckets: dict[float, float] = {}
    for sample_labels, value in samples(exposition, f"{metric}_bucket"):
        if all(sample_labels.get(k) == v for k, v in labels.items()):
            le = float(sample_labels["le"])
            buckets[le] = buckets.get(le, 0.0) + value
    return buckets
