"""Admission across API workers: one limit on requests in flight for the whole server.

A limit split evenly between the workers (`max_concurrency / workers` each) refuses requests
below the total, because the kernel does not spread connections evenly between processes that
accept on one socket: 240 clients under a limit of 256 got 688 refusals in 2,065 requests. So the
workers share one count, in a small memory-mapped file next to each other (in /dev/shm where it
exists): each worker owns one slot (its pid and its count in flight) and writes only that, and
every admission decision reads the sum of all slots. Two workers admitting in the same instant
can overshoot the limit by one each; no request is refused below it.

A worker that dies leaves its slot behind; the slot is taken over by the next worker that starts
(the arbiter respawns it), and a full-looking server re-checks that every counted pid still lives
before refusing. The table has a slot for every worker the configuration starts, twice over (a
respawned worker may start before its predecessor is seen dead), and never fewer than 64.
"""

from __future__ import annotations

import fcntl
import logging
import mmap
import os
import struct
from pathlib import Path

from translator.contract.engine_process import server_file

logger = logging.getLogger(__name__)

MIN_SLOTS = 64
_SLOT = struct.Struct("<qq")  # pid, requests in flight


def slots_for(workers: int | str) -> int:
    """Slots for a server of `workers` API workers (BentoML's `workers`: a count or "cpu_count")."""
    count = (os.cpu_count() or 1) if workers == "cpu_count" else int(workers)
    return max(MIN_SLOTS, 2 * count)


class SharedInFlight:
    """Requests in flight, counted per process in a shared file, limited in total."""

    def __init__(self, limit: int, path: Path | None = None, slots: int = MIN_SLOTS) -> None:
        if limit < 1:
            raise ValueError("limit must be >= 1")
        if slots < 1:
            raise ValueError("slots must be >= 1")
        self.limit = limit
        self.slots = slots
        # Resolved in the worker, at first use: the parent that workers share is the server.
        self.path = path
        self._map: mmap.mmap | None = None
        self._slot = -1
        self._pid = -1
        self._count = 0

    def full(self) -> bool:
        """Whether a request arriving now would be refused: asked before its body is read, so a
        refusal costs no read, no parse and no slot."""
        self._attach()
        return self._total() >= self.limit and self._total(check_alive=True) >= self.limit

    def try_acquire(self) -> bool:
        if self.full():
            return False
        self._count += 1
        self._write()
        return True

    def release(self) -> None:
        if self._count > 0:
            self._count -= 1
            self._write()

    def in_flight(self) -> int:
        self._attach()
        return self._total()

    # -- the shared file ---------------------------------------------------------------------------

    def _attach(self) -> None:
        # Lazily, and again after a fork: the slot belongs to a process, not to an object.
        if self._map is not None and self._pid == os.getpid():
            return
        if self.path is None:
            self.path = server_file("admission")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                # Every process of the server asks for the same size; a file already larger (made
                # by a configuration with more workers) is used whole, so all read the same table.
                size = max(os.fstat(fd).st_size, self.slots * _SLOT.size)
                if os.fstat(fd).st_size < size:
                    os.ftruncate(fd, size)
                self._map = mmap.mmap(fd, size)
                self.slots = size // _SLOT.size
                self._pid = os.getpid()
                self._count = 0
                self._slot = self._claim()
                self._write()
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _claim(self) -> int:
        assert self._map is not None
        free = None
        for slot in range(self.slots):
            pid, _ = _SLOT.unpack_from(self._map, slot * _SLOT.size)
            if pid == self._pid:
                return slot
            if free is None and (pid == 0 or not _alive(pid)):
                free = slot
        if free is None:
            raise RuntimeError(f"more than {self.slots} processes share {self.path}")
        return free

    def _write(self) -> None:
        assert self._map is not None
        _SLOT.pack_into(self._map, self._slot * _SLOT.size, self._pid, self._count)

    def _total(self, check_alive: bool = False) -> int:
        assert self._map is not None
        total = 0
        for slot in range(self.slots):
            pid, count = _SLOT.unpack_from(self._map, slot * _SLOT.size)
            if count > 0 and (not check_alive or pid == self._pid or _alive(pid)):
                total += count
        return total


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
