"""An event loop whose clock is virtual, for testing what the scheduler decides without waiting.

When nothing is ready and no thread is working for the loop, time jumps to the next timer instead
of the loop sleeping: a 60-second deadline or a 1-second linger pass at once, in order. Work handed
to a thread (`run_in_executor`, `asyncio.to_thread`) holds time still until it is back, and a fake
model in that thread spends virtual time with `sleep_in_thread` rather than sleeping, during which
the loop's timers go on firing in order. Built on public
asyncio only: `SelectorEventLoop(selector)`, `time()` and `run_in_executor` overridden.
"""

from __future__ import annotations

import asyncio
import selectors
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
# The loop a thread is working for, set while it runs work that loop handed it: a thread outliving
# its test (a gated batch released at the test's end) must spend time on its own loop, which is
# closed by then, and never on the next test's (that drove the next test's count below zero).
_working_for = threading.local()
# While a thread works for the loop, the loop waits for it in real time, this long at a time.
_POLL_S = 0.005


class _JumpingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if self._loop.threads_working < 0:  # a bug of this loop's: fail, rather than hang a suite
            raise RuntimeError("virtual time: more threads released than held")
        if self._loop.threads_working:
            return super().select(_POLL_S if timeout is None else min(timeout, _POLL_S))
        if timeout is None:
            return super().select(None)  # nothing scheduled: only I/O or a thread can wake it
        self._loop.advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._now = 1000.0
        self.threads_working = 0
        self._threads_lock = threading.Lock()
        super().__init__(_JumpingSelector(self))

    def hold(self, threads: int) -> None:
        """`threads` more (or fewer) threads are working for the loop: time stands still while any is."""
        with self._threads_lock:
            self.threads_working += threads

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Spend `seconds` of virtual time (a fake model's batch, from its thread)."""
        self._now += max(0.0, seconds)

    def run_in_executor(self, executor: Any, func: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Time stands still from here until the thread's work is done and its result is back on
        the loop; a call cancelled while its thread still runs (the scheduler closing during a
        batch) keeps time still until the thread ends: released at the cancellation, the count
        would go below zero once the thread's own sleep gave its share back."""
        self.hold(1)
        lock = threading.Lock()
        state = {"started": False, "ended": False, "owed": False}

        def job() -> T:
            with lock:
                state["started"] = True
            _working_for.loop = self
            try:
                return func(*args)
            finally:
                _working_for.loop = None
                with lock:
                    state["ended"] = True
                    owed = state["owed"]
                if owed:
                    self.call_soon_threadsafe(self.hold, -1)

        def settled(future: asyncio.Future[T]) -> None:
            with lock:
                if future.cancelled() and state["started"] and not state["ended"]:
                    state["owed"] = True  # the thread gives it back when it ends
                    return
            self.hold(-1)

        future = super().run_in_executor(executor, job)
        future.add_done_callback(settled)
        return future


_current: VirtualTimeLoop | None = None


def run(coro: Awaitable[T], timeout_s: float = 600.0) -> T:
    """`asyncio.run` on a virtual-time loop; `timeout_s` is virtual too."""
    global _current
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        _current = runner.get_loop()  # type: ignore[assignment]
        try:
            return runner.run(asyncio.wait_for(coro, timeout_s))
        finally:
            _current = None


def now() -> float:
    assert _current is not None, "not under virtual_time.run"
    return _current.time()


def _own_loop() -> VirtualTimeLoop:
    loop: VirtualTimeLoop | None = getattr(_working_for, "loop", None)
    assert loop is not None, "not in a thread a virtual-time loop handed work to"
    return loop


def sleep_in_thread(seconds: float) -> None:
    """In a thread the loop handed work to: take `seconds` of virtual time, as a model's batch does,
    while the loop's timers (other callers' trips, lingers, deadlines) fire at their own times."""
    loop = _own_loop()
    done = threading.Event()

    def wake() -> None:
        loop.hold(1)  # before the thread runs on: time stands still until it is back
        done.set()

    def start() -> None:
        loop.hold(-1)
        loop.call_later(seconds, wake)

    try:
        loop.call_soon_threadsafe(start)
    except RuntimeError:
        return  # the loop is closed: nobody waits for this batch
    # A loop closed meanwhile (the scheduler's test ended during the batch) never wakes it: the
    # thread must end anyway, or the interpreter's exit waits on it for ever.
    while not done.wait(0.05):
        if loop.is_closed():
            return


class Gate:
    """A threading.Event for a fake backend to wait at, whose wait does not hold virtual time still:
    `wait` in the backend's thread, `set` and `clear` from the test, on the loop."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._waiting = 0

    def wait(self, timeout: float = 10.0) -> bool:
        loop = _own_loop()
        with self._lock:
            if self._event.is_set():
                return True
            self._waiting += 1
            loop.hold(-1)
        return self._event.wait(timeout)

    def set(self) -> None:
        assert _current is not None, "not under virtual_time.run"
        with self._lock:
            _current.hold(self._waiting)  # they run on from now: time stands still for them
            self._waiting = 0
            self._event.set()

    def clear(self) -> None:
        self._event.clear()
