"""A backend without a model, for measuring everything around one: each call answers every row
with its own source tokens (the text comes back as it went) after the time a real device would
take for a call of that many rows.

That time is a curve of (rows, seconds) points, interpolated between them and extended past the
last at its per-row cost: empty for an instant backend (what the request path costs with the
model's work removed), or a GPU's measured batch times, to see on a CPU machine what the API
workers and the scheduler do at the batch sizes and client counts a GPU asks for.

How the call spends that time is the other half of the stand-in (issue #37). `lock_share` 0 sleeps
it all, as a device that keeps the CPU free would (CTranslate2 releases the interpreter lock for
its whole call). Eager `generate` on CUDA does not: every decode step launches hundreds of small
kernels from Python, holding the interpreter lock, and then waits for the GPU. With `lock_share`
set, a call is `steps` such steps (one per output token, and the encoder's), each holding the lock
for its share of the step's time as thread CPU time, which another thread wanting the lock
stretches exactly as it stretches a launch loop, and sleeping the rest, the device's own work.
`device_seconds` adds up those sleeps: the device's busy time, the GPU utilisation's stand-in.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from typing import Any

from translator.engine.backends.base import Generated, MemoryStats

# The 418M model on an H200, bfloat16, greedy, 16 output tokens (docs/batching.md "On a GPU").
H200_418M_GREEDY: tuple[tuple[int, float], ...] = ((1, 0.119), (32, 0.171), (128, 0.151), (256, 0.144), (512, 0.178))
# The same on an H100 80GB, eager transformers (issue #37, shared/gpu/README.md): 0.206 s at batch 1,
# 0.228 s flat from 64 to 512 (launch-bound), 2.81 s at 1,024; the GPU busy at most 37% of a call.
H100_418M_EAGER: tuple[tuple[int, float], ...] = ((1, 0.206), (64, 0.228), (512, 0.228), (1024, 2.81))
H100_EAGER_LOCK_SHARE = 0.63


def batch_seconds(curve: Sequence[tuple[int, float]], rows: int) -> float:
    """Seconds for a call of `rows` rows on `curve`; 0 for an empty curve."""
    if not curve or rows <= 0:
        return 0.0
    points = sorted(curve)
    sizes = [size for size, _ in points]
    if rows <= sizes[0]:
        return points[0][1]
    if rows >= sizes[-1]:
        size, seconds = points[-1]
        return seconds * rows / size
    right = bisect.bisect_left(sizes, rows)
    (x0, y0), (x1, y1) = points[right - 1], points[right]
    return y0 + (y1 - y0) * (rows - x0) / (x1 - x0)


def hold_lock(seconds: float, cpu_clock: Callable[[], float] = time.thread_time) -> None:
    """Spend `seconds` of this thread's CPU time in Python bytecode, which holds the interpreter
    lock: when another thread asks for it, it is handed over at the switch interval and this
    thread's work resumes when it gets it back, as a kernel-launch loop's does."""
    end = cpu_clock() + seconds
    while cpu_clock() < end:
        pass


class SimulatedBackend:
    name = "simulated"
    precision = "none"

    def __init__(
        self,
        curve: Sequence[tuple[int, float]],
        device: str = "cpu",
        sleep: Callable[[float], None] = time.sleep,
        lock_share: float = 0.0,
        hold: Callable[[float], None] = hold_lock,
    ) -> None:
        if not 0.0 <= lock_share <= 1.0:
            raise ValueError(f"lock_share must be between 0 and 1, not {lock_share}")
        self.curve = tuple((int(size), float(seconds)) for size, seconds in curve)
        self.device = device
        # The device's busy time; tests give a virtual clock's, so a loaded machine cannot stretch it.
        self.sleep = sleep
        self.lock_share = lock_share
        self.hold = hold
        self.calls = 0
        self.device_seconds = 0.0

    def generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int = 0,
        hypotheses: int = 1,
    ) -> list[Generated]:
        # A source row is [source language, tokens..., end]: its tokens are the answer.
        outputs = [Generated(ids=list(row[1:-1])[:max_new_tokens], ended=True) for row in rows]
        seconds = batch_seconds(self.curve, len(rows))
        if seconds and self.lock_share:
            steps = 1 + max([min_new_tokens, *(len(out.ids) for out in outputs)])
            held, waited = seconds * self.lock_share / steps, seconds * (1 - self.lock_share) / steps
            for _ in range(steps):
                self.hold(held)
                self.sleep(waited)
            self.device_seconds += waited * steps
        elif seconds:
            self.sleep(seconds)
            self.device_seconds += seconds
        self.calls += 1
        return outputs

    def release_memory(self) -> None:
        pass

    def memory_stats(self, reset: bool = False) -> MemoryStats | None:
        return None

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "device": self.device,
            "curve": [list(point) for point in self.curve],
            "lock_share": self.lock_share,
        }
