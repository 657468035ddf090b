"""The per-request baseline server of the benchmark, started like the service (harness/
starts both: one launcher), in its own process group on a free port.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench import baseline_server
from harness.servers import Server, free_port, spawn, wait_ready


def start_baseline(model_dir: Path, config: Path, workers: int, log_dir: Path) -> Server:
    port = free_port()
    stats_dir = log_dir / "baseline-stats"
    if stats_dir.exists():
        for stale in stats_dir.iterdir():
            stale.unlink()
    stats_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        baseline_server.MODEL_ENV: str(model_dir),
        baseline_server.CONFIG_ENV: str(config),
        baseline_server.WORKERS_ENV: str(workers),
        baseline_server.STATS_ENV: str(stats_dir),
    }
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "bench.baseline_server:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    server = spawn("baseline", command, env, log_dir / "baseline.log", port)
    server.extra["workers"] = workers
    return wait_ready(server, "/stats", lambda response: response.json()["ready_workers"] >= workers)
