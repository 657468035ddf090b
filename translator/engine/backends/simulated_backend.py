"""A backend without a model, for measuring everything around one: each call answers every row
with its own source tokens (the text comes back as it went) after the time a real device would
take for a call of that many rows.

That time is a curve of (rows, seconds) points, interpolated between them and extended past the
last at its per-row cost: empty for an instant backend (what the request path costs with the
model's work removed), or a GPU's measured batch times (docs/batching.md, an H200 on the 418M:
a call costs about 0.12-0.18 s whatever its size up to 512 rows), to see on a CPU machine what
the API workers and the scheduler do at the batch sizes and client counts a GPU asks for. It
sleeps in the model's thread as the device would keep it busy: the CPUs stay free for the rest.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from typing import Any

from translator.engine.backends.base import Generated

# The 418M model on an H200, bfloat16, greedy, 16 output tokens (docs/batching.md "On a GPU").
H200_418M_GREEDY: tuple[tuple[int, float], ...] = ((1, 0.119), (32, 0.171), (128, 0.151), (256, 0.144), (512, 0.178))


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


class SimulatedBackend:
    name = "simulated"
    precision = "none"

    def __init__(
        self, curve: Sequence[tuple[int, float]], device: str = "cpu", sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.curve = tuple((int(size), float(seconds)) for size, seconds in curve)
        self.device = device
        # The device's busy time; tests give a virtual clock's, so a loaded machine cannot stretch it.
        self.sleep = sleep
        self.calls = 0

    def generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int = 0,
        hypotheses: int = 1,
    ) -> list[Generated]:
        seconds = batch_seconds(self.curve, len(rows))
        if seconds:
            self.sleep(seconds)
        self.calls += 1
        # A source row is [source language, tokens..., end]: its tokens are the answer.
        return [Generated(ids=list(row[1:-1])[:max_new_tokens], ended=True) for row in rows]

    def release_memory(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "device": self.device, "curve": [list(point) for point in self.curve]}
