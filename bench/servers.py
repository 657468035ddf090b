"""Starting and stopping the two servers under test, each in its own process group on a free port.

The service is started exactly as tests/conftest.py does it (the same command as `make serve`):
`bentoml serve service:Translation` with BENTOML_HOME, TRANSLATOR_MODEL and BENTOML_CONFIG set.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests

from bench import baseline_server

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 900  # a 418M model on a busy 2-core CPU, twice over for the baseline


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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

    def log_tail(self, chars: int = 5000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""

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


def _spawn(name: str, command: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def _wait_ready(server: Server, ready: str, check: Callable[[requests.Response], bool]) -> Server:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            response = requests.get(f"{server.url}{ready}", timeout=10)
            if response.status_code == 200 and check(response):
                return server
        except requests.RequestException:
            pass
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"{server.name} not ready after {START_TIMEOUT_S}s:\n{server.log_tail()}")


def start_service(bentoml_home: Path, model_tag: str, config: Path, log_dir: Path) -> Server:
    port = free_port()
    env = {
        **os.environ,
        "BENTOML_HOME": str(bentoml_home),
        "TRANSLATOR_MODEL": model_tag,
        "BENTOML_CONFIG": str(config),
        "BENTOML_DO_NOT_TRACK": "true",
    }
    command = [
        sys.executable,
        "-m",
        "bentoml",
        "serve",
        "service:Translation",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    log_path = log_dir / "service.log"
    process = _spawn("service", command, env, log_path)
    server = Server("service", f"http://127.0.0.1:{port}", process, log_path)
    return _wait_ready(server, "/readyz", lambda _: True)


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
    log_path = log_dir / "baseline.log"
    process = _spawn("baseline", command, env, log_path)
    server = Server("baseline", f"http://127.0.0.1:{port}", process, log_path, {"workers": workers})
    return _wait_ready(server, "/stats", lambda response: response.json()["ready_workers"] >= workers)
