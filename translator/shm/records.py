"""The primitive the server's processes share memory through: files of fixed-size records, each
record stamped with the process that wrote it.

- **Where**: `server_file(name)`, a file of this server's, named after the `bentoml serve` process
  that its API workers and its engine share as their parent, in memory where /dev/shm exists. A
  mechanism with a file per process names each `<server file>.<pid>` (`process_file`), and a
  reader keeps them all mapped while they last (`ProcessFiles`).
- **What**: `Records`, `count` records of one layout in a file mapped into memory. A record is
  written by one process at a time and read by any, under a sequence lock: the writer makes the
  record's sequence number odd, writes, and makes it even again; a reader takes the values only
  when it finds one even number before and after reading them. A record being written reads as
  it last read whole, so does one left half written by a writer that died, and a record never
  written (or never read whole) reads as None: never a mix of two writes. (Python has no memory
  barriers: the order relies on each process's stores and loads being seen in program order, as
  on x86-64.)
- **Who**: each record carries its writer, an `Owner`: a pid and the start of that process, so
  that a pid the system gives to another process later does not read as the writer still alive.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import struct
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import psutil

_SEQ = struct.Struct("<Q")
_OWNER = "qd"  # pid, start in seconds since boot
# Reads of a record being written before it reads as it was: a writer takes microseconds.
_TRIES = 3
# Starts closer than this are one process's: psutil's resolution is a clock tick (10 ms on
# Linux), and the start is a difference of two readings, exact to a microsecond.
_SAME_START_S = 0.001


def server_file(name: str, server_pid: int | None = None) -> Path:
    """A file of this server's, shared by its API workers and its engine (all children of the
    `bentoml serve` process, `server_pid`, by default this process's parent), in memory where
    /dev/shm exists."""
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    return base / f"translator-{name}-{os.getppid() if server_pid is None else server_pid}"


def process_file(base: Path, pid: int) -> Path:
    """Process `pid`'s file among those named after `base`, one per process."""
    return base.with_name(f"{base.name}.{pid}")


@dataclass
class Owner:
    """A process, told apart from any process the system gives its pid to later.

    It is recorded as its pid and its start in seconds since boot, not since the epoch. psutil's
    `Process.create_time()` is seconds since the epoch: on Linux (psutil 7.2's _pslinux.py) the
    start in clock ticks since boot from /proc/<pid>/stat plus the boot time, read again from
    /proc/stat's `btime` at each call, and the kernel moves `btime` whenever the wall clock steps
    (NTP, a resumed VM). Written by one process and compared by another after such a step, it
    would read a live engine as gone, and every API worker would answer 503. psutil's own identity,
    pid-reuse safe (`Process.__eq__`, `is_running()`), uses the ticks since boot, but only inside
    one process: no public API gives that value. So the start recorded is `create_time()` less
    `boot_time()`, both public, with the boot time read before and after (a step in between is
    seen, and the reading done again): the ticks since boot, which no step moves. A reader that
    has matched a recorded owner to a live process keeps psutil's `Process` and asks its
    `is_running()` from then on: psutil's own check of pid reuse, without the boot time. One found
    gone is gone for good, and not looked for again.
    """

    pid: int
    started: float  # seconds since boot
    _process: psutil.Process | None = field(default=None, compare=False, repr=False)
    _gone: bool = field(default=False, compare=False, repr=False)

    @classmethod
    def current(cls) -> Owner:
        owner = cls.of(os.getpid())
        assert owner is not None, "this process is alive"
        return owner

    @classmethod
    def of(cls, pid: int) -> Owner | None:
        """The process `pid` is now; None when there is none, or only its zombie (dead, and
        waiting for its parent to reap it)."""
        for _ in range(_TRIES):
            boot = psutil.boot_time()
            try:
                process = psutil.Process(pid)
                with process.oneshot():
                    started = process.create_time() - boot
                    zombie = process.status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return None
            if psutil.boot_time() == boot:
                break
        return None if zombie else cls(pid, started, process)

    def alive(self) -> bool:
        """Whether this process still runs: not gone, not a zombie, its pid not given to another."""
        if self._gone:
            return False
        if self._process is None:
            now = Owner.of(self.pid)
            if now is None or abs(now.started - self.started) >= _SAME_START_S:
                self._gone = True
            else:
                self._process = now._process
            return not self._gone
        try:
            self._gone = not self._process.is_running() or self._process.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            self._gone = True
        return not self._gone


class Record(NamedTuple):
    owner: Owner  # the process that wrote it
    values: tuple[Any, ...]


class Records:
    """`count` records of one layout (`fields`: `struct` codes of 8 bytes each, q or d, after the
    owner) in a file mapped into memory: created or grown by `create`, mapped read-only by `open`."""

    def __init__(self, path: Path, fields: str, map_: mmap.mmap, fd: int | None) -> None:
        self.path = path
        self.layout = struct.Struct("<Q" + _OWNER + fields)  # sequence number, owner, values
        self._values = struct.Struct("<" + _OWNER + fields)
        self._map = map_
        self._fd = fd  # kept open by a writer, for `locked`
        self.count = len(map_) // self.layout.size
        self._last: list[tuple[int, Record] | None] = [None] * self.count  # each one's last read whole
        # For `read_all`: with 8-byte values, each record's sequence number is a word of the map.
        assert self.layout.size % 8 == 0, f"{fields!r}: not 8-byte fields"
        self._words = self.layout.size // 8
        self._seqs = [0] * self.count
        self._all: list[Record | None] = [None] * self.count

    @classmethod
    def create(cls, path: Path, fields: str, count: int = 1, mode: int = 0o600) -> Records:
        """The file at `path`, made or grown to `count` records; a file already larger (made by a
        configuration with more) is used whole, so that every process reads the same records."""
        size = struct.calcsize("<Q" + _OWNER + fields)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                length = max(os.fstat(fd).st_size, count * size)
                if os.fstat(fd).st_size < length:
                    # Memory taken now: a full /dev/shm fails here, not as SIGBUS at a write to the map.
                    if hasattr(os, "posix_fallocate"):
                        os.posix_fallocate(fd, 0, length)
                    else:  # macOS
                        os.ftruncate(fd, length)
                map_ = mmap.mmap(fd, length)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fields, map_, fd)

    @classmethod
    def open(cls, path: Path, fields: str) -> Records:
        """The file at `path`, to read; ValueError while it is too short for one record (being
        made, or not a file of these records)."""
        fd = os.open(path, os.O_RDONLY)
        try:
            if os.fstat(fd).st_size < struct.calcsize("<Q" + _OWNER + fields):
                raise ValueError(f"{path}: shorter than one record")
            map_ = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        return cls(path, fields, map_, None)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held by one process of those that `create` the file at a time."""
        assert self._fd is not None, "only a writer locks"
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def written(self, index: int) -> bool:
        """Whether any process ever began to write the record."""
        return _SEQ.unpack_from(self._map, index * self.layout.size)[0] != 0

    def write(self, index: int, owner: Owner, values: Sequence[Any]) -> None:
        offset = index * self.layout.size
        # Odd while the values change. A writer that died here left it odd: `| 1`, not `+ 1`.
        seq = (_SEQ.unpack_from(self._map, offset)[0] + 1) | 1
        _SEQ.pack_into(self._map, offset, seq)
        self._values.pack_into(self._map, offset + _SEQ.size, owner.pid, owner.started, *values)
        _SEQ.pack_into(self._map, offset, seq + 1)

    def read(self, index: int) -> Record | None:
        """The record's writer and values, as it last read whole while it is being written (or
        was left half written); None if it never was."""
        offset = index * self.layout.size
        last = self._last[index]
        seq = _SEQ.unpack_from(self._map, offset)[0]
        if last is not None and seq == last[0]:
            return last[1]  # unchanged since
        for _ in range(_TRIES):
            if seq == 0:
                return None  # never written
            if seq % 2 == 0:
                pid, started, *values = self._values.unpack_from(self._map, offset + _SEQ.size)
                if _SEQ.unpack_from(self._map, offset)[0] == seq:
                    # The same writer keeps its Owner, and with it the process it was matched to.
                    owner = None if last is None else last[1].owner
                    if owner is None or (owner.pid, owner.started) != (pid, started):
                        owner = Owner(pid, started)
                    record = Record(owner, tuple(values))
                    self._last[index] = (seq, record)
                    return record
            seq = _SEQ.unpack_from(self._map, offset)[0]
        return None if last is None else last[1]

    def read_all(self) -> list[Record | None]:
        """Every record, as `read` gives each: the sequence numbers read in one go, and only the
        records whose number moved read again (a table is read on every request)."""
        with memoryview(self._map) as raw, raw[: self.count * self.layout.size] as table, table.cast("Q") as words:
            seqs = words[:: self._words].tolist()
        if seqs != self._seqs:
            for index, (seq, seen) in enumerate(zip(seqs, self._seqs, strict=True)):
                if seq != seen:
                    self.read(index)
            self._seqs = seqs
            self._all = [None if last is None else last[1] for last in self._last]
        return self._all

    def close(self) -> None:
        self._map.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class ProcessFiles:
    """A reader's view of the files named after `base`, one per process: each mapped once and
    kept while it lasts. A file removed and made again under the same name is another file."""

    def __init__(self, base: Path, fields: str) -> None:
        self.base = base
        self.fields = fields
        self._open: dict[tuple[str, int], Records] = {}  # (name, inode): its records

    def scan(self) -> list[Records]:
        """The files there now; one too short to read yet is left for the next scan."""
        prefix = f"{self.base.name}."
        try:
            with os.scandir(self.base.parent) as entries:
                found = {(entry.name, entry.inode()) for entry in entries if entry.name.startswith(prefix)}
        except FileNotFoundError:
            found = set()
        for key in set(self._open) - found:
            self._open.pop(key).close()
        for key in found - set(self._open):
            with contextlib.suppress(OSError, ValueError):
                self._open[key] = Records.open(self.base.with_name(key[0]), self.fields)
        return list(self._open.values())

    def owners(self) -> list[tuple[Records, Owner]]:
        """Each file's writer, from its first record; a file never written whole is no evidence."""
        found = []
        for records in self.scan():
            record = records.read(0)
            if record is not None:
                found.append((records, record.owner))
        return found

    def close(self) -> None:
        for records in self._open.values():
            records.close()
        self._open.clear()
