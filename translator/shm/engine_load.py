"""The engine's forecast of its own queue, published for the API workers, so that a request the
engine would refuse is refused before its body is read.

A client that ignores Retry-After sends again at once: each refusal the engine makes costs an API
worker a body read, a parse, a split and an engine round trip, and a storm of them takes the CPU
the model needs (#21: 6,723 refusals in 30 s, interactive p50 at 5.6 full batches). The engine
refuses a request when the work queued at or above its priority would not be done within the
latency objective; that depends on the queue and on the request's size, so the engine can say it
ahead of time: on every change of its queue it writes what its prediction is made of (its
`QueueState`, translator/contract/forecast.py), with its objective and the time. An API worker
reads that before it reads a body and, for a request as small as the smallest of its priority's
recent ones, answers 503 with Retry-After at once when the engine's prediction, less the time since
it was written (the queue only drains while nothing changes it), is over the objective.

Each engine process writes a record of its own (translator/shm/records.py), in a file beside its
record of itself (engine_process.py); a worker refuses early only when every engine's forecast says
so. CLOCK_MONOTONIC is one clock for all processes of a machine.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from translator.contract.forecast import QueueState
from translator.contract.protocol import Priority
from translator.shm.records import Owner, ProcessFiles, Records, process_file, server_file

logger = logging.getLogger(__name__)

# published (0 until the first forecast), at, objective, running, running_left, full_batch_s,
# batch_size, ahead pieces per priority
_RECORD = "q" + "d" * (6 + len(Priority))
_RESCAN_S = 1.0  # how often a reader looks for engines that started or stopped
_SIZES_KEPT = 32  # recent requests per priority whose piece counts a reader remembers


@dataclass(frozen=True)
class Forecast:
    at: float  # time.monotonic() when written
    objective_s: float  # the engine's max_latency_ms, in seconds
    state: QueueState

    def late_by(self, priority: Priority, pieces: int, now: float) -> float | None:
        """Seconds past the objective a request of `priority` and `pieces` pieces arriving `now`
        would be answered (the wait less the time since it was written: the queue only drains
        while nothing changes it); None or <= 0 when it would be admitted."""
        wait = self.state.wait_s(priority, pieces)
        return None if wait is None else wait - max(0.0, now - self.at) - self.objective_s


class LoadPublisher:
    """The engine's side: one file per engine process, rewritten in place."""

    def __init__(self, base: Path | None = None, owner: Owner | None = None) -> None:
        base = base or server_file("engine-load")
        self.owner = owner or Owner.current()
        self.path = process_file(base, self.owner.pid)
        self._records: Records | None = None
        try:
            self._records = Records.create(self.path, _RECORD, mode=0o644)
        except OSError as exc:
            # Only the early refusal is lost: the engine still refuses what it cannot answer in time.
            logger.warning("engine load forecast not published (%s): refusals happen in the engine only", exc)
            return
        # Nothing forecast yet, by a live engine: no early refusal until it says otherwise.
        self._records.write(0, self.owner, [0] * len(_RECORD))  # one value per format character

    def publish(self, state: QueueState, objective_s: float) -> None:
        if self._records is None:
            return
        values = [
            1,
            time.monotonic(),
            objective_s,
            float(state.running),
            state.running_left_s,
            state.full_batch_s,
            float(state.batch_size),
            *(float(n) for n in state.ahead),
        ]
        self._records.write(0, self.owner, values)

    def close(self) -> None:
        if self._records is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self._records.close()
            self._records = None


class LoadReader:
    """An API worker's side: the forecasts of every engine process of this server."""

    def __init__(self, base: Path | None = None) -> None:
        self.base = base  # resolved at first use, in the worker (the server is the parent)
        self._files: ProcessFiles | None = None
        self._engines: list[Records] = []
        self._scanned = float("-inf")
        self._sizes: dict[Priority, deque[int]] = {p: deque(maxlen=_SIZES_KEPT) for p in Priority}

    def saw(self, priority: Priority, pieces: int) -> None:
        """A request of this worker's went to the engine with `pieces` pieces: requests of a
        priority are sized like the recent ones (the headers do not say how many pieces follow)."""
        self._sizes[priority].append(max(1, pieces))

    def late_by(self, priority: Priority) -> float | None:
        """Seconds by which every engine forecasts a request of `priority` arriving now would miss
        its objective (the smallest of them), or None when any engine would admit it or none has
        published: only then is an early refusal the engine's own answer. The request is taken to
        be as small as the smallest of this priority's recent ones (one piece before any), so that
        a smaller one than usual is at worst refused by the engine itself, never early in its stead."""
        now = time.monotonic()
        if now - self._scanned >= _RESCAN_S:
            self._rescan()
            self._scanned = now
        if not self._engines:
            return None
        pieces = min(self._sizes[priority], default=1)
        lateness = []
        for records in self._engines:
            forecast = _forecast(records)
            late = None if forecast is None else forecast.late_by(priority, pieces, now)
            if late is None or late <= 0:
                return None
            lateness.append(late)
        return min(lateness)

    def _rescan(self) -> None:
        if self._files is None:
            self.base = self.base or server_file("engine-load")
            self._files = ProcessFiles(self.base, _RECORD)
        # An engine that died without closing (killed, crashed) leaves its file: its state would
        # read as "in time" once stale and, all engines having to agree, stop every early refusal.
        self._engines = [records for records, owner in self._files.owners() if owner.alive()]

    def close(self) -> None:
        if self._files is not None:
            self._files.close()
        self._engines = []


def _forecast(records: Records) -> Forecast | None:
    record = records.read(0)
    if record is None:
        return None
    published, at, objective, running, running_left, full_batch_s, batch_size, *ahead = record[1]
    if not published:
        return None
    state = QueueState(
        running=bool(running),
        running_left_s=running_left,
        full_batch_s=full_batch_s,
        batch_size=max(1, int(batch_size)),
        ahead=tuple(int(n) for n in ahead),
    )
    return Forecast(at, objective, state)
