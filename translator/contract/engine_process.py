"""Which process is the engine, told to the API workers so that each of them sees it die at once.

An API worker learns of a dead engine from a call of its own that drops, or from its watchdog
after several silent probes (seconds apart). A worker that had no call in flight when the engine
died sent its next calls to the socket the arbiter keeps open, where they waited for the respawned
engine: seconds of a real model's load, or until the gate's watchdog closed, while the other worker
already answered 503. So the engine writes its process id in a small file that all the processes
of one server share (named after the server process, their common parent), and every API worker
checks that process a few times a second: a process that is gone, or a zombie the arbiter has not
reaped yet (it reaps every few seconds), is a dead engine.

The id is written with the process's start time: a pid the system gave to another process since
reads as dead too.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import psutil

logger = logging.getLogger(__name__)


def server_file(name: str) -> Path:
    """A file of this server's, shared by its API workers and its engine (all children of the
    `bentoml serve` process), in memory where /dev/shm exists."""
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    return base / f"translator-{name}-{os.getppid()}"


def announce_engine(path: Path | None = None) -> Path | None:
    """Record this process as the server's engine (called in the engine process, at start).

    A file that cannot be written costs only the quick detection (the API workers' watchdogs
    still see a dead engine): logged, not fatal, and None returned."""
    path = path or server_file("engine")
    me = psutil.Process()
    staging = path.with_name(f"{path.name}.{me.pid}")
    try:
        staging.write_text(f"{me.pid} {me.create_time()!r}\n", encoding="ascii")
        os.replace(staging, path)  # readers see the old id or the new one, never half of one
    except OSError as exc:
        logger.warning(
            "could not record the engine's process in %s (%s): API workers will see its "
            "death only through their health checks",
            path,
            exc,
        )
        return None
    return path


def withdraw_engine(path: Path | None) -> None:
    """Remove the record at a clean shutdown, unless another engine has replaced it since."""
    if path is None:
        return
    try:
        if path.read_text(encoding="ascii").split()[0] == str(os.getpid()):
            path.unlink()
    except (OSError, IndexError):
        pass


class EngineProcess:
    """The API worker's check on the engine's process, from the file `announce_engine` writes."""

    def __init__(self, path: Path | None = None) -> None:
        # Resolved at first use, in the worker: the server is the parent the processes share.
        self.path = path

    def exited(self) -> bool:
        """True when the announced engine process is gone; False while it runs or before any
        engine has announced itself (a missing or unreadable file proves nothing)."""
        if self.path is None:
            self.path = server_file("engine")
        try:
            pid_text, started_text = self.path.read_text(encoding="ascii").split()
            pid, started = int(pid_text), float(started_text)
        except (OSError, ValueError):
            return False
        try:
            process = psutil.Process(pid)
            return process.create_time() != started or process.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
        except psutil.Error:
            return False  # not ours to inspect: no evidence of a death
