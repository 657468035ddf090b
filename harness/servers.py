"""Starting the service as `make serve` does (a real `bentoml serve` on a free port), waiting for it,
stopping it; and small stand-in servers for clients under test."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import requests

from harness.processes import marked, stop_tree
from translator.contract.limits import KEEP_ALIVE_S
from translator.contract.protocol import NEVER_READY

ROOT = Path(__file__).resolve().parent.parent


# A 418M model on a busy 2-core CPU; the fixture model is ready in well under a minute. Shorter
# where a whole run has a hard limit (bench/gpu_check.sh on a lent GPU: HARNESS_START_TIMEOUT_S).
START_TIMEOUT_S = float(os.environ.get("HARNESS_START_TIMEOUT_S", "900"))
# What `make serve` and the image add to `bentoml serve` (translator/contract/limits.py says why).
SERVE_FLAGS = ("--timeout-keep-alive", str(KEEP_ALIVE_S))


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
    # As started (its mark finds orphaned workers); never printed: it may hold API keys.
    env: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_size(self) -> int:
        """Where the log ends now: `log(since=...)` reads only what is written after it."""
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log(self, since: int = 0) -> str:
        try:
            with self.log_path.open(encoding="utf-8", errors="replace") as file:
                file.seek(since)
                return file.read()
        except OSError:
            return ""

    def log_tail(self, chars: int = 5000) -> str:
        return self.log()[-chars:]

    def metrics(self) -> str:
        return requests.get(f"{self.url}/metrics", timeout=30).text

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def listening(self) -> bool:
        """Whether this server's own processes (it or a child: BentoML's arbiter binds the socket
        and hands it to its workers) listen on its port."""
        try:
            root = psutil.Process(self.process.pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return False
        for process in processes:
            with contextlib.suppress(psutil.Error):
                for connection in process.net_connections(kind="tcp"):
                    if connection.status == psutil.CONN_LISTEN and connection.laddr.port == self.port:
                        return True
        return False

    def lost_its_port(self) -> bool:
        """Whether it exited because another process took its port first."""
        return self.process.poll() is not None and "address already in use" in self.log().lower()

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM to the whole process group, SIGKILL after `timeout` seconds; then SIGKILL to any
        worker that outlived it (harness/processes.py), which would keep the port and the memory."""
        return stop_tree(self.process, grace_s=timeout, env=self.env)


def spawn(name: str, command: list[str], env: dict[str, str], log_path: Path, port: int) -> Server:
    """Start a server process in its own process group, its output in `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = marked(env)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    return Server(name, f"http://127.0.0.1:{port}", process, log_path, env=env)


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
        if path == "/readyz" and NEVER_READY in server.log():
            server.stop()
            raise RuntimeError(f"{server.name} says it will not be ready:\n{server.log_tail()}")
        try:
            response = requests.get(f"{server.url}{path}", timeout=10)
            # Ready is this server's answer, not the answer of whatever holds the port: a free
            # port is free when picked, and another test's server may take it before this one
            # binds it (then this one exits, and the answer came from the other).
            if response.status_code == 200 and check(response) and server.listening():
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
    command = [sys.executable, "-m", "bentoml", "serve", *target, "--host", "127.0.0.1", *SERVE_FLAGS]
    return spawn("service", [*command, "--port", str(port)], env, log_path, port)


def start_server(
    bentoml_home: Path,
    model_tag: str | None,
    log_path: Path,
    config: Path | None = None,
    timeout: float = START_TIMEOUT_S,
) -> Server:
    """`launch_server`, then wait until `/readyz` says ready (the engine loaded and warmed up).
    A server whose port another process took between `free_port` and its bind is started again on
    another port (three tries)."""
    for attempt in range(3):
        server = launch_server(bentoml_home, model_tag, log_path, config)
        try:
            return wait_ready(server, "/readyz", timeout=timeout)
        except RuntimeError:
            if attempt == 2 or not server.lost_its_port():
                raise
    raise AssertionError("unreachable")
