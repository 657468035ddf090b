"""The engine's own batch scheduler: one queue of pieces from every request, one model loop.

Requests arrive as lists of pieces (sentences) with a priority and a deadline. The scheduler
admits a request only if it predicts that the request can be answered before its deadline, and
refuses it at once otherwise (with the time after which it would fit), never after it has waited.
One model loop takes batches from the queue whenever the model frees:

- most urgent first: every interactive piece before any bulk piece, oldest first within a class;
- at most `max_batch_size` pieces and `max_batch_tokens` padded source tokens (times beams);
- grouped by length: from a window at the head of the queue, the oldest piece goes with the
  pieces closest to it in length, so short sentences do not pay for a long one's padding; but a
  piece that would miss its deadline if left for the next batch goes first, whatever its length;
- a linger after each batch: closed-loop clients answered by a batch come back a little later.
  Started at once, the next batch would hold only the clients that were not in the last one and
  the two halves would alternate forever. So while the queue holds fewer pieces than the last
  batch had (plus what was already waiting), the loop waits for them; and while interactive
  callers it answered are not back, it waits for them too, even with bulk work queued: started
  without them, the next batch makes each of them wait a whole batch more. How long they take is
  measured (translator/engine/returns.py), not assumed: the linger lasts their usual return time,
  and at least `linger_fraction` of the batch it is waiting to fill, never more than
  `linger_max_fraction` of that batch nor `linger_max_ms`.
  A lone client is never kept waiting: one piece back is all it expected.

A request whose caller goes away is cancelled: its pieces still queued are never generated. So is
one whose deadline passes before it is answered (a batch slower than predicted, a model stalled):
its caller gets an `expired` refusal (504 at the API) at the deadline, whatever the model is doing.

The loop is watched: if it ends while the scheduler is open (a bug outside the backend call, an
observer that raises), or a batch runs far past its prediction (`stall_factor` times, and at
least `stall_min_s`: a backend stuck in its thread), the scheduler says why in `failure`, answers
every waiting caller at once with a refusal (503 with Retry-After at the API), and refuses new
work; the engine reports not ready, and Kubernetes restarts the pod once the API workers have seen
it so for long enough. A stuck batch that ends after all clears the failure.

The backend is a plain function (pieces in, results out, same order, per-piece errors) run in one
worker thread, so two batches never run at once and the event loop keeps admitting requests
while the model computes. Nothing here knows BentoML or the model: the tests drive it with a
fake backend and a fake clock-free model.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from translator.contract.engine_load import QueueState
from translator.contract.protocol import ENGINE_FAILED, Piece, PieceResult, Priority
from translator.engine.batching import padded_tokens
from translator.engine.returns import Returns

logger = logging.getLogger(__name__)

# Weight of each older batch in the padding ratio (about the last ten batches count).
PADDING_DECAY = 0.9
# Retry-After of a refusal by an unhealthy engine: a restarted pod loads its model in about this.
UNHEALTHY_RETRY_S = 30
# Above this many pieces in one request, their tokens are counted off the event loop.
COUNT_IN_THREAD_PIECES = 64
# Retry-After of a request that ran out of time in the queue (the engine was slower than predicted).
RETRY_AFTER_EXPIRED_S = 5
# A request admitted alone although predicted late expires at this many times its prediction.
LATE_ALONE_ALLOWANCE = 2.0
# How long past its deadline an admitted request is still waited for: a fraction of its budget,
# at least this many seconds.
EXPIRY_GRACE_FRACTION = 0.5
EXPIRY_GRACE_MIN_S = 1.0

Backend = Callable[[list[Piece]], list[PieceResult]]
TokenCounter = Callable[[Piece], int]


class Refused(Exception):
    """The request cannot be answered in time (or at all now); the caller may retry later."""

    def __init__(self, reason: str, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s


class Observer(Protocol):
    """Where the scheduler reports what operators want to see (service.py: Prometheus)."""

    def batch_done(self, pieces: int, padded_tokens: int, seconds: float) -> None: ...

    def queue_changed(self, pieces: int, tokens: int, predicted_wait_s: float) -> None: ...

    def refused(self, reason: str) -> None: ...

    def dropped(self, reason: str, pieces: int) -> None: ...


class NullObserver:
    def batch_done(self, pieces: int, padded_tokens: int, seconds: float) -> None:
        pass

    def queue_changed(self, pieces: int, tokens: int, predicted_wait_s: float) -> None:
        pass

    def refused(self, reason: str) -> None:
        pass

    def dropped(self, reason: str, pieces: int) -> None:
        pass


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
    # A batch running longer than both of these is stuck (see the module docstring).
    stall_factor: float = 10.0
    stall_min_s: float = 120.0


class CostModel:
    """Predicted seconds for a batch: `fixed + per_piece * pieces + per_token * padded tokens`.

    Fitted by weighted least squares over the most recent batches, the newest weighing most (a
    machine's speed drifts: other work, thermal limits), with a small pull towards the previous
    estimate so that a run of identical batches (which cannot separate the three terms) still
    gives a stable, sensible prediction. Until a batch has been seen, it knows nothing. The
    engine's calibration batches (1 piece, then a full batch) span the sizes it will predict, so
    it interpolates rather than extrapolates: extrapolated from small batches on a busy machine,
    a fit once put a full batch at 20 times its real cost.
    """

    def __init__(self, history: int = 64, ridge: float = 1e-3, decay: float = 0.95) -> None:
        self.samples: deque[tuple[int, int, float]] = deque(maxlen=history)
        self.ridge = ridge
        self.decay = decay
        self.coefficients: tuple[float, float, float] | None = None

    @property
    def ready(self) -> bool:
        return self.coefficients is not None

    def observe(self, pieces: int, tokens: int, seconds: float) -> None:
        self.samples.append((pieces, tokens, seconds))
        self.coefficients = self._fit()

    def predict(self, pieces: int, tokens: int) -> float:
        if self.coefficients is None or pieces <= 0:
            return 0.0
        fixed, per_piece, per_token = self.coefficients
        return fixed + per_piece * pieces + per_token * tokens

    def _fit(self) -> tuple[float, float, float]:
        import numpy as np

        data = np.array(self.samples, dtype=float)
        x = np.column_stack([np.ones(len(data)), data[:, 0], data[:, 1]])
        y = data[:, 2]
        # Scale columns so the ridge term means the same for seconds, pieces and tokens.
        scale = np.maximum(np.abs(x).max(axis=0), 1e-9)
        xs = x / scale
        prior = np.zeros(3)
        if self.coefficients is not None:
            prior = np.array(self.coefficients) * scale
        else:
            # First sample: all of it fixed cost. A model's batch time grows far slower than its
            # size (measured: 32 fixture pieces cost 3x one piece, not 32x), so this errs less
            # than any per-piece guess; the warm-up's second batch, of another size, corrects it.
            prior = np.array([y.mean(), 0.0, 0.0]) * scale
        decayed = self.decay ** np.arange(len(y) - 1, -1, -1, dtype=float)
        robust = np.ones(len(y))
        pull = self.ridge * decayed.sum() + 1e-9
        # A few rounds of Huber reweighting: one batch slowed by something else on the machine
        # (a pause, a neighbour's burst) must not raise every prediction after it, since an
        # overestimate refuses work a healthy engine would have done in time.
        for _ in range(4):
            weights = decayed * robust
            xw = xs * weights[:, None]
            solved = np.linalg.solve(xw.T @ xs + pull * np.eye(3), xw.T @ y + pull * prior)
            residuals = np.abs(y - xs @ solved)
            spread = 1.4826 * float(np.median(residuals)) + 1e-6
            robust = np.minimum(1.0, 1.345 * spread / np.maximum(residuals, 1e-12))
        coefficients = np.maximum(solved / scale, 0.0)
        if not np.any(coefficients):
            coefficients[2] = max(float(y.mean()), 0.0) / max(float(data[:, 1].mean()), 1.0)
        return float(coefficients[0]), float(coefficients[1]), float(coefficients[2])


@dataclass(eq=False)
class _Job:
    seq: int
    pieces: list[Piece]
    lengths: list[int]
    priority: Priority
    arrival: float
    deadline: float
    future: asyncio.Future[list[PieceResult]]
    results: list[PieceResult | None] = field(default_factory=list)
    outstanding: int = 0
    cancelled: bool = False

    def settle(self, index: int, result: PieceResult) -> None:
        if self.results[index] is None:
            self.results[index] = result
            self.outstanding -= 1
        if self.outstanding == 0 and not self.future.done():
            self.future.set_result([r if r is not None else PieceResult(error="not translated") for r in self.results])


@dataclass(frozen=True)
class _Entry:
    job: _Job
    index: int

    @property
    def length(self) -> int:
        return self.job.lengths[self.index]


@dataclass(frozen=True)
class Batch:
    entries: list[_Entry]
    padded_tokens: int

    @property
    def pieces(self) -> list[Piece]:
        return [e.job.pieces[e.index] for e in self.entries]

    @property
    def real_tokens(self) -> int:
        return sum(e.length for e in self.entries)


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
    ) -> None:
        self.backend = backend
        # Told, on every change of the queue, its `queue_state` (translator/contract/engine_load.py).
        self.publish_forecast = publish_forecast
        self.watch_interval_s = watch_interval_s
        # Why the scheduler cannot serve (its loop ended, a batch is stuck); None while healthy.
        self.failure: str | None = None
        self._stalled = False
        self._watch_task: asyncio.Task[None] | None = None
        # Every request admitted and not yet answered, wherever its pieces are (queued, in the
        # batch running, in one just done): all of them are answered if the loop fails.
        self._waiting: set[_Job] = set()
        self.count_tokens = count_tokens
        self.settings = settings or SchedulerSettings()
        self.observer: Observer = observer or NullObserver()
        self.clock = clock
        self.cost = CostModel()
        self.batches_done = 0
        self._queues: dict[Priority, deque[_Entry]] = {p: deque() for p in Priority}
        # Pieces and source tokens queued per priority, kept as pieces come and go, so that a
        # prediction costs the same whatever the queue's length (it was a walk of the whole queue
        # on every submit: quadratic under a burst of bulk requests).
        self._queued: dict[Priority, list[int]] = {p: [0, 0] for p in Priority}
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
        # Padded tokens per real token of recent batches (decayed sums, so full batches count
        # most): the cost model is fitted on padded tokens, so a prediction made from the queue's
        # real lengths must pad them the same way, or it promises too early.
        self._padded_decayed = 0.0
        self._real_decayed = 0.0

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._loop_task is None:
            loop = asyncio.get_running_loop()
            self._loop_task = loop.create_task(self._model_loop(), name="model-loop")
            self._loop_task.add_done_callback(self._loop_ended)
            self._watch_task = loop.create_task(self._watch_stalls(), name="model-loop-watch")

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
        """Translate one request's pieces; results in the same order.

        Raises `Refused` at once if the request cannot be answered within its deadline
        (`max_latency_ms`, or `timeout_s` if the caller asks for sooner). Cancelling the awaiting
        task (the caller went away) drops the pieces not yet generated. `expires=False` waits for
        the answer past the deadline (the engine's calibration at start: nobody else waits on it,
        and an expired calibration would leave the engine never ready).
        """
        if (refusal := self._unavailable()) is not None:
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
            if (refusal := self._unavailable()) is not None:  # closed or failed meanwhile
                raise refusal
        else:
            lengths = [self._safe_count(p) for p in pieces]
        # The deadline runs from arrival; predictions and the expiry timer from now, after counting.
        counted = self.clock()
        job = _Job(
            seq=next(self._seq),
            pieces=pieces,
            lengths=lengths,
            priority=priority,
            arrival=now,
            deadline=now + budget,
            future=asyncio.get_running_loop().create_future(),
            results=[None] * len(pieces),
            outstanding=len(pieces),
        )
        finish = counted + self.predicted_wait(priority, len(pieces), sum(lengths))
        # A request with nothing ahead of it is admitted even if it is predicted late: it cannot be
        # answered any sooner, and refused it would be refused again every time it came back.
        alone = self._running is None and not any(self._queues[p] for p in Priority if p <= priority)
        late = self.cost.ready and finish > job.deadline
        if late and not alone:
            self.observer.refused("deadline")
            # After `finish - deadline` seconds the work now ahead of it is done: then it would fit.
            retry = max(1.0, math.ceil(finish - job.deadline))
            raise Refused(
                "deadline",
                f"the engine is overloaded: this request would be answered in about {finish - now:.1f} s, "
                f"over its limit of {budget:.1f} s; retry after {retry:.0f} s",
                retry,
            )
        queue = self._queues[priority]
        for index in range(len(pieces)):
            queue.append(_Entry(job, index))
        self._count(priority, len(pieces), sum(lengths))
        self._changed.set()
        self._report_queue()
        self._waiting.add(job)
        expiry = None
        if expires and math.isfinite(budget) and self.cost.ready:
            # Admitted alone although predicted late, it is given its predicted time, with room for
            # a misprediction: expired at its deadline it would be expired again on every retry.
            # (Before any batch has been measured, nothing was predicted: no expiry either.)
            # A prediction is an estimate: a request a little late is still answered. Half its budget
            # (at least a second) past its deadline, the wait is no longer a misprediction.
            expire_at = job.deadline + max(EXPIRY_GRACE_MIN_S, EXPIRY_GRACE_FRACTION * budget)
            if late:
                expire_at = max(expire_at, counted + LATE_ALONE_ALLOWANCE * (finish - counted) + 1.0)
            loop = asyncio.get_running_loop()
            expiry = loop.call_later(max(0.0, expire_at - self.clock()), self._expire, job, budget)
        try:
            return await asyncio.shield(job.future)
        except asyncio.CancelledError:
            self._cancel(job, "caller_gone")
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
        if total == 0:
            return self._running_left()
        # Tokens are padded to each batch's longest piece, by as much as recent batches were.
        real = ahead_tokens + tokens
        per_piece_tokens = real * self.padding_ratio * self._beams / total
        size = self.settings.max_batch_size
        full, last = divmod(total, size)
        if last and (self._running is not None or ahead_pieces):
            # On a busy engine the request's own batch fills up behind it (later arrivals take
            # its free places) and costs a full batch: priced at its own size, a queue of 58
            # pieces was predicted at 15 s and took 20 s (overload point, max_latency_ms 15000).
            full, last = full + 1, 0
        work = full * self._batch_s(size, per_piece_tokens)
        if last:
            work += self._batch_s(last, per_piece_tokens)
        return self._running_left() + work

    @property
    def padding_ratio(self) -> float:
        """Padded tokens per real token in recent batches (1.0 before any batch)."""
        return max(1.0, self._padded_decayed / self._real_decayed) if self._real_decayed else 1.0

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
            started = time.perf_counter()
            try:
                results = await loop.run_in_executor(self._executor, self.backend, pieces)
                if len(results) != len(pieces):
                    raise RuntimeError(f"the backend answered {len(results)} results for {len(pieces)} pieces")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the backend isolates pieces; this is its own failure
                logger.exception("batch of %d pieces failed", len(pieces))
                results = [PieceResult(error=f"{type(exc).__name__}: {exc}", error_kind=ENGINE_FAILED)] * len(pieces)
            seconds = time.perf_counter() - started
            self._running = None
            if self._stalled:
                # Its callers were answered when it was declared stuck; the model works again.
                logger.warning("the batch declared stuck ended after %.1f s; accepting work again", seconds)
                self._stalled, self.failure = False, None
            logger.debug(
                "batch of %d pieces, %d padded tokens: %.2f s (predicted %.2f s), %d pieces still queued",
                len(pieces),
                batch.padded_tokens,
                seconds,
                self._running_predicted,
                self.queued_pieces,
            )
            self.cost.observe(len(pieces), batch.padded_tokens, seconds)
            self._padded_decayed = PADDING_DECAY * self._padded_decayed + batch.padded_tokens
            self._real_decayed = PADDING_DECAY * self._real_decayed + batch.real_tokens * self._beams
            self.batches_done += 1
            self.observer.batch_done(len(pieces), batch.padded_tokens, seconds)
            finished: dict[Priority, int] = dict.fromkeys(Priority, 0)
            for entry, result in zip(batch.entries, results, strict=True):
                if not entry.job.cancelled:
                    entry.job.settle(entry.index, result)
            # Requests this batch finished: their callers are the ones coming back.
            for job in {id(e.job): e.job for e in batch.entries}.values():
                if not job.cancelled and job.outstanding == 0:
                    finished[job.priority] += 1
            self.returns.batch_done(self.clock(), finished)
            # The clients this batch answered will be back shortly: see the module docstring.
            self._expected = min(self.settings.max_batch_size, len(pieces) + self.queued_pieces)
            mean = batch.padded_tokens / max(len(pieces), 1)
            upcoming = max(seconds, self.cost.predict(self._expected, math.ceil(mean * self._expected)))
            self._linger_until = self.clock() + self._linger_s(upcoming)
            self._report_queue()

    def _linger_s(self, upcoming: float) -> float:
        """How long the loop may wait, from now, for the callers the last batch answered.

        Priced against the batch the linger is waiting to fill (`upcoming` seconds), not the one
        just done: after a small batch, a share of its time is too short for its clients to come
        back, and a 31-and-1 split would last forever.
        """
        settings = self.settings
        if not (settings.linger_fraction and settings.linger_max_fraction and settings.linger_max_s):
            return 0.0  # the linger is off
        # Never shorter than the share assumed before any return was timed: a return time timed
        # after a batch of one (a lone client's) says little of 32 callers' (measured: 0.17 s learnt,
        # then a batch of 4 of 32 on a cold start, where 5% of a transformers batch, 0.33 s, waited
        # for all). The wait ends anyway as soon as they are back.
        wait = max(settings.linger_fraction * upcoming, self.returns.return_s(self.returns.answered()) or 0.0)
        return min(wait, settings.linger_max_fraction * upcoming, settings.linger_max_s)

    # -- health ------------------------------------------------------------------------------------

    def _loop_ended(self, task: asyncio.Task[None]) -> None:
        if self._closed:
            return
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            logger.error("the model loop crashed", exc_info=exc)
        self._fail(f"the model loop stopped ({type(exc).__name__ if exc else 'cancelled'}: {exc})")

    async def _watch_stalls(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.watch_interval_s)
            if self._running is None or self._stalled:
                continue
            limit = max(self.settings.stall_min_s, self.settings.stall_factor * self._running_predicted)
            running_s = self.clock() - self._running_since
            if running_s > limit:
                self._stalled = True
                pieces = len(self._running.entries)
                self._fail(
                    f"a batch of {pieces} pieces has run {running_s:.0f} s, past its limit of {limit:.0f} s "
                    f"({self.settings.stall_factor:g} times its predicted {self._running_predicted:.1f} s)"
                )

    def _fail(self, reason: str) -> None:
        """Refuse new work and answer every waiting caller now: nothing would answer them in time."""
        logger.error("translation engine unhealthy: %s", reason)
        self.failure = reason
        if self.queued_pieces:
            self.observer.dropped("unhealthy", self.queued_pieces)
        self._refuse_everyone()

    def _unavailable(self) -> Refused | None:
        """The refusal for any work while the scheduler is closed or failed; None while it serves."""
        if self._closed:
            return Refused("shutting_down", "the engine is shutting down", 5)
        if self.failure is not None:
            return Refused("unhealthy", f"the engine cannot translate now: {self.failure}", UNHEALTHY_RETRY_S)
        return None

    def _refuse_everyone(self) -> None:
        """Empty the queue and answer every caller still waiting (pieces queued, or in the batch
        that was running) with the refusal the scheduler's state calls for."""
        for queue in self._queues.values():
            queue.clear()
        self._queued = {p: [0, 0] for p in Priority}
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
                if left <= 0 or not self._worth_waiting():
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

    def _worth_waiting(self) -> bool:
        """Whether callers the last batch answered are still to come back and would change the next
        batch: enough of them to fill it, or interactive ones that would otherwise wait for it."""
        if self.queued_pieces < self._expected:
            return True
        interactive_queued = self._queued[Priority.INTERACTIVE][0]
        return self.returns.missing(Priority.INTERACTIVE) > 0 and interactive_queued < self.settings.max_batch_size

    def _next_batch(self) -> Batch | None:
        slots = self.settings.max_batch_size
        chosen: list[_Entry] = []
        longest = 0
        for priority in Priority:
            queue = self._queues[priority]
            if not queue or len(chosen) >= slots:
                continue
            picked, longest = self._pick(queue, slots - len(chosen), longest, len(chosen))
            chosen.extend(picked)
        if not chosen:
            return None
        taken = set(map(id, chosen))
        for queue in self._queues.values():
            if any(id(e) in taken for e in queue):
                kept = [e for e in queue if id(e) not in taken]
                queue.clear()
                queue.extend(kept)
        for entry in chosen:
            self._count(entry.job.priority, -1, -entry.length)
        return Batch(chosen, padded_tokens=padded_tokens(max(e.length for e in chosen), len(chosen), self._beams))

    def _pick(self, queue: deque[_Entry], slots: int, longest: int, already: int) -> tuple[list[_Entry], int]:
        """Up to `slots` entries from `queue`: those that cannot wait for the next batch, then the
        oldest and the entries nearest to it in length."""
        window = list(itertools.islice(queue, slots * max(1, self.settings.group_window_batches)))
        oldest = window[0]
        if len(window) > slots:
            # Pieces that would miss their deadline if left for the next batch go first, earliest
            # deadline first: admission promised each request a finish time computed from queue
            # order, and newer pieces of a handier length must not push it past that (under
            # overload every queued piece is such a piece, and the order is then the queue's).
            # The rest: nearest in length to the oldest piece first (ties: older first).
            horizon = self.clock() + 2 * self._full_batch_s(window)

            def order(e: _Entry) -> tuple[bool, float, int, int, int]:
                if e.job.deadline <= horizon:
                    return (False, e.job.deadline, 0, e.job.seq, e.index)
                return (True, 0.0, abs(e.length - oldest.length), e.job.seq, e.index)

            window.sort(key=order)
        picked: list[_Entry] = []
        budget = self.settings.max_batch_tokens
        for entry in window:
            if len(picked) >= slots:
                break
            width = max(longest, entry.length)
            if (already or picked) and padded_tokens(width, already + len(picked) + 1, self._beams) > budget:
                continue
            picked.append(entry)
            longest = width
        return picked, longest

    def _batch_s(self, pieces: int, padded_tokens_per_piece: float) -> float:
        """Predicted seconds of a batch of `pieces` pieces."""
        return self.cost.predict(pieces, math.ceil(padded_tokens_per_piece * pieces))

    def _full_batch_s(self, window: Sequence[_Entry]) -> float:
        """Predicted seconds of a full batch of pieces like those in `window`."""
        mean = sum(e.length for e in window) / len(window)
        return self._batch_s(self.settings.max_batch_size, mean * self.padding_ratio * self._beams)

    # -- bookkeeping -----------------------------------------------------------------------------

    @property
    def _beams(self) -> int:
        return max(1, self.settings.beams)

    @property
    def queued_pieces(self) -> int:
        return sum(pieces for pieces, _ in self._queued.values())

    @property
    def queued_tokens(self) -> int:
        return sum(tokens for _, tokens in self._queued.values())

    def queued_at_or_above(self, priority: Priority) -> tuple[int, int]:
        """(pieces, source tokens) queued at `priority` or more urgent: what a request would wait behind."""
        ahead = [self._queued[p] for p in Priority if p <= priority]
        return sum(pieces for pieces, _ in ahead), sum(tokens for _, tokens in ahead)

    def _count(self, priority: Priority, pieces: int, tokens: int) -> None:
        self._queued[priority][0] += pieces
        self._queued[priority][1] += tokens

    def _running_left(self) -> float:
        if self._running is None:
            return 0.0
        return max(0.0, self._running_since + self._running_predicted - self.clock())

    def _safe_count(self, piece: Piece) -> int:
        try:
            return max(1, int(self.count_tokens(piece)))
        except Exception:  # noqa: BLE001 - a piece that cannot be encoded fails in the backend, alone
            return max(1, len(piece.text) // 3)

    def _expire(self, job: _Job, budget: float) -> None:
        if job.future.done():
            return
        queued = self._cancel(job, "expired")
        job.future.set_exception(
            Refused(
                "expired",
                f"the request's deadline ({budget:.2f} s) passed, and its grace, before the engine could answer it "
                f"({job.outstanding} of {len(job.pieces)} pieces unanswered, {queued} still queued)",
                RETRY_AFTER_EXPIRED_S,
            )
        )

    def _cancel(self, job: _Job, reason: str) -> int:
        """Drop a request's pieces still queued; how many there were."""
        if job.cancelled or job.future.done():
            return 0
        job.cancelled = True
        dropped = 0
        for queue in self._queues.values():
            kept = [e for e in queue if e.job is not job]
            for entry in queue:
                if entry.job is job:
                    dropped += 1
                    self._count(entry.job.priority, -1, -entry.length)
            if len(kept) != len(queue):
                queue.clear()
                queue.extend(kept)
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
        """What admission decides from, for the API workers' early refusals
        (translator/contract/engine_load.py): `QueueState.wait_s` is `predicted_wait` on a busy
        engine for pieces of the queue's mean length."""
        pieces = self.queued_pieces
        full_batch_s = 0.0
        if self.cost.ready:
            per_piece_tokens = (self.queued_tokens / pieces if pieces else 1.0) * self.padding_ratio * self._beams
            full_batch_s = self._batch_s(self.settings.max_batch_size, per_piece_tokens)
        return QueueState(
            running=self._running is not None,
            running_left_s=self._running_left(),
            full_batch_s=full_batch_s,
            batch_size=self.settings.max_batch_size,
            ahead=tuple(self.queued_at_or_above(p)[0] for p in Priority),
        )
