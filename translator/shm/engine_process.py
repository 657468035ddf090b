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

The record is the process alone, an `Owner` (translator/shm/records.py): a pid the system gave to
another process since reads as dead, and a step of the wall clock (NTP, a resumed VM) changes
nothing, the start being recorded in seconds since boot.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from translator.shm.records import Owner, ProcessFiles, Records, process_file, server_file

logger = logging.getLogger(__name__)

_RECORD = ""  # nothing but the owner every record carries


def channel_path(engine_pid: int, server_pid: int | None = None) -> Path:
    """The socket of engine process `engine_pid`'s channel (translator/contract/wire.py) in the
    server `server_pid` (by default this process's parent: the API workers and the engine are all
    children of `bentoml serve`)."""
    base = server_file("engine-channel", server_pid)
    return base.with_name(f"{base.name}.{engine_pid}")


def engine_pids(server_pid: int) -> list[int]:
    """The engine processes the server `server_pid` runs, from their records (the benchmark
    tells the engine's CPU from the API workers' with it)."""
    files = ProcessFiles(server_file("engine", server_pid), _RECORD)
    try:
        return [owner.pid for _, owner in files.owners() if owner.alive()]
    finally:
        files.close()


def announce_engine(base: Path | None = None) -> Path | None:
    """Record this process as one of the server's engines (called in the engine process, at
    start); records of engines that are gone are removed on the way.

    A file that cannot be written costs only the quick detection (the API workers' watchdogs
    still see a dead engine): logged, not fatal, and None returned."""
    base = base or server_file("engine")
    owner = Owner.current()
    path = process_file(base, owner.pid)
    # Written whole under a name the readers do not scan, then renamed into place: a reader finds
    # the record complete or not at all. Made in place, the file stood empty for a moment; an
    # engine killed in that moment left a record of no one, and its death read as no evidence
    # (#52: a reader that saw the file, then the kill, waited on an engine that never announced).
    partial = base.with_name(f".{path.name}.partial")
    try:
        records = Records.create(partial, _RECORD, mode=0o644)
        records.write(0, owner, ())
        records.close()
        os.replace(partial, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink()
        logger.warning(
            "could not record the engine's process in %s (%s): API workers will see its death only "
            "through their health checks",
            path,
            exc,
        )
        return None
    files = ProcessFiles(base, _RECORD)
    for found, recorded in files.owners():
        if not recorded.alive():
            with contextlib.suppress(OSError):
                found.path.unlink()
    files.close()
    return path


def withdraw_engine(path: Path | None) -> None:
    """Remove this engine's record at a clean shutdown."""
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


class EngineProcess:
    """The API worker's check on the engine's processes, from the records `announce_engine` writes."""

    def __init__(self, base: Path | None = None) -> None:
        # Resolved at first use, in the worker: the server is the parent the processes share.
        self.base = base
        self._files: ProcessFiles | None = None

    def exited(self) -> bool:
        """True when every engine process recorded is gone; False while one runs, or before any
        has recorded itself (no record proves nothing)."""
        if self._files is None:
            self.base = self.base or server_file("engine")
            self._files = ProcessFiles(self.base, _RECORD)
        owners = [owner for _, owner in self._files.owners()]
        return bool(owners) and not any(owner.alive() for owner in owners)
