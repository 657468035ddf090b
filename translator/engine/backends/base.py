"""What every engine backend shares: the interface `Translator` calls, and the CPUs it may use.

A backend owns the model's arithmetic only: load it on a device in a precision, and generate on
rows of token ids, each row with its own target language. Tokenizing, deduplication, the token
budget, retries and decoding ids to text stay in `translator.engine.translator.Translator`, identical
whichever backend runs (both read the same checkpoint's vocabulary, in the same id order).
"""

from __future__ import annotations

import importlib.util
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Decoding:
    """Generation settings, resolved from the operator's settings over the checkpoint's own."""

    num_beams: int
    length_penalty: float
    no_repeat_ngram_size: int


@dataclass(frozen=True)
class SpecialIds:
    decoder_start: int
    eos: int
    pad: int


@dataclass(frozen=True)
class Generated:
    """One row's output: token ids after the decoder prefix, end token excluded; `ended` is false
    when generation stopped at its length budget rather than on the end token."""

    ids: list[int]
    ended: bool
    # The next best hypotheses' ids, best first, when more than one was asked for.
    alternatives: tuple[list[int], ...] = ()


@dataclass(frozen=True)
class MemoryStats:
    """The device's memory as torch sees it: bytes held by tensors now, their peak since the last
    reset, and the card's free bytes (which tells what CTranslate2's own allocator took)."""

    allocated: int
    peak: int
    free: int


def cuda_memory_stats(device: str, reset: bool = False) -> MemoryStats | None:
    """`MemoryStats` of the CUDA device this process computes on (None on the CPU or without torch);
    `reset` starts a new peak. Asked in the process that holds the model (translator/engine/model_runner.py)."""
    if not device.startswith("cuda"):
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    if reset:
        torch.cuda.reset_peak_memory_stats()
    free, _ = torch.cuda.mem_get_info()
    return MemoryStats(int(torch.cuda.memory_allocated()), int(torch.cuda.max_memory_allocated()), int(free))


class Backend(Protocol):
    name: str
    device: str
    precision: str

    def generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int = 0,
        hypotheses: int = 1,
    ) -> list[Generated]:
        """One output per row, in order. Row i is decoded from [decoder_start, targets[i]].
        With `hypotheses` > 1, the beam is at least that wide and each output also carries the
        next `hypotheses - 1` hypotheses."""
        ...

    def release_memory(self) -> None:
        """After a failed batch (out of memory, usually): give cached device memory back."""
        ...

    def memory_stats(self, reset: bool = False) -> MemoryStats | None:
        """The device's memory (`cuda_memory_stats`), None where unknown; `reset` starts a new peak."""
        ...

    def describe(self) -> dict[str, Any]: ...


def cpu_allowance() -> int:
    """CPUs this process may use: its affinity, capped by its cgroup's CPU quota (a Kubernetes CPU
    limit), never the node's core count, which is what libraries see by default in a container."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return max(1, cpus)


def cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota in CPUs from cgroup v2 (`cpu.max`) or v1 (`cpu.cfs_quota_us`), None if unlimited."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us


def torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None
