"""Crash-safe checkpoints of an evaluation run, one pair of files per direction.

``<dir>/<src>-<tgt>.hyp.jsonl``
    A header line ``{"header": {...}}`` with the direction's key, then one line per finished chunk,
    ``{"start": i, "hyps": [...], "seconds": t}``. Each line is appended whole with one ``write``
    and fsynced, so a kill loses at most the chunk in flight; a torn last line (the kill landed
    mid-write) is cut off on the next load.
``<dir>/<src>-<tgt>.score.json``
    Written atomically (temp file + rename) once the direction is finished and scored.

The key is a hash of everything that decides the translations (the direction, its source lines, the
system's identity); a checkpoint with another key is moved aside with a warning, never reused.
Scores carry their own key, which adds the references and the metric settings, so changing only
those rescores without translating again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint file is damaged beyond its last line (not something a kill can cause)."""


@contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    """Hold ``directory/.lock`` for the duration: two runs appending to one checkpoint would interleave."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise CheckpointError(
                f"another evaluation is writing to {directory}; wait for it or pick another --output"
            ) from exc
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


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old or the new file, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


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


@dataclass
class Progress:
    """What a direction's checkpoint holds: finished hypotheses by segment index, and their cost."""

    hyps: dict[int, str]
    seconds: float

    def missing(self, n: int) -> list[int]:
        return [i for i in range(n) if i not in self.hyps]


class DirectionCheckpoint:
    def __init__(self, directory: Path, name: str, key: str, n: int, header: dict[str, Any] | None = None) -> None:
        self.directory = directory
        self.name = name
        self.key = key
        self.n = n
        self.header = {"version": FORMAT_VERSION, "direction": name, "key": key, "n": n, **(header or {})}
        self.hyp_path = directory / f"{name}.hyp.jsonl"
        self.score_path = directory / f"{name}.score.json"

    # ------------------------------------------------------------------ hypotheses

    def load(self) -> Progress:
        """The finished chunks; a checkpoint made for other inputs is moved aside first."""
        if not self.hyp_path.exists():
            return Progress({}, 0.0)
        with self.hyp_path.open("rb") as handle:
            raw = handle.read()
        lines = raw.split(b"\n")
        header = _parse(lines[0]) if len(lines) > 1 else None
        if not isinstance(header, dict) or not isinstance(header.get("header"), dict):
            self._retire("it has no valid header")
            return Progress({}, 0.0)
        if header["header"].get("key") != self.key or header["header"].get("version") != FORMAT_VERSION:
            self._retire("it was made for other inputs (test data, model or server changed)")
            return Progress({}, 0.0)
        return self._read_chunks(lines, raw)

    def _read_chunks(self, lines: list[bytes], raw: bytes) -> Progress:
        hyps: dict[int, str] = {}
        seconds = 0.0
        # Only newline-terminated lines count: whatever follows the last newline is a line the
        # process was killed while writing (even if it happens to parse).
        complete, remainder = lines[1:-1], lines[-1]
        for number, line in enumerate(complete, start=2):
            chunk = _parse(line)
            if chunk is None:
                raise CheckpointError(f"{self.hyp_path}:{number}: damaged line inside the file; delete the file")
            self._check_chunk(chunk, hyps, number)
            for offset, text in enumerate(chunk["hyps"]):
                hyps[chunk["start"] + offset] = text
            seconds += float(chunk.get("seconds", 0.0))
        if remainder:
            logger.warning("%s: dropping an incomplete last line (interrupted write)", self.hyp_path)
            os.truncate(self.hyp_path, len(raw) - len(remainder))
        return Progress(hyps, seconds)

    def _check_chunk(self, chunk: Any, hyps: dict[int, str], number: int) -> None:
        ok = (
            isinstance(chunk, dict)
            and isinstance(chunk.get("start"), int)
            and isinstance(chunk.get("hyps"), list)
            and all(isinstance(h, str) for h in chunk["hyps"])
            and 0 <= chunk["start"]
            and chunk["start"] + len(chunk["hyps"]) <= self.n
        )
        if not ok or any(chunk["start"] + i in hyps for i in range(len(chunk["hyps"]))):
            raise CheckpointError(f"{self.hyp_path}:{number}: not a valid chunk for {self.n} segments; delete the file")

    def append(self, start: int, hyps: Sequence[str], seconds: float) -> None:
        if not self.hyp_path.exists():
            atomic_write_text(self.hyp_path, json.dumps({"header": self.header}, ensure_ascii=False) + "\n")
        _append_line(self.hyp_path, {"start": start, "hyps": list(hyps), "seconds": round(seconds, 6)})

    def _retire(self, why: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        target = self.hyp_path.with_name(f"{self.name}.hyp.stale-{stamp}-{os.getpid()}.jsonl")
        os.replace(self.hyp_path, target)
        self.score_path.unlink(missing_ok=True)
        logger.warning(
            "checkpoint %s not reused: %s; moved to %s, translating %s again", self.hyp_path, why, target, self.name
        )

    # ------------------------------------------------------------------ scores

    def load_score(self, score_key: str) -> dict[str, Any] | None:
        if not self.score_path.exists():
            return None
        try:
            saved = json.loads(self.score_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            logger.warning("%s is unreadable; scoring %s again", self.score_path, self.name)
            return None
        if not isinstance(saved, dict) or saved.get("key") != self.key or saved.get("score_key") != score_key:
            return None
        result = saved.get("result")
        return result if isinstance(result, dict) else None

    def save_score(self, score_key: str, result: dict[str, Any]) -> None:
        saved = {"key": self.key, "score_key": score_key, "result": result}
        atomic_write_text(self.score_path, json.dumps(saved, ensure_ascii=False, indent=2) + "\n")


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
