"""The request path with the model's work removed: what the API workers and the engine process
cost per request, and whether they could keep a GPU busy (issue #31).

Three servers, one after the other, each the repository's configuration with a few changes, on
the fixture model's tokenizer:
- `cache`: as shipped, every request a sentence-cache hit after one checked pass (the engine's
  model does nothing);
- `instant`: the simulated backend answering at once, cache off (every piece through the
  scheduler and the model's thread);
- `gpu-shaped`: the simulated backend with a GPU's batch times (the H200 curve of the 418M model,
  translator/engine/backends/simulated_backend.py) at `max_batch_size` 512, cache off, with
  256-1,024 one-record clients: the service against that backend's offline limit.

Load comes from `wrk` (Debian's package), a C client: at thousands of requests a second a Python
client would take a core of the two this machine has. Every server first answers a checked pass
of the same requests through harness/load.py (ids, order, texts). CPU per request is read per
process (engine, API workers) from /proc over each point. `/livez` on the same server is the floor.

    python -m bench.frontend                     # ~6 min on 2 cores; bench/results/frontend.{json,md}
    python -m bench.frontend --duration 5 --points cache   # a quick look
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
import yaml

from bench.environment import machine
from bench.report import cell, write_page
from harness.corpus import corpus_sentences
from harness.load import Job, job, libretranslate_job, run_load
from harness.metrics import histogram_totals, samples
from harness.servers import ROOT, Server, register, start_server
from translator.config import API_SERVICE, DEFAULT_CONFIG_PATH, ENGINE_SERVICE, load_settings
from translator.engine.backends.simulated_backend import H200_418M_GREEDY, batch_seconds
from translator.shm.engine_process import engine_pids

POINTS = ("cache", "instant", "gpu-shaped")
# The batch sizes a GPU asks for (docs/batching.md: an H200 gains up to 512 on the 418M), each on
# a server of its own, under the client counts that can fill them.
GPU_BATCHES = (128, 256, 512)
GPU_CLIENTS = (256, 512, 1024)
CLIENTS = 32  # the measure: wrk -t1 -c32
SIXTEEN = 16
# Longer windows a load gets when one measured not a single request (measured())
WINDOW_RETRIES = 3


def write_config(path: Path, point: str, gpu_batch: int = GPU_BATCHES[-1]) -> Path:
    config = copy.deepcopy(yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")))
    engine_service = config["services"][ENGINE_SERVICE]
    translation = engine_service.setdefault("translation", {})
    if point != "cache":
        translation.setdefault("engine", {})["backend"] = "simulated"
        translation.setdefault("cache", {})["size"] = 0
    if point == "gpu-shaped":
        translation["engine"]["simulated_batch_s"] = [list(p) for p in H200_418M_GREEDY]
        translation["engine"]["max_batch_tokens"] = 1 << 20  # the curve is the cost, not a token budget
        engine_service["batching"]["max_batch_size"] = gpu_batch
        api = config["services"][API_SERVICE]["translation"]
        api.setdefault("admission", {})["max_concurrency"] = 4 * max(GPU_CLIENTS)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# bench/frontend.py, point {point}\n" + yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    load_settings(path)  # validated as the server will read it
    return path


def requests_of(records: int, count: int, echo: bool) -> list[Job]:
    """`count` distinct requests of `records` en->fr records each, with their exact answers: the
    fixture's translations, or (`echo`, the simulated backend) the sources themselves."""
    pairs = [(s, t) for lang, tgt, s, t in corpus_sentences() if (lang, tgt) == ("en", "fr")]
    out = []
    for i in range(count):
        chosen = [pairs[(i * records + k) % len(pairs)] for k in range(records)]
        expected = [s if echo else t for s, t in chosen]
        out.append(job("en", "fr", [s for s, _ in chosen], expected, prefix=f"r{i}-"))
    return out


def lua_script(path: Path, url_path: str, payloads: Sequence[dict]) -> Path:
    """A wrk script cycling over `payloads` (JSON bodies) on POST `url_path`."""
    literals = ",\n".join(f"[==[{json.dumps(p, ensure_ascii=False)}]==]" for p in payloads)
    path.write_text(
        f"local bodies = {{\n{literals}\n}}\nlocal i = 0\n"
        'local headers = {["Content-Type"] = "application/json"}\n'
        "request = function()\n  i = i % #bodies + 1\n"
        f'  return wrk.format("POST", "{url_path}", headers, bodies[i])\nend\n',
        encoding="utf-8",
    )
    return path


def wrk(url: str, clients: int, seconds: float, script: Path | None = None) -> dict[str, Any]:
    command = ["wrk", "-t1", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "60s"]
    if script is not None:
        command += ["-s", str(script)]
    done = subprocess.run([*command, url], capture_output=True, text=True, check=True)
    out = done.stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)\b", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    return {
        "requests_per_s": rate,
        "requests": total,
        "non_2xx": int(bad.group(1)) if bad else 0,
        "socket_errors": sum(int(g) for g in errors.groups()) if errors else 0,
        "p50_ms": _ms(p50),
        "p99_ms": _ms(p99),
    }


def _ms(match: re.Match[str] | None) -> float | None:
    if match is None:
        return None
    value, unit = float(match.group(1)), match.group(2)
    return value * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


class CpuMeter:
    """CPU seconds of one server's engine processes, of their model runner processes (where the
    model runs in a process of its own, translator/engine/model_runner.py) and of its API workers,
    over a point."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def processes(self) -> tuple[list[psutil.Process], list[psutil.Process], list[psutil.Process]]:
        engines = set(engine_pids(self.server.pid))
        children = psutil.Process(self.server.pid).children()
        engine = [p for p in children if p.pid in engines]
        runners = [r for p in engine for r in _children(p, recursive=True)]
        return engine, runners, [p for p in children if p.pid not in engines]

    def read(self) -> tuple[float, float, float]:
        """CPU seconds so far: engine processes, runner processes, API workers."""
        engines, runners, workers = self.processes()
        return _cpu(engines), _cpu(runners), _cpu(workers)


def _children(process: psutil.Process, recursive: bool = False) -> list[psutil.Process]:
    try:
        return process.children(recursive=recursive)
    except psutil.NoSuchProcess:
        return []


def _cpu(processes: Sequence[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        with _gone():
            times = process.cpu_times()
            total += times.user + times.system
    return total


class _gone:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, *_: Any) -> bool:
        return kind is not None and issubclass(kind, psutil.NoSuchProcess)


def measured(
    server: Server,
    meter: CpuMeter,
    clients: int,
    seconds: float,
    path: str,
    script: Path | None,
    pieces_per_request: int,
) -> dict[str, Any]:
    wrk(server.url + path, clients, min(3.0, seconds), script)  # warm-up, unmeasured
    # A window in which not one request finished (a short smoke point on a slow or busy machine:
    # every connection still waiting for its first batch) measures nothing: said, and measured
    # again in a window twice as long, up to WINDOW_RETRIES times.
    for attempt in range(WINDOW_RETRIES + 1):
        before = meter.read()
        metrics_before, started = server.metrics(), time.monotonic()
        row = wrk(server.url + path, clients, seconds * 2**attempt, script)
        after = meter.read()
        metrics_after, window = server.metrics(), time.monotonic() - started
        if row["requests"] > 0:
            break
        print(  # noqa: T201 - the command's own progress
            f"{server.url}{path}, {clients} clients: no request finished in {window:.1f} s; "
            + ("measuring again in a longer window" if attempt < WINDOW_RETRIES else "giving up"),
            file=sys.stderr,
            flush=True,
        )
    row["window_retries"] = attempt
    done = max(1, row["requests"])
    engine_s, runner_s, api_s = (b - a for a, b in zip(before, after, strict=True))
    row.update(
        path=path,
        clients=clients,
        pieces_per_request=pieces_per_request,
        window_s=window,
        engine_cpu_ms_per_request=1000 * engine_s / done,
        runner_cpu_ms_per_request=1000 * runner_s / done,
        api_cpu_ms_per_request=1000 * api_s / done,
        # Each process group's CPU as cores over the window: which one, if any, is saturated.
        engine_cores=engine_s / window,
        runner_cores=runner_s / window,
        api_cores=api_s / window,
    )
    row["engine_cpu_ms_per_piece"] = row["engine_cpu_ms_per_request"] / max(1, pieces_per_request)
    pieces_sum = [histogram_totals(m, "translation_batch_pieces") for m in (metrics_before, metrics_after)]
    batches = pieces_sum[1][1] - pieces_sum[0][1]
    row["batches"] = batches
    row["mean_batch_pieces"] = (pieces_sum[1][0] - pieces_sum[0][0]) / batches if batches else None
    # The model loop's time between batches: under a load that keeps work queued, its linger (the
    # wait for the callers the last batch answered) and its own overhead.
    busy = [histogram_totals(m, "translation_batch_seconds")[0] for m in (metrics_before, metrics_after)]
    row["batch_seconds"] = busy[1] - busy[0]
    # (A batch running as the window opens counts whole: at 0 when the gaps are shorter than that.)
    gap = max(0.0, window - (busy[1] - busy[0]))
    row["gap_ms_per_batch"] = 1000 * gap / batches if batches else None
    refused = [
        sum(v for _, v in samples(m, "translation_refused_requests_total")) for m in (metrics_before, metrics_after)
    ]
    row["engine_refusals"] = refused[1] - refused[0]
    return row


def checked_pass(server: Server, jobs: Sequence[Job]) -> None:
    """Every request once, answers checked (and, for the cache point, cached from then on)."""
    result = run_load(server.url, jobs, 8)
    wrong = {k: v for k, v in result.kinds.items() if k != "ok"}
    if wrong:
        raise RuntimeError(f"checked pass failed on {server.url}: {wrong}")


def run_point(
    point: str, home: Path, tag: str, logs: Path, seconds: float, scripts: Path, gpu_batch: int | None = None
) -> list[dict[str, Any]]:
    name = point if gpu_batch is None else f"{point}-{gpu_batch}"
    config = write_config(logs / f"{name}.yaml", point, gpu_batch or GPU_BATCHES[-1])
    server = start_server(home, tag, logs / f"{name}.log", config)
    try:
        meter = CpuMeter(server)
        rows = []
        echo = point != "cache"
        one, sixteen = requests_of(1, 64, echo), requests_of(SIXTEEN, 16, echo)
        libre = [libretranslate_job(j) for j in one]
        checked_pass(server, [*one, *sixteen, *libre])
        if point == "gpu-shaped":
            many = requests_of(1, 2048, echo)
            checked_pass(server, many[:256])
            script = lua_script(scripts / "gpu-one.lua", "/translation", [j.body for j in many])
            rows.append({"load": "livez", **measured(server, meter, CLIENTS, seconds, "/livez", None, 0)})
            for clients in GPU_CLIENTS:
                rows.append(
                    {
                        "load": f"1 record x {clients}",
                        **measured(server, meter, clients, seconds, "/translation", script, 1),
                    }
                )
        else:
            rows.append({"load": "livez", **measured(server, meter, CLIENTS, seconds, "/livez", None, 0)})
            script = lua_script(scripts / f"{point}-one.lua", "/translation", [j.body for j in one])
            rows.append({"load": "1 record", **measured(server, meter, CLIENTS, seconds, "/translation", script, 1)})
            script = lua_script(scripts / f"{point}-sixteen.lua", "/translation", [j.body for j in sixteen])
            rows.append(
                {"load": "16 records", **measured(server, meter, CLIENTS, seconds, "/translation", script, SIXTEEN)}
            )
            script = lua_script(scripts / f"{point}-libre.lua", "/libretranslate/translate", [j.body for j in libre])
            rows.append(
                {
                    "load": "LibreTranslate 1 text",
                    **measured(server, meter, CLIENTS, seconds, "/libretranslate/translate", script, 1),
                }
            )
        livez = rows[0]["requests_per_s"]
        for row in rows:
            row["point"] = point
            row["batch_limit"] = gpu_batch
            row["vs_livez"] = row["requests_per_s"] / livez if livez else None
            if gpu_batch is not None and row["pieces_per_request"]:
                limit = gpu_batch / batch_seconds(H200_418M_GREEDY, gpu_batch)
                row["offline_limit_sentences_per_s"] = limit
                row["vs_offline_limit"] = row["requests_per_s"] / limit
        return rows
    finally:
        server.stop()


def report(meta: dict[str, Any], rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "# Front end: the request path with the model's work removed",
        "",
        f"`{meta['command']}` at {meta['git']}, {meta['machine']['cpu']}, {meta['machine']['cores']} cores,"
        f" {meta['date']}. wrk -t1, {CLIENTS} connections unless the load says otherwise, {meta['seconds']} s a point.",
        "",
        "| point | batch limit | load | requests/s | x /livez | engine CPU ms/request | engine ms/piece |"
        " API CPU ms/request | mean batch | gap ms/batch | p50 ms | p99 ms | non-2xx | engine refusals |"
        " x offline limit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        per_piece = r["engine_cpu_ms_per_piece"] if r["pieces_per_request"] else None
        lines.append(
            f"| {r['point']} | {cell(r.get('batch_limit'))} | {r['load']} | {r['requests_per_s']:.0f} |"
            f" {cell(r['vs_livez'])} | {cell(r['engine_cpu_ms_per_request'], 3)} | {cell(per_piece, 3)} |"
            f" {cell(r['api_cpu_ms_per_request'], 3)} | {cell(r['mean_batch_pieces'], 1)} |"
            f" {cell(r['gap_ms_per_batch'] if r['pieces_per_request'] else None, 1)} | {cell(r['p50_ms'], 1)} |"
            f" {cell(r['p99_ms'], 1)} | {r['non_2xx'] + r['socket_errors']} | {cell(r['engine_refusals'], 0)} |"
            f" {cell(r.get('vs_offline_limit'))} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.frontend", description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", default=",".join(POINTS), help=f"any of {', '.join(POINTS)}")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds per load")
    parser.add_argument(
        "--gpu-batches",
        default=",".join(map(str, GPU_BATCHES)),
        help="the gpu-shaped point's batch limits, a server each",
    )
    parser.add_argument("--name", default="frontend")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--home", type=Path, default=ROOT / "build" / "bench-home")
    parser.add_argument("--logs", type=Path, default=ROOT / "build" / "bench-logs" / "frontend")
    parser.add_argument("--model", type=Path, default=ROOT / "build" / "fixture-model")
    args = parser.parse_args(argv)
    points = [p for p in args.points.split(",") if p]
    if unknown := set(points) - set(POINTS):
        parser.error(f"unknown points: {sorted(unknown)}")
    if shutil.which("wrk") is None:
        print("bench.frontend needs wrk (apt-get install wrk)", file=sys.stderr)  # noqa: T201
        return 2
    tag = register(args.model, args.home)
    args.logs.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    gpu_batches = [int(b) for b in args.gpu_batches.split(",") if b]
    for point in points:
        for gpu_batch in gpu_batches if point == "gpu-shaped" else [None]:
            rows += run_point(point, args.home, tag, args.logs, args.duration, args.logs, gpu_batch)
    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    meta = {
        "command": "python -m bench.frontend " + " ".join(argv if argv is not None else sys.argv[1:]),
        "git": git,
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": args.duration,
        "pid": os.getpid(),
    }
    write_page(args.output, args.name, {"meta": meta, "rows": rows}, report(meta, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
