"""Admission across API workers: one limit on requests in flight for the whole server.

A limit split evenly between the workers (`max_concurrency / workers` each) refuses requests
below the total, because the kernel does not spread connections evenly between processes that
accept on one socket: 240 clients under a limit of 256 got 688 refusals in 2,065 requests. So the
workers share one count, in a small memory-mapped file (translator/shm/records.py): each worker
owns one slot (a record of its count in flight, stamped with the worker) and writes only that, and
every admission decision reads the sum of all slots. Two workers admitting in the same instant
can overshoot the limit by one each; no request is refused below it.

A worker that dies leaves its slot behind; the slot is taken over by the next worker that starts
(the arbiter respawns it), and a full-looking server re-checks that every counted worker still
lives before refusing. The table has a slot for every worker the configuration starts, twice
over (a respawned worker may start before its predecessor is seen dead), and never fewer than 64.
"""

from __future__ import annotations

import os
from pathlib import Path

from translator.shm.records import Owner, Records, server_file

MIN_SLOTS = 64
_SLOT = "q"  # requests in flight


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
        self._table: Records | None = None
        self._owner: Owner | None = None
        self._slot = -1
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
        if self._table is not None and self._owner is not None and self._owner.pid == os.getpid():
            return
        if self.path is None:
            self.path = server_file("admission")
        if self._table is not None:
            self._table.close()  # the parent's, copied by the fork
        self._table = Records.create(self.path, _SLOT, self.slots)
        self.slots = self._table.count
        self._owner = Owner.current()
        self._count = 0
        with self._table.locked():
            self._slot = self._claim()
            self._write()

    def _claim(self) -> int:
        assert self._table is not None and self._owner is not None
        free = None
        for slot in range(self.slots):
            record = self._table.read(slot)
            if record is None:
                # Never written is free; being written, or left half written by a worker that
                # died, is not ours to take.
                if free is None and not self._table.written(slot):
                    free = slot
                continue
            owner = record.owner
            if owner.pid == self._owner.pid:
                return slot
            if free is None and not owner.alive():
                free = slot
        if free is None:
            raise RuntimeError(f"more than {self.slots} processes share {self.path}")
        return free

    def _write(self) -> None:
        assert self._table is not None and self._owner is not None
        self._table.write(self._slot, self._owner, (self._count,))

    def _total(self, check_alive: bool = False) -> int:
        assert self._table is not None and self._owner is not None
        total = 0
        for record in self._table.read_all():
            if record is None:
                continue
            owner, (count,) = record
            if count > 0 and (not check_alive or owner.pid == self._owner.pid or owner.alive()):
                total += count
        return total
