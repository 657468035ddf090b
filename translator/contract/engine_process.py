"""Which processes are the engine, told to the API workers so that each of them sees it die at once.

An API worker learns of a dead engine from a call of its own that drops, or from its watchdog
after several silent probes (seconds apart). A worker that had no call in flight when the engine
died sent its next calls to the socket the arbiter keeps open, where they waited for the respawned
engine: seconds of a real model's load, or until the gate's watchdog closed, while the other worker
already answered 503. So each engine process records itself in a small file of its own, beside
which all the processes of one server look (named after the server process, their common parent),
and every API worker checks those processes a few times a second: when every engine recorded is
gone, or a zombie the arbiter has not reaped yet (it reaps every few seconds), the engine is dead.
With several engine workers, one still running is not a death (its peers' dropped calls are the
engine client's business).

A process is recorded with its start time in clock ticks since boot, read from /proc: a pid the
system gave to another process since reads as dead, and a step of the wall clock (NTP, a resumed
VM) changes nothing, as it would for a start time in seconds since the epoch. Where /proc does not
exist (a developer's macOS), psutil's start time is used, with a tolerance.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

import psutil

logger = logging.getLogger(__name__)

# Seconds of difference in psutil's start time read as the same process (without /proc only).
_START_TOLERANCE_S = 1.0


def server_file(name: str, server_pid: int | None = None) -> Path:
    """A file of this server's, shared by its API workers and its engine (all children of the
    `bentoml serve` process, `server_pid`, by default this process's parent), in memory where
    /dev/shm exists."""
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    return base / f"translator-{name}-{os.getppid() if server_pid is None else server_pid}"


def engine_pids(server_pid: int) -> list[int]:
    """The engine processes the server `server_pid` runs, from their records (the benchmark
    tells the engine's CPU from the API workers' with it)."""
    return [int(path.name.rpartition(".")[2]) for path, alive in _records(server_file("engine", server_pid)) if alive]


def _identity(pid: int) -> tuple[str, bool] | None:
    """(the process's start, as a string to compare; whether it is a zombie), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None  # /proc exists and the process is not in it
    except OSError:
        pass
    else:
        # Fields after the command name, which is in parentheses and may hold spaces: state is
        # the 3rd field of the line, the start time (ticks since boot) the 22nd.
        fields = stat.rpartition(")")[2].split()
        return fields[19], fields[0] == "Z"
    try:
        process = psutil.Process(pid)
        return f"{process.create_time():.3f}", process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return None


def announce_engine(base: Path | None = None) -> Path | None:
    """Record this process as one of the server's engines (called in the engine process, at
    start); records of engines that are gone are removed on the way.

    A file that cannot be written costs only the quick detection (the API workers' watchdogs
    still see a dead engine): logged, not fatal, and None returned."""
    base = base or server_file("engine")
    pid = os.getpid()
    identity = _identity(pid)
    path = base.with_name(f"{base.name}.{pid}")
    try:
        staging = base.with_name(f".{base.name}.{pid}")
        staging.write_text(f"{pid} {identity[0] if identity else ''}\n", encoding="ascii")
        os.replace(staging, path)  # readers see the whole record or none
    except OSError as exc:
        logger.warning(
            "could not record the engine's process in %s (%s): API workers will see its death only "
            "through their health checks",
            path,
            exc,
        )
        return None
    for record, running in _records(base):
        if not running:
            with contextlib.suppress(OSError):
                record.unlink()
    return path


def withdraw_engine(path: Path | None) -> None:
    """Remove this engine's record at a clean shutdown."""
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def _records(base: Path) -> list[tuple[Path, bool]]:
    """Every engine record of this server, with whether its process still runs."""
    found = []
    for record in base.parent.glob(f"{base.name}.*"):
        try:
            pid_text, started = record.read_text(encoding="ascii").split()
            pid = int(pid_text)
        except (OSError, ValueError):
            continue  # half written by a crash, or removed meanwhile: no evidence either way
        identity = _identity(pid)
        if identity is None or identity[1]:
            found.append((record, False))
        elif "." in started:  # psutil's seconds: a tolerance
            found.append((record, abs(float(identity[0]) - float(started)) <= _START_TOLERANCE_S))
        else:
            found.append((record, identity[0] == started))
    return found


class EngineProcess:
    """The API worker's check on the engine's processes, from the records `announce_engine` writes."""

    def __init__(self, base: Path | None = None) -> None:
        # Resolved at first use, in the worker: the server is the parent the processes share.
        self.base = base

    def exited(self) -> bool:
        """True when every engine process recorded is gone; False while one runs, or before any
        has recorded itself (no record proves nothing)."""
        if self.base is None:
            self.base = server_file("engine")
        records = _records(self.base)
        return bool(records) and not any(running for _, running in records)
