"""The GPU request path on a CPU: the service against a stand-in for eager CUDA `generate` (#37).

On an H100 the service gave 512 one-record clients 0.17x of the engine's own offline rate at
batch 512, the GPU busy under 15% of the time, while no process was saturated: eager `generate` is
a Python loop that holds the interpreter lock to launch kernels, and in the engine process that
lock is also the event loop's. The GPU-shaped point of bench/frontend.py sleeps its batches (lock
free), so it never saw that. The stand-in here spends a batch as eager CUDA does: the H100's batch
times (translator/engine/backends/simulated_backend.py `H100_418M_EAGER`), in one step per output
token, each holding the lock for 63% of the step as CPU work and sleeping the rest (the GPU's 37%).

Each point is one server (batch limit 512, cache off) with the model runner as a thread of the
engine process (`thread`, as before #37) or a process of its own (`process`), under 512 one-record
clients and 32 sixteen-record clients (512 sentences in flight either way). Reported beside the
service's sentences/s and its ratio to the stand-in's offline limit (timed here, in this process,
at batch 512), so that the lock and the cores can be told apart on a 2-core machine:
- the model loop's own batch time in the service against the same batch offline (the lock
  stretches the held steps: x 1.0 is a model loop that had the lock to itself);
- the device's busy fraction (its sleeps over the window, from the curve at the mean batch),
  against the offline point's (37%): the GPU utilisation's stand-in;
- each process group's CPU in cores (engine, model runner, API workers), which shows when 2 cores
  are simply too few (the load generator, wrk, takes part of one too).
`--scale` multiplies the stand-in's times: at 1 it is the H100's speed, more requests a second
than 2 cores' API workers can parse; at 8 its offline limit (about 280 sentences/s) is within
what they can, so what is left between the two runners is the lock.

    python -m bench.standin                          # ~5 min on 2 cores: bench/results/standin.{json,md}
    python -m bench.standin --scales 8 --runners thread --duration 5   # a quick look
"""

from __future__ import annotations

import argparse
import copy
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.environment import machine
from bench.frontend import CpuMeter, checked_pass, lua_script, measured, requests_of
from bench.report import cell, write_page
from harness.servers import ROOT, register, start_server
from translator.config import API_SERVICE, DEFAULT_CONFIG_PATH, ENGINE_SERVICE, load_settings
from translator.engine.backends.simulated_backend import (
    H100_418M_EAGER,
    H100_EAGER_LOCK_SHARE,
    SimulatedBackend,
    batch_seconds,
)

BATCH = 512
RUNNERS = ("thread", "process")
# (clients, records per request): 512 sentences in flight either way.
LOADS = ((512, 1), (32, 16))
# Tokens each stand-in row generates: the steps of its batch (a fixture sentence's length).
OFFLINE_TOKENS = 12


def scaled(curve: Sequence[tuple[int, float]], scale: float) -> list[list[float]]:
    return [[size, seconds * scale] for size, seconds in curve]


def write_config(path: Path, runner: str, scale: float, lock_share: float, batch: int = BATCH) -> Path:
    config = copy.deepcopy(yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")))
    engine_service = config["services"][ENGINE_SERVICE]
    translation = engine_service.setdefault("translation", {})
    engine = translation.setdefault("engine", {})
    engine.update(
        backend="simulated",
        simulated_batch_s=scaled(H100_418M_EAGER, scale),
        simulated_lock_share=lock_share,
        runner=runner,
        max_batch_tokens=1 << 20,  # the curve is the cost, not a token budget
    )
    translation.setdefault("cache", {})["size"] = 0
    engine_service["batching"]["max_batch_size"] = batch
    api = config["services"][API_SERVICE]["translation"]
    api.setdefault("admission", {})["max_concurrency"] = 4 * max(clients for clients, _ in LOADS)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"# bench/standin.py, runner {runner}\n" + yaml.safe_dump(config, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    load_settings(path)  # validated as the server will read it
    return path


def write_real_config(path: Path, engine: str, runner: str) -> Path:
    """The fixture on a real engine (`backend:dtype`), cache off, as shipped else."""
    backend, _, dtype = engine.partition(":")
    config = copy.deepcopy(yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")))
    translation = config["services"][ENGINE_SERVICE].setdefault("translation", {})
    translation.setdefault("engine", {}).update(backend=backend, dtype=dtype, runner=runner)
    translation.setdefault("cache", {})["size"] = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# bench/standin.py, {engine}, runner {runner}\n" + yaml.safe_dump(config), encoding="utf-8")
    load_settings(path)
    return path


def run_real(engine: str, runner: str, args: argparse.Namespace, tag: str) -> dict[str, Any]:
    """A real engine beside the stand-in: the engine process's CPU per one-record call, and what a
    thread or a process of its own does to the model's batches (32 one-record clients, the fixture)."""
    name = f"{engine.replace(':', '-')}-{runner}"
    config = write_real_config(args.logs / f"{name}.yaml", engine, runner)
    server = start_server(args.home, tag, args.logs / f"{name}.log", config)
    try:
        jobs = requests_of(1, 64, echo=False)
        checked_pass(server, jobs)
        script = lua_script(args.logs / f"{name}.lua", "/translation", [j.body for j in jobs])
        row = measured(server, CpuMeter(server), 32, args.duration, "/translation", script, 1)
        row.update(runner=runner, scale=f"fixture, {engine}", load="1 record x 32")
        row["sentences_per_s"] = row["requests_per_s"]
        return row
    finally:
        server.stop()


def offline_batch_s(scale: float, lock_share: float, batch: int = BATCH, repeats: int = 3) -> float:
    """The stand-in's own time for a batch of `batch` rows, nothing else running in this process:
    the offline limit's denominator (the fastest of `repeats`)."""
    backend = SimulatedBackend(scaled(H100_418M_EAGER, scale), lock_share=lock_share)  # type: ignore[arg-type]
    rows = [[1, *range(10, 10 + OFFLINE_TOKENS), 2]] * batch
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        backend.generate(rows, [0] * batch, max_new_tokens=OFFLINE_TOKENS)
        times.append(time.perf_counter() - started)
    return min(times)


def derived(row: dict[str, Any], scale: float, lock_share: float, offline_s: float) -> dict[str, Any]:
    """The stand-in's columns: sentences/s against the offline limit, the model loop's batch time
    against the same batch offline, the device's busy fraction against the offline point's."""
    sentences = row["requests_per_s"] * row["pieces_per_request"]
    batches, mean = row["batches"], row["mean_batch_pieces"]
    curve_s = batch_seconds(scaled(H100_418M_EAGER, scale), round(mean)) if mean else None  # type: ignore[arg-type]
    offline_rate = BATCH / offline_s
    busy = batches * (1 - lock_share) * curve_s / row["window_s"] if curve_s else 0.0
    return {
        "sentences_per_s": sentences,
        "offline_limit_sentences_per_s": offline_rate,
        "vs_offline_limit": sentences / offline_rate,
        "service_batch_s": row["batch_seconds"] / batches if batches else None,
        "offline_batch_s_at_mean": curve_s,
        "batch_stretch": (row["batch_seconds"] / batches) / curve_s if batches and curve_s else None,
        "device_busy": busy,
        "device_busy_vs_offline": busy / (1 - lock_share) if lock_share < 1 else None,
    }


def run_runner(
    runner: str, scale: float, lock_share: float, offline_s: float, args: argparse.Namespace, tag: str
) -> list[dict[str, Any]]:
    name = f"standin-x{scale:g}-{runner}"
    config = write_config(args.logs / f"{name}.yaml", runner, scale, lock_share)
    server = start_server(args.home, tag, args.logs / f"{name}.log", config)
    try:
        meter = CpuMeter(server)
        rows = []
        for clients, records in LOADS:
            jobs = requests_of(records, max(clients, 64), echo=True)
            checked_pass(server, jobs[:64])
            script = lua_script(args.logs / f"{name}-{records}.lua", "/translation", [j.body for j in jobs])
            row = measured(server, meter, clients, args.duration, "/translation", script, records)
            row.update(runner=runner, scale=scale, load=f"{records} record{'s' * (records > 1)} x {clients}")
            rows.append({**row, **derived(row, scale, lock_share, offline_s)})
        return rows
    finally:
        server.stop()


def report(meta: dict[str, Any], rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "# The GPU request path on a CPU: the service against the eager-CUDA stand-in",
        "",
        f"`{meta['command']}` at {meta['git']}, {meta['machine']['cpu']}, {meta['machine']['cores']} cores,"
        f" {meta['date']}. Stand-in: the H100's eager batch times x scale, {meta['lock_share']:.0%} of each step"
        f" holding the interpreter lock; batch limit {BATCH}, cache off; wrk -t1, {meta['seconds']} s a load."
        " Cores: each process group's CPU over the load; engine ms/request: the engine process's CPU per call"
        " (event loop, cache, scheduler, tokenizer, and the model too where the runner is a thread).",
        "",
        "| scale | runner | load | sentences/s | offline limit | x offline | mean batch | batch s in service |"
        " batch s offline | stretch | device busy | x offline busy | engine cores | runner cores | API cores |"
        " engine ms/request | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        batch_s = r.get("service_batch_s") or (r["batch_seconds"] / r["batches"] if r["batches"] else None)
        scale = r["scale"] if isinstance(r["scale"], str) else f"{r['scale']:g}"
        lines.append(
            f"| {scale} | {r['runner']} | {r['load']} | {r['sentences_per_s']:.0f} |"
            f" {cell(r.get('offline_limit_sentences_per_s'), 0)} | {cell(r.get('vs_offline_limit'))} |"
            f" {cell(r['mean_batch_pieces'], 0)} | {cell(batch_s, 3)} | {cell(r.get('offline_batch_s_at_mean'), 3)} |"
            f" {cell(r.get('batch_stretch'))} | {cell(r.get('device_busy'))} |"
            f" {cell(r.get('device_busy_vs_offline'))} |"
            f" {cell(r['engine_cores'])} | {cell(r['runner_cores'])} | {cell(r['api_cores'])} |"
            f" {cell(r['engine_cpu_ms_per_request'], 3)} | {cell(r['p50_ms'], 0)} | {cell(r['p99_ms'], 0)} |"
            f" {r['non_2xx'] + r['socket_errors'] + r['engine_refusals']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.standin", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runners", default=",".join(RUNNERS), help=f"any of {', '.join(RUNNERS)}")
    parser.add_argument("--scales", default="1,8", help="multipliers of the stand-in's batch times, a server each")
    parser.add_argument("--lock-share", type=float, default=H100_EAGER_LOCK_SHARE)
    parser.add_argument("--real", default="", help="also the fixture on these engines (backend:dtype,...)")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds per load")
    parser.add_argument("--name", default="standin")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--home", type=Path, default=ROOT / "build" / "bench-home")
    parser.add_argument("--logs", type=Path, default=ROOT / "build" / "bench-logs" / "standin")
    parser.add_argument("--model", type=Path, default=ROOT / "build" / "fixture-model")
    args = parser.parse_args(argv)
    runners = [r for r in args.runners.split(",") if r]
    if unknown := set(runners) - set(RUNNERS):
        parser.error(f"unknown runners: {sorted(unknown)}")
    tag = register(args.model, args.home)
    args.logs.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for engine in (e for e in args.real.split(",") if e):
        rows += [run_real(engine, runner, args, tag) for runner in runners]
    for scale in (float(s) for s in args.scales.split(",") if s):
        offline_s = offline_batch_s(scale, args.lock_share)
        for runner in runners:
            rows += run_runner(runner, scale, args.lock_share, offline_s, args, tag)
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    meta = {
        "command": "python -m bench.standin " + " ".join(argv if argv is not None else sys.argv[1:]),
        "git": git.stdout.strip(),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": args.duration,
        "lock_share": args.lock_share,
        "pid": os.getpid(),
    }
    write_page(args.output, args.name, {"meta": meta, "rows": rows}, report(meta, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
