"""`python -m bench`: measure the offline limit, the service and the per-request baseline in one run.

    python -m bench                      # full run: random-weight m2m100_418M, ~40 min on 2 CPU cores
    python -m bench --smoke              # fixture model, a few seconds per point (the test suite runs it)
    python -m bench --model-id ./m2m100_418M --name real-418m

Writes <output>/<name>.json, .md, -throughput.png and -p99.png; server logs go to
build/bench-logs/<name>/. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import dataclasses
import hashlib
import itertools
import json
import logging
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil
import requests
import yaml

from bench import checkpoint, report, servers, workload
from bench.memory import MemorySampler
from bench.tokens import generated_tokens, outputs_path, tokens_exact, write_outputs
from harness.load import Job, LoadResult, closed_loop, libretranslate_job, open_loop, run_load
from harness.metrics import histogram_totals, samples
from harness.servers import Server, register, start_server
from translator.config import (
    API_SERVICE,
    DEFAULT_CONFIG_PATH,
    ENGINE_SERVICE,
    Engine,
    Settings,
    load_settings,
    with_engine,
)
from translator.engine.backends import choose, is_converted
from translator.engine.backends.ctranslate2_convert import convert, converted_path

logger = logging.getLogger("bench")

ROOT = Path(__file__).resolve().parent.parent
LOG_ROOT = ROOT / "build" / "bench-logs"
DEFAULT_HOME = ROOT / "build" / "bench-home"
OFFLINE_TIMEOUT_S = 1800
# m2m-translate's defaults, which the bulk scenario runs with (m2m_tools/bulk.py).
BULK_CONCURRENCY, BULK_RECORDS_PER_REQUEST = 32, 8
BULK_MIN_RECORDS = 64


def _ints(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}")
    return values


def _systems(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(names) - set(report.SYSTEMS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"systems are {', '.join(report.SYSTEMS)}; got {text!r}")
    return [name for name in report.SYSTEMS if name in names]


# mixed-priority: 8 interactive one-record clients beside 32 bulk sixteen-record clients.
# overload: one-record requests sent open-loop at --overload-factor times the measured capacity.
# repeated: 32 one-record clients cycling over the corpus's sentences (after one pass, all cached).
# bulk: a corpus of one-sentence records in mixed pairs through `m2m-translate --url`, as a user runs it.
SCENARIOS = ("mixed-priority", "overload", "repeated", "bulk", "libretranslate")
MIXED_INTERACTIVE, MIXED_BULK, MIXED_BULK_RECORDS = 8, 32, 16
TARGET_CLIENTS = 32
# The libretranslate scenario: Weblate sends lists of up to 20 texts, one request at a time per
# project being translated; a few projects at once.
WEBLATE_CLIENTS, WEBLATE_RECORDS = 4, 20
BULK_HEADERS = {"Priority": "u=7"}


def _scenarios(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        raise argparse.ArgumentTypeError(f"scenarios are {', '.join(SCENARIOS)}; got {text!r}")
    return names


def _engines(text: str) -> list[tuple[str, str]]:
    engines = []
    for item in text.split(","):
        try:
            engine = with_engine(Engine(), item)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"--engines {item!r}: {exc}") from exc
        engines.append((engine.backend, engine.dtype))
    return engines


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="fixture model, short points: checks the harness")
    parser.add_argument("--model-id", help="real checkpoint (hub id or local directory) instead of random weights")
    parser.add_argument("--systems", type=_systems, default=list(report.SYSTEMS), help="offline,service,baseline")
    parser.add_argument("--concurrency", type=_ints, help="closed-loop clients per point (default 1,8,32,64)")
    parser.add_argument("--records", type=_ints, help="records per request (default 1,16)")
    parser.add_argument("--duration", type=float, help="measured seconds per point (default 60; smoke 2)")
    parser.add_argument("--warmup", type=float, help="unmeasured seconds before each point (default 10; smoke 0.5)")
    parser.add_argument("--forced-new-tokens", type=int, default=16, help="tokens per output; 0: the model decides")
    parser.add_argument("--beams", type=int, default=1, help="beam width (default 1: greedy)")
    parser.add_argument(
        "--engines",
        type=_engines,
        help="engines to compare, each measured on every system: backend:dtype,... e.g. "
        "transformers:float32,ctranslate2:int8; the first is the reference of the cross-engine targets "
        "(default: bentoconfiguration.yaml's engine)",
    )
    parser.add_argument("--baseline-workers", type=int, help="uvicorn workers of the baseline (default 2; smoke 1)")
    parser.add_argument("--offline-batch-sizes", type=_ints, help="default: 1 and the service's max_batch_size")
    parser.add_argument(
        "--scenarios",
        type=_scenarios,
        default=[],
        help=f"extra service points: {', '.join(SCENARIOS)} (bench/README.md)",
    )
    parser.add_argument("--scenarios-only", action="store_true", help="skip the closed-loop grid; scenarios only")
    parser.add_argument("--max-latency-ms", type=int, help="the service's batching.max_latency_ms for this run")
    parser.add_argument("--linger-max-ms", type=float, help="the service's scheduling.linger_max_ms for this run")
    parser.add_argument("--overload-factor", type=float, default=4.0, help="overload: offered load / capacity")
    parser.add_argument("--name", help="result file name (default: cpu, cuda or smoke)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results", help="directory for results")
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME, help="private BENTOML_HOME for the service")
    parser.add_argument("--logs", type=Path, help="server logs and the written config (default build/bench-logs/NAME)")
    args = parser.parse_args(argv)
    smoke = args.smoke
    args.concurrency = args.concurrency or ([1, 4] if smoke else [1, 8, 32, 64])
    args.records = args.records or [1, 16]
    args.duration = args.duration if args.duration is not None else (2.0 if smoke else 60.0)
    args.warmup = args.warmup if args.warmup is not None else (0.5 if smoke else 10.0)
    args.baseline_workers = args.baseline_workers or (1 if smoke else 2)
    if args.forced_new_tokens < 0 or args.beams < 1 or args.baseline_workers < 1:
        parser.error("--forced-new-tokens must be >= 0, --beams and --baseline-workers >= 1")
    return args


# --------------------------------------------------------------------------- set-up


def bench_config(
    path: Path,
    beams: int,
    forced_new_tokens: int | None,
    max_latency_ms: int | None = None,
    linger_max_ms: float | None = None,
    backend: str | None = None,
    dtype: str | None = None,
) -> Settings:
    """The repository's configuration with the benchmark's generation settings; BentoML validates
    the file against its v1 schema, so only `services:` is at the top level."""
    raw = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8"))
    config = copy.deepcopy(raw)
    generation = config["services"][ENGINE_SERVICE].setdefault("translation", {}).setdefault("generation", {})
    generation["num_beams"] = beams
    generation["forced_new_tokens"] = forced_new_tokens
    if max_latency_ms is not None:
        config["services"][ENGINE_SERVICE]["batching"]["max_latency_ms"] = max_latency_ms
    if linger_max_ms is not None:
        config["services"][ENGINE_SERVICE]["translation"]["scheduling"]["linger_max_ms"] = linger_max_ms
    engine = config["services"][ENGINE_SERVICE]["translation"].setdefault("engine", {})
    if backend is not None:
        engine["backend"] = backend
    if dtype is not None:
        engine["dtype"] = dtype
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# Written by `python -m bench` from bentoconfiguration.yaml: only generation settings "
        "(and max_latency_ms, linger_max_ms, backend, dtype, if given) differ.\n"
        + yaml.safe_dump(config, sort_keys=False),
        encoding="utf-8",
    )
    settings = load_settings(path)
    if set(config) != {"services"} or API_SERVICE not in config["services"]:
        raise RuntimeError(f"{path}: unexpected configuration layout")
    return settings


def resolve_model(args: argparse.Namespace) -> tuple[Path, str, dict[str, Any]]:
    """(directory, model id for save_model.py, description for the report)."""
    info: dict[str, Any]
    if args.model_id:
        from translator.store import resolve

        source = resolve(args.model_id)
        # save_model.py gets the hub id (its store name comes from it) or the absolute directory.
        model_id = args.model_id if source.kind == "hub" else str(source.directory)
        info = {"description": f"{args.model_id} (real weights)", "directory": str(source.directory)}
        return source.directory, model_id, info
    if args.smoke:
        directory = checkpoint.fixture_model()
        info = {"description": "fixture model (tiny; smoke mode)", "directory": str(directory)}
        return directory, str(directory), info
    started = time.perf_counter()
    directory, build_s = checkpoint.ensure_random_418m()
    info = {
        "description": f"m2m100_418M architecture, random weights (seed {checkpoint.SEED}), fixture tokenizer",
        "directory": str(directory),
        "config": checkpoint.M2M100_418M_CONFIG,
        "checkpoint_build_s": round(build_s, 1) if build_s is not None else None,
        "checkpoint_reused": build_s is None,
        "checkpoint_check_s": round(time.perf_counter() - started, 1),
    }
    return directory, str(directory), info


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, torch; c = torch.cuda.is_available(); print(json.dumps({'cuda': c, "
            "'device': torch.cuda.get_device_name() if c else 'cpu', 'threads': torch.get_num_threads()}))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    torch_info = json.loads(probe.stdout) if probe.returncode == 0 else {}
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "device": torch_info.get("device"),
        "torch_default_threads": torch_info.get("threads"),
        "python": platform.python_version(),
        "torch": metadata.version("torch"),
        "transformers": metadata.version("transformers"),
        "bentoml": metadata.version("bentoml"),
        "platform": platform.platform(),
    }


def git_state() -> dict[str, Any]:
    def git(*arguments: str) -> str:
        done = subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain"))}


def engine_label(settings: Settings) -> str:
    """`ctranslate2 int8`: the backend and precision this run's settings resolve to here."""
    backend, _, dtype = choose(settings.engine)
    return f"{backend} {dtype}"


# --------------------------------------------------------------------------- systems


def latency_fields(values: Sequence[float]) -> dict[str, float | None]:
    return {
        **{f"latency_p{q}_s": report.percentile(values, q) for q in (50, 95, 99)},
        "latency_max_s": max(values, default=None),
    }


def run_offline(model_dir: Path, config: Path, batch_size: int, duration_s: float, log_dir: Path) -> dict:
    spec = log_dir / f"offline-{batch_size}.spec.json"
    out = log_dir / f"offline-{batch_size}.json"
    spec.write_text(
        json.dumps(
            {"model_dir": str(model_dir), "config": str(config), "batch_size": batch_size, "duration_s": duration_s}
        )
    )
    out.unlink(missing_ok=True)
    log_path = log_dir / f"offline-{batch_size}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.offline", str(spec), str(out)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            start_new_session=True,
        )
        try:
            with MemorySampler(process.pid) as sampler:
                assert process.stdout is not None
                for line in process.stdout:  # the child says when its model is loaded
                    if line.strip() == "LOADED":
                        sampler.reset()
                process.wait(OFFLINE_TIMEOUT_S)
                peak = sampler.peak()
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
    if process.returncode != 0 or not out.exists():
        raise RuntimeError(f"offline run failed ({process.returncode}):\n{log_path.read_text()[-5000:]}")
    result = json.loads(out.read_text())
    seconds = result["seconds"]
    return {
        "system": "offline",
        "concurrency": None,
        "records_per_request": None,
        "priority": None,
        "scenario": None,
        "batch_size": batch_size,
        "requests": len(result["batch_times_s"]),
        "failed_requests": 0,
        "outcomes": {},
        "sentences": result["sentences"],
        "seconds": round(seconds, 3),
        "sentences_per_s": result["sentences"] / seconds,
        "generated_tokens": result["generated_tokens"],
        "generated_tokens_per_s": result["generated_tokens"] / seconds,
        **latency_fields(result["batch_times_s"]),
        "mean_batch_size": float(batch_size),
        "model_calls": len(result["batch_times_s"]),
        **peak.as_row(),
        "client_cpu_share": None,
        "first_failure": None,
        "_engine": {k: result[k] for k in ("engine", "torch", "torch_threads", "cuda_device", "load_s")},
    }


def server_stats(server: Server) -> tuple[float, float]:
    """(pieces, model calls) so far, as the server counts them."""
    if server.name == "service":
        return histogram_totals(server.metrics(), "translation_batch_pieces")
    stats = requests.get(f"{server.url}/stats", timeout=30).json()
    return float(stats["pieces"]), float(stats["calls"])


def run_point(
    server: Server,
    sampler: MemorySampler,
    concurrency: int,
    records: int,
    args: argparse.Namespace,
    settings: Settings,
    tokenizer: Any,
    log_dir: Path,
) -> dict:
    stream = (request.job() for request in workload.requests(records, workload.epoch_of(concurrency, records)))
    if args.warmup > 0:
        # The same closed loop, not measured; returns when the requests in flight are answered.
        run_load(server.url, stream, concurrency, args.warmup)
    with _Point(server, sampler) as point:
        result = run_load(server.url, stream, concurrency, args.duration)
    return _row(server, point, result, concurrency, records, settings, tokenizer, log_dir)


class _Point:
    """What the server and this process did during one measured point: pieces, calls, CPU, memory."""

    def __init__(self, server: Server, sampler: MemorySampler) -> None:
        self.server = server
        self.sampler = sampler

    def __enter__(self) -> _Point:
        self.pieces_before, self.calls_before = server_stats(self.server)
        self.sampler.reset()
        self.cpu_before = sum(psutil.Process().cpu_times()[:2])
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu_s = sum(psutil.Process().cpu_times()[:2]) - self.cpu_before
        self.peak = self.sampler.peak()
        pieces_after, calls_after = server_stats(self.server)
        self.calls = calls_after - self.calls_before
        self.pieces = pieces_after - self.pieces_before


def _row(
    server: Server,
    point: _Point,
    result: LoadResult,
    concurrency: int,
    records: int,
    settings: Settings,
    tokenizer: Any,
    log_dir: Path,
    *,
    priority: str | None = None,
    scenario: str | None = None,
    seconds: float | None = None,
) -> dict:
    """`seconds`: the time the load ran when it is not the result's span (halves taken in turn)."""
    seconds = result.seconds if seconds is None else seconds
    tokens = generated_tokens(tokenizer, result.texts, settings.generation)
    path = outputs_path(log_dir, server.name, concurrency, records, None, scenario, priority)
    write_outputs(path, result.texts)
    refusals = result.refusals
    row = {
        "system": server.name,
        "concurrency": concurrency,
        "records_per_request": records,
        "priority": priority,
        "scenario": scenario,
        "batch_size": None,
        "requests": result.requests,
        "failed_requests": result.failed,
        "outcomes": dict(result.kinds),
        "sentences": result.sentences,
        "seconds": round(seconds, 3),
        "sentences_per_s": result.sentences / seconds,
        "generated_tokens": tokens,
        "generated_tokens_per_s": tokens / seconds,
        **latency_fields(result.latencies_s),
        "refusal_latency_p50_s": report.percentile([o.seconds for o in refusals], 50),
        "refusal_latency_p99_s": report.percentile([o.seconds for o in refusals], 99),
        "refusal_latency_max_s": max((o.seconds for o in refusals), default=None),
        "refusals_without_retry_after": sum(not o.headers.get("retry-after", "").isdigit() for o in refusals),
        "mean_batch_size": point.pieces / point.calls if point.calls else None,
        "model_calls": int(point.calls),
        **point.peak.as_row(),
        "client_cpu_share": point.cpu_s / (seconds * (os.cpu_count() or 1)),
        "first_failure": result.first_failure,
    }
    logger.info(
        "%s%s c=%d r=%d: %.2f sentences/s, p50 %.2fs, p99 %.2fs, failed %d/%d, mean batch %s, peak PSS %s MiB",
        server.name,
        f" [{scenario} {priority or ''}]" if scenario else "",
        concurrency,
        records,
        row["sentences_per_s"],
        row["latency_p50_s"] or float("nan"),
        row["latency_p99_s"] or float("nan"),
        result.failed,
        result.requests,
        f"{row['mean_batch_size']:.2f}" if row["mean_batch_size"] is not None else "-",
        row["peak_pss_mb"],
    )
    return row


def run_mixed_priority(
    server: Server,
    sampler: MemorySampler,
    args: argparse.Namespace,
    settings: Settings,
    tokenizer: Any,
    log_dir: Path,
) -> list[dict]:
    """Interactive one-record clients beside bulk clients that alone would saturate the model."""
    interactive = (r.job() for r in workload.requests(1, workload.EPOCH_INTERACTIVE))
    bulk = (
        dataclasses.replace(r.job(), headers=BULK_HEADERS)
        for r in workload.requests(MIXED_BULK_RECORDS, workload.EPOCH_BULK)
    )

    async def both(seconds: float) -> tuple[LoadResult, LoadResult]:
        return await asyncio.gather(
            closed_loop(server.url, interactive, MIXED_INTERACTIVE, seconds),
            closed_loop(server.url, bulk, MIXED_BULK, seconds),
        )

    if args.warmup > 0:
        asyncio.run(both(args.warmup))
    with _Point(server, sampler) as point:
        fast, slow = asyncio.run(both(args.duration))
    return [
        _row(
            server,
            point,
            fast,
            MIXED_INTERACTIVE,
            1,
            settings,
            tokenizer,
            log_dir,
            priority="interactive",
            scenario="mixed-priority",
        ),
        _row(
            server,
            point,
            slow,
            MIXED_BULK,
            MIXED_BULK_RECORDS,
            settings,
            tokenizer,
            log_dir,
            priority="bulk",
            scenario="mixed-priority",
        ),
    ]


def run_overload(
    server: Server,
    sampler: MemorySampler,
    args: argparse.Namespace,
    settings: Settings,
    tokenizer: Any,
    capacity: float,
    log_dir: Path,
) -> dict:
    """One-record requests at `overload_factor` x capacity (sentences/s), open loop."""
    rate = args.overload_factor * capacity
    stream = (r.job() for r in workload.requests(1, workload.EPOCH_OVERLOAD))
    with _Point(server, sampler) as point:
        result = asyncio.run(open_loop(server.url, stream, rate, args.duration))
    row = _row(server, point, result, 0, 1, settings, tokenizer, log_dir, scenario="overload")
    row["offered_requests_per_s"] = rate
    return row


def run_repeated(
    server: Server,
    sampler: MemorySampler,
    args: argparse.Namespace,
    settings: Settings,
    tokenizer: Any,
    log_dir: Path,
) -> dict:
    stream = (r.job() for r in workload.repeated_requests())
    # One whole pass first, not measured: the point then measures repeats in steady state, not a
    # first pass still in progress (how far a timed warm-up got decided the result: 5.6 or 28.8
    # sentences/s in two runs).
    run_load(server.url, itertools.islice(stream, len(workload.corpus())), TARGET_CLIENTS)
    before = _cache_lookups(server)
    with _Point(server, sampler) as point:
        result = run_load(server.url, stream, TARGET_CLIENTS, args.duration)
    hits, misses = (after - first for after, first in zip(_cache_lookups(server), before, strict=True))
    row = _row(server, point, result, TARGET_CLIENTS, 1, settings, tokenizer, log_dir, scenario="repeated")
    row["cache_hit_rate"] = hits / (hits + misses) if hits + misses else None
    return row


def run_libretranslate(
    server: Server,
    sampler: MemorySampler,
    args: argparse.Namespace,
    settings: Settings,
    tokenizer: Any,
    log_dir: Path,
) -> list[dict]:
    """Weblate-shaped clients (lists of WEBLATE_RECORDS texts) on the LibreTranslate API, and the
    same load on `POST /translation`: what the compatible path costs. Each API gets two halves of
    the time, in turn (native, compatible, native, compatible), so that a machine that slows down
    during the run does not favour one; each half draws texts of its own (no cache hits)."""
    halves: dict[str, list[LoadResult]] = {"native": [], "libretranslate": []}
    points: dict[str, list[_Point]] = {"native": [], "libretranslate": []}
    epochs = iter(range(workload.EPOCH_LIBRETRANSLATE, workload.EPOCH_LIBRETRANSLATE + 10))

    def jobs(api: str) -> Iterator[Job]:
        native = (r.job() for r in workload.requests(WEBLATE_RECORDS, next(epochs)))
        return native if api == "native" else (libretranslate_job(j) for j in native)

    if args.warmup > 0:
        for api in halves:
            run_load(server.url, jobs(api), WEBLATE_CLIENTS, args.warmup / 2)
    for _ in range(2):
        for api in halves:
            stream = jobs(api)
            with _Point(server, sampler) as point:
                halves[api].append(run_load(server.url, stream, WEBLATE_CLIENTS, args.duration / 2))
            points[api].append(point)
    rows = []
    for api, results in halves.items():
        merged = LoadResult(results[0].started, [o for r in results for o in r.outcomes])
        point = points[api][-1]
        point.pieces, point.calls = sum(p.pieces for p in points[api]), sum(p.calls for p in points[api])
        point.cpu_s = sum(p.cpu_s for p in points[api])
        # Two halves with the other API's in between: the rate is over the time the halves took.
        row = _row(
            server,
            point,
            merged,
            WEBLATE_CLIENTS,
            WEBLATE_RECORDS,
            settings,
            tokenizer,
            log_dir,
            priority=api,
            scenario="libretranslate",
            seconds=sum(r.seconds for r in results),
        )
        rows.append(row)
    return rows


def _cache_lookups(server: Server) -> tuple[float, float]:
    """(hits, misses) of the engine's local cache so far."""
    lookups = samples(server.metrics(), "translation_cache_lookups_total")
    local = [(labels["result"], value) for labels, value in lookups if labels.get("level") == "local"]
    return sum(v for r, v in local if r == "hit"), sum(v for r, v in local if r == "miss")


def run_bulk(
    server: Server,
    sampler: MemorySampler,
    args: argparse.Namespace,
    settings: Settings,
    tokenizer: Any,
    capacity: float,
    log_dir: Path,
) -> dict:
    """A corpus through `m2m-translate --url`, the command a user runs, as a child process with its
    defaults (32 requests in flight, bulk priority): how close a real job gets to the offline limit.
    Sized to take about `--duration` at `capacity`; a fresh job (no checkpoint) every run."""
    records = max(BULK_MIN_RECORDS, round(capacity * args.duration))
    stream = workload.requests(1, workload.EPOCH_BULK_JOB)
    lines = [next(stream) for _ in range(records)]
    corpus = log_dir / "bulk-input.jsonl"
    with corpus.open("w", encoding="utf-8") as out:
        for n, request in enumerate(lines):
            record = {"id": f"r{n}", "text": request.texts[0], "fromLang": request.source, "toLang": request.target}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    output = log_dir / "bulk-output.jsonl"
    for stale in (output, log_dir / "bulk-output.jsonl.rejects.jsonl"):
        stale.unlink(missing_ok=True)
    shutil.rmtree(log_dir / "bulk-output.jsonl.m2m-job", ignore_errors=True)
    command = [sys.executable, "-m", "m2m_tools.bulk", str(corpus), "--output", str(output)]
    command += ["--url", server.url, "--no-progress", "--system-name", f"bench-{time.time_ns()}"]
    logger.info("bulk: %d records through %s", records, shlex.join(command[1:]))
    children_before = psutil.Process().cpu_times()
    refused_before = _refused(server)
    with _Point(server, sampler) as point:
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
    children = psutil.Process().cpu_times()
    refused = _refused(server) - refused_before
    if done.returncode != 0:
        raise RuntimeError(f"m2m-translate exited with {done.returncode}: {done.stderr[-2000:]}")
    answers = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    # (With random weights most generated ids are outside the fixture tokenizer's vocabulary and
    # decode to "": the arithmetic is the real model's, the text is not; see bench/README.md.)
    if [a["id"] for a in answers] != [f"r{n}" for n in range(records)] or any(
        not isinstance(a.get("text"), str) for a in answers
    ):
        raise RuntimeError(f"m2m-translate's output in {output} does not account for every record in order")
    texts = [a["text"] for a in answers]
    tokens = generated_tokens(tokenizer, texts, settings.generation)
    write_outputs(
        outputs_path(log_dir, server.name, BULK_CONCURRENCY, BULK_RECORDS_PER_REQUEST, None, "bulk", "bulk"), texts
    )
    summary = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    logger.info("bulk: %d sentences in %.1f s, %.2f sentences/s (%s)", records, seconds, records / seconds, summary)
    client_cpu = sum(children[2:4]) - sum(children_before[2:4]) + point.cpu_s
    return {
        "system": server.name,
        "concurrency": BULK_CONCURRENCY,
        "records_per_request": BULK_RECORDS_PER_REQUEST,
        "priority": "bulk",
        "scenario": "bulk",
        "batch_size": None,
        "requests": None,
        "failed_requests": 0,
        # Requests the engine refused (503 + Retry-After) and m2m-translate sent again later.
        "outcomes": {"refused and retried": int(refused)},
        "sentences": records,
        "seconds": round(seconds, 3),
        "sentences_per_s": records / seconds,
        "generated_tokens": tokens,
        "generated_tokens_per_s": tokens / seconds,
        **latency_fields([]),
        "refusal_latency_p50_s": None,
        "refusal_latency_p99_s": None,
        "refusal_latency_max_s": None,
        "refusals_without_retry_after": 0,
        "mean_batch_size": point.pieces / point.calls if point.calls else None,
        "model_calls": int(point.calls),
        **point.peak.as_row(),
        "client_cpu_share": client_cpu / (seconds * (os.cpu_count() or 1)),
        "first_failure": None,
        "bulk_summary": summary,
    }


def _refused(server: Server) -> float:
    return sum(value for _, value in samples(server.metrics(), "translation_refused_requests_total"))


def run_server_points(
    server: Server, args: argparse.Namespace, settings: Settings, tokenizer: Any, meta: dict, rows: list[dict]
) -> None:
    log_dir = Path(meta["log_dir"])
    with MemorySampler(server.pid) as sampler:
        idle = sampler.peak()
        meta.setdefault("idle_memory", {})[server.name] = idle.as_row()
        for records in [] if args.scenarios_only else args.records:
            for concurrency in args.concurrency:
                rows.append(run_point(server, sampler, concurrency, records, args, settings, tokenizer, log_dir))
        if server.name != "service":
            return
        if "mixed-priority" in args.scenarios:
            rows.extend(run_mixed_priority(server, sampler, args, settings, tokenizer, log_dir))
        if "repeated" in args.scenarios:
            rows.append(run_repeated(server, sampler, args, settings, tokenizer, log_dir))
        if "libretranslate" in args.scenarios:
            rows.extend(run_libretranslate(server, sampler, args, settings, tokenizer, log_dir))
        if "bulk" in args.scenarios:
            capacity = _capacity(rows, settings)
            rows.append(run_bulk(server, sampler, args, settings, tokenizer, capacity, log_dir))
        if "overload" in args.scenarios:
            capacity = _capacity(rows, settings)
            meta["overload_capacity_sentences_per_s"] = capacity
            rows.append(run_overload(server, sampler, args, settings, tokenizer, capacity, log_dir))


def _capacity(rows: Sequence[dict], settings: Settings) -> float:
    """Sentences/s the model can do: the offline limit at a full batch if it was measured, else the
    best closed loop of this run."""
    full = report.offline_full_batch(rows, settings.batching.max_batch_size)
    served = [r["sentences_per_s"] for r in rows if r["system"] == "service" and r["scenario"] is None]
    return float(full["sentences_per_s"]) if full else max(served, default=1.0)


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()

    model_dir, model_id, model_info = resolve_model(args)
    mach = machine()
    name = args.name or ("smoke" if args.smoke else ("cuda" if mach.get("device") not in (None, "cpu") else "cpu"))
    log_dir = args.logs or LOG_ROOT / name
    log_dir.mkdir(parents=True, exist_ok=True)
    forced = args.forced_new_tokens or None
    # One settings file per engine; everything but the engine is the same for all of them.
    engines = args.engines or [(None, None)]
    configs: list[tuple[str, Path, Settings]] = []
    for backend, dtype in engines:
        where = log_dir if len(engines) == 1 else log_dir / f"{backend}-{dtype}"
        config_path = where / "bentoconfiguration.yaml"
        settings = bench_config(
            config_path, args.beams, forced, args.max_latency_ms, args.linger_max_ms, backend, dtype
        )
        configs.append((engine_label(settings), config_path, settings))
    labels = [label for label, _, _ in configs]
    if len(set(labels)) != len(labels):
        raise SystemExit(f"--engines resolves to the same engine twice here: {', '.join(labels)}")
    settings = configs[0][2]
    workload.check_one_piece_per_record()
    offline_batches = args.offline_batch_sizes or sorted({1, settings.batching.max_batch_size})
    tokenizer = None
    if not tokens_exact(settings.generation):
        from transformers import M2M100Tokenizer

        tokenizer = M2M100Tokenizer.from_pretrained(str(model_dir))

    meta: dict[str, Any] = {
        "name": name,
        "command": "python -m bench " + shlex.join(argv),
        "smoke": args.smoke,
        "systems": args.systems,
        "concurrency": args.concurrency,
        "records": args.records,
        "scenarios": args.scenarios,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "baseline_workers": args.baseline_workers,
        "offline_batch_sizes": offline_batches,
        "model": model_info,
        "machine": mach,
        "git": git_state(),
        "settings": {
            "batching": dataclasses.asdict(settings.batching),
            "generation": dataclasses.asdict(settings.generation),
            "scheduling": dataclasses.asdict(settings.scheduling),
        },
        # The engines in the order measured; the first is the reference of the cross-engine targets.
        "engine": labels,
        # Per engine: its settings file and what its systems reported (report.engine_meta).
        "engines": {},
        "tokens_exact": tokens_exact(settings.generation),
        "memory": "peak over each point of the sum over the process tree: PSS sampled every 1 s "
        "(report's ratio), RSS every 0.25 s (upper bound: shared pages counted per process)",
        "log_dir": str(log_dir),
    }
    rows: list[dict] = []
    try:
        for label, config_path, engine_settings in configs:
            logger.info("engine %s", label)
            engine_meta: dict[str, Any] = {
                "config_yaml": config_path.read_text(encoding="utf-8"),
                "settings": dataclasses.asdict(engine_settings.engine),
                "log_dir": str(config_path.parent),
                "offline_batch_sizes": offline_batches,
            }
            meta["engines"][label] = engine_meta
            engine_rows: list[dict] = []
            try:
                run_systems(
                    args, model_dir, model_id, config_path, engine_settings, tokenizer, engine_meta, engine_rows
                )
            finally:
                for row in engine_rows:
                    row["engine"] = label
                rows.extend(engine_rows)
    except BaseException as exc:
        # A long run that fails late still leaves its finished points on disk, marked incomplete.
        meta["incomplete"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        meta["wall_s"] = round(time.perf_counter() - started, 1)
        if rows:
            write_results(args.output / name, meta, rows)
    return 0


def run_systems(
    args: argparse.Namespace,
    model_dir: Path,
    model_id: str,
    config_path: Path,
    settings: Settings,
    tokenizer: Any,
    meta: dict,
    rows: list[dict],
) -> None:
    """One engine's systems. Appends each point's row to `rows` as soon as it is measured."""
    log_dir = Path(meta["log_dir"])
    if choose(settings.engine)[0] == "ctranslate2":
        # The offline limit and the baseline read a checkpoint directory, not the store (where
        # save_model.py converts it for the service).
        model_dir = converted_twin(model_dir)
    if "offline" in args.systems:
        offline_batches = meta["offline_batch_sizes"]
        for batch_size in offline_batches:
            logger.info("offline limit, batch %d: %.0f s", batch_size, args.duration)
            row = run_offline(model_dir, config_path, batch_size, args.duration, log_dir)
            meta["offline_engine"] = row.pop("_engine")
            rows.append(row)
            logger.info(
                "offline batch %d: %.2f sentences/s, one batch %.3f s, peak PSS %s MiB",
                batch_size,
                row["sentences_per_s"],
                row["latency_p50_s"],
                row["peak_pss_mb"],
            )
        full = report.offline_full_batch(rows, settings.batching.max_batch_size)
        if full is not None:
            meta["one_model_process_pss_mb"] = full["peak_pss_mb"]
            meta["one_model_process_rss_mb"] = full["peak_rss_mb"]

    if "service" in args.systems:
        tag = register(model_id, args.home)
        meta["service_model_tag"] = tag
        logger.info("starting the service (%s)", tag)
        server = start_server(args.home, tag, log_dir / "service.log", config_path)
        try:
            run_server_points(server, args, settings, tokenizer, meta, rows)
        finally:
            meta["service_exit"] = server.stop()

    if "baseline" in args.systems:
        logger.info("starting the baseline (%d workers)", args.baseline_workers)
        server = servers.start_baseline(model_dir, config_path, args.baseline_workers, log_dir)
        try:
            run_server_points(server, args, settings, tokenizer, meta, rows)
        finally:
            meta["baseline_exit"] = server.stop()


def converted_twin(model_dir: Path) -> Path:
    """The checkpoint with its CTranslate2 conversion beside it, as the store keeps it: links to its
    files in a directory of the bench's own, converted once per checkpoint version, so the source
    directory (the shared test fixture, in smoke runs) is never written to."""
    if is_converted(model_dir):
        return model_dir
    files = sorted(path for path in model_dir.iterdir() if path.is_file())
    version = hashlib.sha256(
        "".join(f"{path.name}:{path.stat().st_size}:{path.stat().st_mtime_ns};" for path in files).encode()
    ).hexdigest()[:16]
    twin = ROOT / "build" / "bench-converted" / f"{model_dir.name}-{version}"
    if not is_converted(twin):
        logger.info("converting %s for CTranslate2 into %s", model_dir, twin)
        twin.mkdir(parents=True, exist_ok=True)
        for path in files:
            link = twin / path.name
            link.unlink(missing_ok=True)
            link.symlink_to(path.resolve())
        convert(model_dir, converted_path(twin))
    return twin


def write_results(prefix: Path, meta: dict, rows: list[dict]) -> None:
    checks = report.summary(rows, meta)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    report.write_json(prefix.with_suffix(".json"), meta, rows, checks)
    report.write_markdown(prefix.with_suffix(".md"), meta, rows, checks)
    report.write_plots(prefix, rows, meta)
    logger.info("wrote %s.json, .md and plots (%.0f s in all)", prefix, meta["wall_s"])
