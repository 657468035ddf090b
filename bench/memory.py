"""Peak memory of a whole process tree (a server's root process and all its descendants).

Two numbers, both summed over the tree and both kept as peaks:

- RSS, every 0.25 s (psutil, ~0.02 ms per process): an upper bound, since pages shared between
  processes (shared libraries, copy-on-write pages after fork) are counted once per process.
- PSS, every second (/proc/<pid>/smaps_rollup): each shared page split between the processes that
  map it, so the sum is the tree's real footprint. Reading it walks the page tables (~12 ms for a
  process with 2 GB resident, measured), too costly to do four times a second on a 2-core
  machine that also runs the server and the load generator; a one-second sampling can miss a
  peak shorter than that. PSS is what the report's memory ratio uses; RSS is shown beside it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

RSS_INTERVAL_S = 0.25
PSS_EVERY = 4  # samples: PSS once per second


@dataclass
class Peak:
    rss_bytes: int = 0
    pss_bytes: int = 0
    processes: int = 0
    samples: int = 0

    def as_row(self) -> dict[str, float | int | None]:
        return {
            "peak_rss_mb": round(self.rss_bytes / 2**20, 1),
            "peak_pss_mb": round(self.pss_bytes / 2**20, 1) if self.pss_bytes else None,
            "processes": self.processes,
        }


def tree(root: int) -> list[psutil.Process]:
    try:
        parent = psutil.Process(root)
        return [parent, *parent.children(recursive=True)]
    except psutil.Error:  # gone, or a zombie: nothing left to measure
        return []


def pss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


class MemorySampler:
    """Samples the tree under `root` in a thread until stopped; `reset()` starts a new peak."""

    def __init__(self, root: int) -> None:
        self.root = root
        self._peak = Peak()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"memory-{root}", daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def reset(self) -> None:
        with self._lock:
            self._peak = Peak()
        self.sample(pss=True)

    def peak(self) -> Peak:
        self.sample(pss=True)
        with self._lock:
            return Peak(**vars(self._peak))

    def sample(self, pss: bool) -> None:
        rss_total = 0
        pss_total = 0
        processes = tree(self.root)
        for process in processes:
            try:
                rss_total += process.memory_info().rss
            except psutil.Error:
                continue
            if pss:
                pss_total += pss_bytes(process.pid) or 0
        with self._lock:
            peak = self._peak
            peak.samples += 1
            peak.rss_bytes = max(peak.rss_bytes, rss_total)
            peak.pss_bytes = max(peak.pss_bytes, pss_total)
            peak.processes = max(peak.processes, len(processes))

    def _run(self) -> None:
        count = 0
        while not self._stop.is_set():
            started = time.monotonic()
            self.sample(pss=count % PSS_EVERY == 0)
            count += 1
            self._stop.wait(max(0.0, RSS_INTERVAL_S - (time.monotonic() - started)))
