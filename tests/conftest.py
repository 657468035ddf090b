"""Session fixtures: the fixture model (built once), a private BentoML home, and real servers.

A server is an actual `bentoml serve` subprocess, the same command `make serve` runs, on a free
port; the end-to-end tests share one per session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from hypothesis import settings

# One implementation for the tests and the benchmark: registration exactly as `make serve` does it,
# and a free local port. Imported here, so tests keep importing them from tests.conftest.
from bench.servers import free_port, register  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis: in CI (CI set, as on most CI systems, or HYPOTHESIS_PROFILE=ci) the examples are
# derived from each test's name, so a run is reproducible and a failure shows up on every rerun;
# elsewhere they are random, which explores more over time. Tests set their own max_examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

FIXTURE_DIR = ROOT / "build" / "fixture-model"
START_TIMEOUT_S = 180


@pytest.fixture(scope="session")
def fixture_model() -> Path:
    from fixture.build import build_fixture

    return build_fixture(FIXTURE_DIR)


@pytest.fixture(scope="session")
def bentoml_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bentoml-home")


@pytest.fixture(scope="session")
def model_tag(fixture_model: Path, bentoml_home: Path) -> str:
    return register(fixture_model, bentoml_home)


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def metrics(self) -> str:
        return requests.get(f"{self.url}/metrics", timeout=10).text

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        return self.process.returncode


def start_server(bentoml_home: Path, model_tag: str | None, log_path: Path, config: Path | None = None) -> Server:
    """`bentoml serve service:Translation` pinned to ``model_tag``; with None, plain `bentoml serve`
    (bentofile.yaml's service, the store's latest model), as a user types it after save_model.py."""
    port = free_port()
    env = {**os.environ, "BENTOML_HOME": str(bentoml_home), "BENTOML_DO_NOT_TRACK": "true"}
    env.pop("TRANSLATOR_MODEL", None)
    if model_tag is not None:
        env["TRANSLATOR_MODEL"] = model_tag
    if config is not None:
        env["BENTOML_CONFIG"] = str(config)
    target = ["service:Translation"] if model_tag is not None else []
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "bentoml", "serve", *target, "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"bentoml serve exited with {process.returncode}:\n{server.log()[-5000:]}")
        try:
            if requests.get(f"{server.url}/readyz", timeout=10).status_code == 200:
                return server
        except requests.RequestException:
            pass
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"bentoml serve not ready after {START_TIMEOUT_S}s:\n{server.log()[-5000:]}")


@pytest.fixture(scope="session")
def server(bentoml_home: Path, model_tag: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(bentoml_home, model_tag, tmp_path_factory.mktemp("logs") / "server.log")
    yield srv
    srv.stop()
