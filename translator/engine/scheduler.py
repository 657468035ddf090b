"""The engine's own batch scheduler: one queue of pieces from every request, one model loop.

Requests arrive as lists of pieces (sentences) with a priority and a deadline. Admission
(translator/engine/admission.py) takes a request only if the forecast says it can be answered
before its deadline. One model loop takes a batch from the queue whenever the model frees
(translator/engine/batch_policy.py: most urgent first, length-grouped, token budget), after a
linger for the callers the last batch answered (translator/engine/linger.py), and fits the cost
model on every batch it runs (translator/engine/cost_model.py). A request whose caller goes away is
cancelled: its pieces still queued are never generated; so is one whose deadline passes before it
is answered. The loop is watched (translator/engine/health.py).

The backend is a plain function (pieces in, results out, same order, per-piece errors) run in one
worker thread, so two batches never run at once and the event loop keeps admitting requests while
the model computes (on CUDA in a process of its own, translator/engine/model_runner.py). Every
time it reads comes from one clock, `clock` (the tests' event loop's time is virtual); its timers
run on the event loop, in production the same monotonic clock. Nothing here knows BentoML or the model.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from translator.contract.forecast import QueueState, predicted_wait
from translator.contract.protocol import ENGINE_FAILED, Piece, PieceResult, Priority
from translator.engine import admission, health
from translator.engine.admission import Refused
from translator.engine.batch_policy import Batch, Job, Limits, next_batch
from translator.engine.cost_model import CostModel, PaddingRatio
from translator.engine.linger import LingerSettings, linger_s, worth_waiting
from translator.engine.observer import DropReason, NullObserver, Observer, RefusalReason
from translator.engine.piece_queue import PieceQueue
from translator.engine.returns import Returns

logger = logging.getLogger(__name__)

# Above this many pieces in one request, their tokens are counted off the event loop.
COUNT_IN_THREAD_PIECES = 64

Backend = Callable[[list[Piece]], list[PieceResult]]
TokenCounter = Callable[[Piece], int]


@dataclass(frozen=True)
class SchedulerSettings:
    max_batch_size: int = 32
    max_batch_tokens: int = 8192
    beams: int = 1
    max_latency_s: float = 60.0
    linger_fraction: float = 0.05
    linger_max_fraction: float = 0.25
    linger_max_s: float = 1.0
    # How far past the head of the queue the length grouping looks, in batches.
    group_window_batches: int = 4
    # A batch running longer than both of these is stuck (translator/engine/health.py).
    stall_factor: float = 10.0
    stall_min_s: float = 120.0


class Scheduler:
    def __init__(
        self,
        backend: Backend,
        count_tokens: TokenCounter,
        settings: SchedulerSettings | None = None,
        observer: Observer | None = None,
        clock: Callable[[], float] = time.monotonic,
        watch_interval_s: float = 1.0,
        publish_forecast: Callable[[QueueState, float], None] | None = None,
        backend_failure: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.backend = backend
        # Told, on every change of the queue, its `queue_state` (translator/shm/engine_load.py).
        self.publish_forecast = publish_forecast
        self._watch_task: asyncio.Task[None] | None = None
        # Every request admitted and not yet answered, wherever its pieces are (queued, in the
        # batch running, in one just done): all of them are answered if the loop fails.
        self._waiting: set[Job] = set()
        self.count_tokens = count_tokens
        self.settings = settings or SchedulerSettings()
        self.health = health.Watchdog(
            self._running_batch,
            self._refuse_all,
            self.settings.stall_factor,
            self.settings.stall_min_s,
            watch_interval_s,
            backend_failure,
        )
        self.observer: Observer = observer or NullObserver()
        self.clock = clock
        self.cost = CostModel()
        self.batches_done = 0
        self.queue = PieceQueue()
        self._seq = itertools.count()
        self._changed = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="model")
        self._loop_task: asyncio.Task[None] | None = None
        self._running: Batch | None = None
        self._running_since = 0.0
        self._running_predicted = 0.0
        self._linger_until = 0.0
        self._expected = 0
        # Callers answered by the last batch, coming back: what the linger waits for.
        self.returns = Returns()
        self._closed = False
        self.padding = PaddingRatio()
        self.linger = LingerSettings(
            self.settings.linger_fraction, self.settings.linger_max_fraction, self.settings.linger_max_s
        )
        self.limits = Limits(
            self.settings.max_batch_size,
            self.settings.max_batch_tokens,
            max(1, self.settings.beams),
            self.settings.group_window_batches,
        )

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._loop_task is None:
            loop = asyncio.get_running_loop()
            self._loop_task = loop.create_task(self._model_loop(), name="model-loop")
            self._loop_task.add_done_callback(self._loop_ended)
            self._watch_task = loop.create_task(self.health.watch(lambda: self._closed), name="model-loop-watch")

    async def close(self) -> None:
        self._closed = True
        tasks = [t for t in (self._loop_task, self._watch_task) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._refuse_everyone()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- requests --------------------------------------------------------------------------------

    async def submit(
        self,
        pieces: Sequence[Piece],
        priority: Priority = Priority.INTERACTIVE,
        timeout_s: float | None = None,
        expires: bool = True,
    ) -> list[PieceResult]:
        """Translate one request's pieces; results in the same order. Raises `Refused` at once if
        it cannot be answered within `max_latency_ms` (or `timeout_s`, if sooner). Cancelled (the
        caller went away), its pieces not yet generated are dropped. `expires=False` waits past the
        deadline (the calibration at start: an expired one would leave the engine never ready)."""
        if (refusal := self._unavailable(self.observer.refused)) is not None:
            raise refusal
        pieces = list(pieces)
        if not pieces:
            return []
        now = self.clock()
        self.returns.arrived(now, priority)
        self._changed.set()  # a caller the linger waits for may be back, admitted or not
        budget = self.settings.max_latency_s if timeout_s is None else min(timeout_s, self.settings.max_latency_s)
        if len(pieces) > COUNT_IN_THREAD_PIECES:
            # Encoding thousands of pieces takes the event loop for a while: every other caller's
            # admission and every answer would wait.
            lengths = await asyncio.to_thread(lambda: [self._safe_count(p) for p in pieces])
            if (refusal := self._unavailable(self.observer.refused)) is not None:  # closed or failed meanwhile
                raise refusal
        else:
            lengths = [self._safe_count(p) for p in pieces]
        # The deadline runs from arrival; predictions and the expiry timer from now, after counting.
        counted = self.clock()
        job = Job(
            seq=next(self._seq),
            pieces=pieces,
            lengths=lengths,
            priority=priority,
            arrival=now,
            deadline=now + budget,
            future=asyncio.get_running_loop().create_future(),
        )
        finish = counted + self.predicted_wait(priority, len(pieces), sum(lengths))
        alone = self._running is None and self.queue.at_or_above(priority)[0] == 0
        late = self.cost.ready and finish > job.deadline
        if late and not alone:
            self.observer.refused(RefusalReason.DEADLINE)
            raise admission.refusal(now, finish, job.deadline, budget)
        self.queue.add(job)
        self._changed.set()
        self._report_queue()
        self._waiting.add(job)
        expiry = None
        if expires and math.isfinite(budget) and self.cost.ready:
            # Before any batch has been measured, nothing was predicted: no expiry either.
            expire_at = admission.expires_at(job.deadline, budget, late, counted, finish)
            loop = asyncio.get_running_loop()
            expiry = loop.call_later(max(0.0, expire_at - self.clock()), self._expire, job, budget)
        try:
            return await asyncio.shield(job.future)
        except asyncio.CancelledError:
            self._cancel(job, DropReason.CALLER_GONE)
            raise
        finally:
            self._waiting.discard(job)
            if expiry is not None:
                expiry.cancel()

    def predicted_wait(self, priority: Priority, pieces: int, tokens: int) -> float:
        """Seconds until a request of this size, queued now, would be answered."""
        if self.cost.coefficients is None:
            return 0.0
        ahead_pieces, ahead_tokens = self.queued_at_or_above(priority)
        total = ahead_pieces + pieces
        # Tokens are padded to each batch's longest piece, by as much as recent batches were.
        per_piece_tokens = (ahead_tokens + tokens) * self.padding.value * self.limits.beams / max(1, total)
        return predicted_wait(
            self._running_left(),
            ahead_pieces,
            pieces,
            self.settings.max_batch_size,
            lambda size: self._batch_s(size, per_piece_tokens),
            busy=self._running is not None or ahead_pieces > 0,
        )

    # -- the model loop --------------------------------------------------------------------------

    async def _model_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wait_for_work()
            batch = self._next_batch()
            if batch is None:
                continue
            pieces = batch.pieces
            self._running = batch
            self._running_since = self.clock()
            self._running_predicted = self.cost.predict(len(pieces), batch.padded_tokens)
            try:
                results = await loop.run_in_executor(self._executor, self.backend, pieces)
                if len(results) != len(pieces):
                    raise RuntimeError(f"the backend answered {len(results)} results for {len(pieces)} pieces")
            except Exception as exc:  # noqa: BLE001 - the backend isolates pieces; this is its own failure
                logger.exception("batch of %d pieces failed", len(pieces))
                results = [PieceResult(error=f"{type(exc).__name__}: {exc}", error_kind=ENGINE_FAILED)] * len(pieces)
            seconds = self.clock() - self._running_since
            self._running = None
            self.health.batch_ended(seconds)
            logger.debug(
                "batch of %d pieces, %d padded tokens: %.2f s (predicted %.2f s), %d pieces still queued",
                len(pieces),
                batch.padded_tokens,
                seconds,
                self._running_predicted,
                self.queued_pieces,
            )
            self.cost.observe(len(pieces), batch.padded_tokens, seconds)
            self.padding.observe(batch.padded_tokens, batch.real_tokens * self.limits.beams)
            self.batches_done += 1
            self.observer.batch_done(len(pieces), batch.padded_tokens, seconds)
            # Requests this batch finished: their callers are the ones coming back.
            self.returns.batch_done(self.clock(), batch.settle(results))
            # The clients this batch answered will be back shortly (translator/engine/linger.py).
            self._expected = min(self.settings.max_batch_size, len(pieces) + self.queued_pieces)
            mean = batch.padded_tokens / max(len(pieces), 1)
            upcoming = max(seconds, self.cost.predict(self._expected, math.ceil(mean * self._expected)))
            self._linger_until = self.clock() + linger_s(
                self.linger, upcoming, self.returns.return_s(self.returns.answered())
            )
            self._report_queue()

    # -- health ------------------------------------------------------------------------------------

    @property
    def failure(self) -> str | None:
        return self.health.failure

    def _loop_ended(self, task: asyncio.Task[None]) -> None:
        if not self._closed:
            self.health.loop_ended(task)

    def _running_batch(self) -> tuple[int, float, float] | None:
        if self._running is None:
            return None
        return len(self._running.entries), self.clock() - self._running_since, self._running_predicted

    def _refuse_all(self, reason: str) -> None:
        """Refuse new work and answer every waiting caller now: nothing would answer them in time."""
        if self.queued_pieces:
            self.observer.dropped(DropReason.UNHEALTHY, self.queued_pieces)
        self._refuse_everyone()

    def _unavailable(self, counted: Callable[[RefusalReason], None] | None = None) -> Refused | None:
        return health.unavailable(self._closed, self.health.failure, counted)

    def _refuse_everyone(self) -> None:
        """Empty the queue and answer every caller still waiting (pieces queued, or in the batch
        that was running) with the refusal the scheduler's state calls for."""
        self.queue.clear()
        for job in list(self._waiting):
            refusal = self._unavailable()
            if refusal is not None and not job.future.done():
                job.future.set_exception(refusal)
        self._report_queue()

    async def _wait_for_work(self) -> None:
        while True:
            self._changed.clear()
            if self.queued_pieces:
                left = self._linger_until - self.clock()
                interactive = self.queue.pieces_of(Priority.INTERACTIVE)
                missing = self.returns.missing(Priority.INTERACTIVE)
                batch_size = self.settings.max_batch_size
                if left <= 0 or not worth_waiting(self.queued_pieces, self._expected, missing, interactive, batch_size):
                    return
                try:
                    # Not asyncio.wait_for: on Python 3.11 it can swallow a cancellation that
                    # comes as the event is set (close() then waited for the loop for ever).
                    async with asyncio.timeout(left):
                        await self._changed.wait()
                except TimeoutError:
                    return
            else:
                await self._changed.wait()

    def _next_batch(self) -> Batch | None:
        def full_batch_s(mean_tokens: float) -> float:
            return self._batch_s(self.settings.max_batch_size, mean_tokens * self.padding.value * self.limits.beams)

        batch = next_batch(self.queue.lines, self.limits, self.clock(), full_batch_s)
        if batch is not None:
            self.queue.take(batch.entries)
        return batch

    def _batch_s(self, pieces: int, padded_tokens_per_piece: float) -> float:
        """Predicted seconds of a batch of `pieces` pieces."""
        return self.cost.predict(pieces, math.ceil(padded_tokens_per_piece * pieces))

    # -- bookkeeping -----------------------------------------------------------------------------

    @property
    def queued_pieces(self) -> int:
        return self.queue.pieces

    @property
    def queued_tokens(self) -> int:
        return self.queue.tokens

    def queued_at_or_above(self, priority: Priority) -> tuple[int, int]:
        return self.queue.at_or_above(priority)

    def _running_left(self) -> float:
        if self._running is None:
            return 0.0
        return max(0.0, self._running_since + self._running_predicted - self.clock())

    def _safe_count(self, piece: Piece) -> int:
        try:
            return max(1, int(self.count_tokens(piece)))
        except Exception:  # noqa: BLE001 - a piece that cannot be encoded fails in the backend, alone
            return max(1, len(piece.text) // 3)

    def _expire(self, job: Job, budget: float) -> None:
        if not job.future.done():
            queued = self._cancel(job, DropReason.EXPIRED)
            job.future.set_exception(admission.expired(budget, job.outstanding, len(job.pieces), queued))

    def _cancel(self, job: Job, reason: DropReason) -> int:
        """Drop a request's pieces still queued; how many there were."""
        if job.cancelled or job.future.done():
            return 0
        job.cancelled = True
        dropped = self.queue.drop(job)
        if dropped:
            self.observer.dropped(reason, dropped)
            logger.info("dropped %d queued pieces of a request (%s)", dropped, reason)
        self._changed.set()
        self._report_queue()
        return dropped

    def _report_queue(self) -> None:
        wait = self.predicted_wait(Priority.BULK, 0, 0) if self.cost.ready else 0.0
        self.observer.queue_changed(self.queued_pieces, self.queued_tokens, wait)
        if self.publish_forecast is not None:
            self.publish_forecast(self.queue_state(), self.settings.max_latency_s)

    def queue_state(self) -> QueueState:
        """What admission decides from, published for the API workers' early refusals: `wait_s` of
        it is `predicted_wait` on a busy engine for pieces of the queue's mean length."""
        pieces = self.queued_pieces
        full_batch_s = 0.0
        if self.cost.ready:
            per_piece_tokens = (self.queued_tokens / pieces if pieces else 1.0) * self.padding.value * self.limits.beams
            full_batch_s = self._batch_s(self.settings.max_batch_size, per_piece_tokens)
        return QueueState(
            running=self._running is not None,
            running_left_s=self._running_left(),
            full_batch_s=full_batch_s,
            batch_size=self.settings.max_batch_size,
            ahead=tuple(self.queued_at_or_above(p)[0] for p in Priority),
        )
