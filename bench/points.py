"""One measured point of a system: the offline limit in a child process, or a closed loop of
clients against a server, with what the server and this process did meanwhile (bench/rows.py)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import requests

from bench import offline, workload
from bench.environment import GpuSampler
from bench.memory import MemorySampler
from bench.rows import Row
from bench.tokens import generated_tokens, outputs_path, write_outputs
from harness.load import LoadResult, run_load
from harness.metrics import histogram_totals
from harness.servers import ROOT, Server
from translator.config import Settings

logger = logging.getLogger("bench")

OFFLINE_TIMEOUT_S = 1800


def run_offline(
    model_dir: Path, config: Path, batch_size: int, duration_s: float, log_dir: Path, order: str = "sorted"
) -> dict:
    """The offline limit at `batch_size` (bench/offline.py): length-sorted batches, or in `arrival`
    order the stream cut as it comes (the row's scenario then says so)."""
    name = "-".join(part for part in (f"offline-{batch_size}", offline.scenario(order)) if part)
    spec = log_dir / f"{name}.spec.json"
    out = log_dir / f"{name}.json"
    spec.write_text(
        json.dumps(
            {
                "model_dir": str(model_dir),
                "config": str(config),
                "batch_size": batch_size,
                "duration_s": duration_s,
                "order": order,
            }
        )
    )
    out.unlink(missing_ok=True)
    log_path = log_dir / f"{name}.log"
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
    row = Row(
        system="offline",
        scenario=offline.scenario(order),
        batch_size=batch_size,
        requests=len(result["batch_times_s"]),
        sentences=result["sentences"],
        seconds=seconds,
        generated_tokens=result["generated_tokens"],
        latencies_s=result["batch_times_s"],
        mean_batch_size=float(batch_size),
        model_calls=len(result["batch_times_s"]),
        memory=peak.as_row(),
        extra={"_engine": {k: result[k] for k in ("engine", "torch", "torch_threads", "cuda_device", "load_s")}},
    )
    return row.as_dict()


def server_stats(server: Server) -> tuple[float, float]:
    """(pieces, model calls) so far, as the server counts them."""
    if server.name == "service":
        return histogram_totals(server.metrics(), "translation_batch_pieces")
    stats = requests.get(f"{server.url}/stats", timeout=30).json()
    return float(stats["pieces"]), float(stats["calls"])


@dataclass(frozen=True)
class Setup:
    """What every point measured on one server is run and written with: the server, the sampler of
    its memory, the run's options, the service's settings, the tokenizer that counts generated
    tokens, and where the outputs go."""

    server: Server
    sampler: MemorySampler
    args: argparse.Namespace
    settings: Settings
    tokenizer: Any
    log_dir: Path


def run_point(setup: Setup, concurrency: int, records: int) -> dict:
    url, args = setup.server.url, setup.args
    stream = (request.job() for request in workload.requests(records, workload.epoch_of(concurrency, records)))
    if args.warmup > 0:
        # The same closed loop, not measured; returns when the requests in flight are answered.
        run_load(url, stream, concurrency, args.warmup)
    with Point(setup) as point:
        result = run_load(url, stream, concurrency, args.duration)
    return load_row(setup, point, result, concurrency, records)


class Point:
    """What the server and this process did during one measured point: pieces, calls, CPU, memory."""

    def __init__(self, setup: Setup) -> None:
        self.server = setup.server
        self.sampler = setup.sampler

    def __enter__(self) -> Point:
        self.pieces_before, self.calls_before = server_stats(self.server)
        self.sampler.reset()
        self.cpu_before = sum(psutil.Process().cpu_times()[:2])
        self.server_cpu_before = server_cpu(self.server)
        self.gpu = GpuSampler().__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.gpu.__exit__(*exc)
        self.cpu_s = sum(psutil.Process().cpu_times()[:2]) - self.cpu_before
        # Per process, so that a worker started or gone meanwhile counts from zero or not at all.
        self.role_cpu_s = dict.fromkeys(ROLES, 0.0)
        for pid, (cpu_s, role) in server_cpu(self.server).items():
            self.role_cpu_s[role] += cpu_s - self.server_cpu_before.get(pid, (0.0, role))[0]
        self.peak = self.sampler.peak()
        pieces_after, calls_after = server_stats(self.server)
        self.calls = calls_after - self.calls_before
        self.pieces = pieces_after - self.pieces_before


# A server's processes: its engines, their model runners (translator/engine/model_runner.py), and
# the rest (API workers, and BentoML's arbiter, which does next to nothing).
ROLES = ("engine", "runner", "api")


def server_cpu(server: Server) -> dict[int, tuple[float, str]]:
    """CPU seconds (user + system) of each process of the server, and its role (`ROLES`)."""
    from translator.shm.engine_process import engine_pids

    try:
        root = psutil.Process(server.process.pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return {}
    engines = set(engine_pids(server.process.pid))
    out = {}
    for process in processes:
        try:
            # The runner's own children (torch's compile workers) count as the runner's.
            below_engine = any(parent.pid in engines for parent in process.parents())
            role = "engine" if process.pid in engines else "runner" if below_engine else "api"
            out[process.pid] = (sum(process.cpu_times()[:2]), role)
        except psutil.NoSuchProcess:
            continue
    return out


def load_row(
    setup: Setup,
    point: Point,
    result: LoadResult,
    concurrency: int,
    records: int,
    *,
    priority: str | None = None,
    scenario: str | None = None,
    seconds: float | None = None,
    point_requests: int | None = None,
) -> dict:
    """`seconds`: the time the load ran when it is not the result's span (halves taken in turn);
    `point_requests`: every request of the point, where other loads ran beside this one."""
    server = setup.server
    seconds = result.seconds if seconds is None else seconds
    tokens = generated_tokens(setup.tokenizer, result.texts, setup.settings.generation)
    path = outputs_path(setup.log_dir, server.name, concurrency, records, None, scenario, priority)
    write_outputs(path, result.texts)
    refusals = result.refusals
    handled = result.requests if point_requests is None else point_requests
    row = Row(
        system=server.name,
        concurrency=concurrency,
        records_per_request=records,
        priority=priority,
        scenario=scenario,
        requests=result.requests,
        failed_requests=result.failed,
        outcomes=dict(result.kinds),
        sentences=result.sentences,
        seconds=seconds,
        generated_tokens=tokens,
        latencies_s=result.latencies_s,
        refusal_latencies_s=[o.seconds for o in refusals],
        refusals_without_retry_after=sum(not o.headers.get("retry-after", "").isdigit() for o in refusals),
        mean_batch_size=point.pieces / point.calls if point.calls else None,
        model_calls=int(point.calls),
        memory=point.peak.as_row(),
        client_cpu_s=point.cpu_s,
        first_failure=result.first_failure,
        extra={
            # The server's CPU in the point, API side and engine, and the API's per request handled
            # (refusals included): in a refusal storm, what a refusal costs.
            "api_cpu_s": round(point.role_cpu_s["api"], 3),
            "engine_cpu_s": round(point.role_cpu_s["engine"], 3),
            "runner_cpu_s": round(point.role_cpu_s["runner"], 3),
            "api_cpu_ms_per_request": round(1000 * point.role_cpu_s["api"] / handled, 3) if handled else None,
            # The GPU over the point (nvidia-smi), where there is one: busy fraction, memory, power.
            **(point.gpu.summary() or {}),
        },
    ).as_dict()
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
