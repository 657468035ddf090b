"""Crash-safe checkpoints of a job, one append-only log per unit (an input file, a test direction).

A log is JSONL:

``{"header": {...}}``
    The unit's key (a hash of everything that decides its translations: the input, the settings,
    the model or server), its size, and what the key was made from, for people.
``{"started": i, "n": k, "run": r}``
    Run ``r`` began translating records ``i .. i+k-1``. Never read back for resuming; it is there
    so that a resumed job can tell what was in flight when the previous run died.
``{"start": i, "texts": [...], "rejects": {"j": reason}, "sentences": s, "seconds": t, "run": r}``
    A finished chunk: one text per record (``null`` for a rejected one, whose reason is under its
    offset in ``rejects``); ``"memory": m`` where ``m`` of its records came from the job's
    translation memory (absent: none), so that a resumed job's count includes the earlier runs'.

Each line is appended whole with one ``write`` and fsynced, so a kill loses at most the chunks in
flight; a torn last line (the kill landed mid-write) is cut off on the next load. A log with
another key is moved aside with a warning, never reused.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import itertools
import json
import logging
import os
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger(__name__)

# 2: chunks carry rejects and a run id, and "started" lines exist. Logs of version 1 (the
# evaluator's before it moved onto the job runner) are moved aside and translated again.
FORMAT_VERSION = 2
LOCK_FILE = ".lock"


class CheckpointError(RuntimeError):
    """A checkpoint is damaged beyond its last line (not something a kill can cause), or locked."""


@contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    """Hold ``directory/.lock`` for the duration: two runs appending to one log would interleave."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / LOCK_FILE).open("a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise CheckpointError(f"another job is writing to {directory}; wait for it or pick another output") from exc
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def digest(value: Any) -> str:
    """A stable hash of a JSON-serialisable value."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def lines_digest(lines: Sequence[str]) -> str:
    # Length-prefixed, so that ["a\nb"] and ["a", "b"] hash differently.
    hasher = hashlib.sha256()
    for line in lines:
        data = line.encode("utf-8")
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()


def permissions(path: Path) -> int | None:
    """``path``'s permission bits, for a file written from it (`atomic_writer`'s ``mode``); None if
    it cannot be read (its reader then says why). Only rwx for user, group and others: a set-id bit
    copied onto a written file is never wanted."""
    try:
        return stat.S_IMODE(path.stat().st_mode) & 0o777
    except OSError:
        return None


def new_file_mode() -> int:
    """The permission bits `open` gives a new file: 666 less the umask. Linux shows the umask in
    /proc; elsewhere it is read by setting it, which a thread creating a file at that instant
    would see."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def atomic_writer(path: Path, mode: int | None = None) -> Iterator[IO[str]]:
    """A text file that replaces ``path`` on a clean exit: readers see the old or the new file, never a mix.

    ``mode``: its permission bits (a translation gets its source's); else a new file's under the
    process's umask, as `open` would give it (mkstemp's 600 left reports and rejects unreadable
    to the user's group where everything else they write is not).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
            handle.flush()
            # Before the rename: the file never appears under its name with other permissions.
            os.fchmod(handle.fileno(), new_file_mode() if mode is None else mode)
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    with atomic_writer(path) as handle:
        handle.write(text)


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """`atomic_writer` for a binary file (a translated document)."""
    with atomic_writer(path, mode) as handle:
        assert isinstance(handle, io.TextIOWrapper)
        handle.buffer.write(data)  # nothing went through the text layer: no mix of the two


def _fsync_dir(directory: Path) -> None:
    # The rename itself is only durable once the directory entry is on disk.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the rename is still atomic
    finally:
        os.close(fd)


def _append_line(path: Path, value: Any) -> None:
    data = (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        # One write call for the whole line: a kill leaves either nothing or a prefix of it.
        written = os.write(fd, data)
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Chunk:
    """A finished chunk as stored: ``texts[k]`` is record ``start + k``, None where rejected."""

    start: int
    texts: list[str | None]
    rejects: dict[int, str]
    sentences: int
    seconds: float
    run: str = ""
    memory: int = 0  # records the translation memory answered

    @property
    def stop(self) -> int:
        return self.start + len(self.texts)


@dataclass
class Done:
    """What a log holds, without the texts: where each finished chunk is, and its totals."""

    # start -> (number of records, byte offset of its line): texts are read back one chunk at a
    # time when the output is written, so a job of millions of lines never holds them all.
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    records: int = 0
    rejects: int = 0
    sentences: int = 0
    seconds: float = 0.0
    memory: int = 0
    # run id -> the chunks (start, n) it started, finished or not.
    started: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def missing(self, size: int) -> list[range]:
        """The runs of record indices no finished chunk covers, in order."""
        gaps: list[range] = []
        position = 0
        for start in sorted(self.spans):
            if start > position:
                gaps.append(range(position, start))
            position = max(position, start + self.spans[start][0])
        if position < size:
            gaps.append(range(position, size))
        return gaps


class ChunkLog:
    def __init__(self, path: Path, key: str, size: int, header: dict[str, Any] | None = None) -> None:
        self.path = path
        self.key = key
        self.size = size
        self.header = {"version": FORMAT_VERSION, "key": key, "size": size, **(header or {})}

    # ------------------------------------------------------------------ reading

    def load(self) -> Done:
        """The finished chunks; a log made for other inputs is moved aside first."""
        if not self.path.exists():
            return Done()
        with self.path.open("rb") as handle:
            raw = handle.read()
        lines = raw.split(b"\n")
        header = _parse(lines[0]) if len(lines) > 1 else None
        if not isinstance(header, dict) or not isinstance(header.get("header"), dict):
            self._retire("it has no valid header")
            return Done()
        if header["header"].get("key") != self.key or header["header"].get("version") != FORMAT_VERSION:
            self._retire("it was made for other inputs (input, settings, model or server changed)")
            return Done()
        return self._read_lines(lines, raw)

    def _read_lines(self, lines: list[bytes], raw: bytes) -> Done:
        done = Done()
        covered: set[int] = set()
        offset = len(lines[0]) + 1
        # Only newline-terminated lines count: whatever follows the last newline is a line the
        # process was killed while writing (even if it happens to parse).
        complete, remainder = lines[1:-1], lines[-1]
        for number, line in enumerate(complete, start=2):
            value = _parse(line)
            if isinstance(value, dict) and "started" in value:
                started = (value.get("started"), value.get("n"))
                done.started.setdefault(str(value.get("run", "")), []).append(started)  # type: ignore[arg-type]
            else:
                chunk = self._chunk(value, number)
                span = range(chunk.start, chunk.stop)
                if any(i in covered for i in span):
                    raise CheckpointError(f"{self.path}:{number}: overlaps another chunk; delete the file")
                covered.update(span)
                done.spans[chunk.start] = (len(chunk.texts), offset)
                done.records += len(chunk.texts)
                done.rejects += len(chunk.rejects)
                done.sentences += chunk.sentences
                done.seconds += chunk.seconds
                done.memory += chunk.memory
            offset += len(line) + 1
        if remainder:
            logger.warning("%s: dropping an incomplete last line (interrupted write)", self.path)
            os.truncate(self.path, len(raw) - len(remainder))
        return done

    def _chunk(self, value: Any, number: int) -> Chunk:
        damaged = CheckpointError(f"{self.path}:{number}: damaged line inside the file; delete the file")
        if not isinstance(value, dict):
            raise damaged
        start, texts, rejects = value.get("start"), value.get("texts"), value.get("rejects", {})
        if not (isinstance(start, int) and isinstance(texts, list) and isinstance(rejects, dict)):
            raise damaged
        if not (0 <= start and start + len(texts) <= self.size and all(t is None or isinstance(t, str) for t in texts)):
            raise damaged
        try:
            reasons = {int(k): str(v) for k, v in rejects.items()}
        except ValueError as exc:
            raise damaged from exc
        if any(texts[k] is not None for k in reasons if 0 <= k < len(texts)) or any(
            t is None and k not in reasons for k, t in enumerate(texts)
        ):
            raise damaged
        return Chunk(
            start,
            texts,
            reasons,
            int(value.get("sentences", 0)),
            float(value.get("seconds", 0.0)),
            str(value.get("run", "")),
            int(value.get("memory", 0)),
        )

    def read(self, done: Done) -> Iterator[Chunk]:
        """The finished chunks in record order, read from the file one at a time."""
        if not done.spans:
            return  # nothing finished (an empty unit has no log at all)
        with self.path.open("rb") as handle:
            for start in sorted(done.spans):
                handle.seek(done.spans[start][1])
                yield self._chunk(_parse(handle.readline()), 0)

    def results(self, done: Done, what: str) -> Iterator[tuple[str | None, str | None]]:
        """Record after record, its (translation, reject reason) from the finished chunks, for as
        many records as the caller takes; `what` names a record (`"a.txt: unit"`) in the error when
        one is in no finished chunk (a bug: outputs are written once every chunk is done)."""
        chunks = self.read(done)
        chunk = next(chunks, None)
        for index in itertools.count():
            while chunk is not None and index >= chunk.stop:
                chunk = next(chunks, None)
            if chunk is None or index < chunk.start:
                raise AssertionError(f"{what} {index} is in no finished chunk")
            yield chunk.texts[index - chunk.start], chunk.rejects.get(index - chunk.start)

    # ------------------------------------------------------------------ writing

    def _ensure(self) -> None:
        if not self.path.exists():
            atomic_write_text(self.path, json.dumps({"header": self.header}, ensure_ascii=False) + "\n")

    def started(self, start: int, n: int, run: str) -> None:
        self._ensure()
        _append_line(self.path, {"started": start, "n": n, "run": run})

    def append(self, chunk: Chunk) -> None:
        self._ensure()
        line: dict[str, Any] = {
            "start": chunk.start,
            "texts": chunk.texts,
            "rejects": {str(k): v for k, v in sorted(chunk.rejects.items())},
            "sentences": chunk.sentences,
            "seconds": round(chunk.seconds, 6),
            "run": chunk.run,
        }
        if chunk.memory:
            line["memory"] = chunk.memory  # a job without a memory writes the lines it always did
        _append_line(self.path, line)

    def _retire(self, why: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        target = self.path.with_name(f"{self.path.name}.stale-{stamp}-{os.getpid()}")
        os.replace(self.path, target)
        logger.warning("checkpoint %s not reused: %s; moved to %s, translating again", self.path, why, target)


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
