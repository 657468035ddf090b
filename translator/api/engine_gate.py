"""What one API worker believes about the engine, so that it answers 503 instead of hanging.

When the engine process dies, BentoML's arbiter keeps its listening socket open: new calls
connect and then wait, up to `traffic.timeout` (300 s), for a process that may never come (in a
container, dead workers are not respawned and the server does not exit). So each API worker keeps
a gate:

- **up**: calls pass. A watchdog asks the engine's `/readyz` every few seconds with a short
  timeout; several failures in a row, or a dropped connection that a probe does not explain away,
  close the gate. The engine's process is checked too, a few times a second, and by a call when
  no check is that recent (translator/shm/engine_process.py): its death closes every worker's gate at once,
  not only that of a worker whose call it dropped.
- **down**: calls are refused at once (503, Retry-After), and a recovery loop probes twice a
  second until the engine says ready again (it says so only after its warm-up). The gate starts
  down ("starting"). Calls already waiting on the engine are cancelled and answered 503 too, but
  only when the engine stopped *answering* (a probe timed out, a connection dropped): those calls
  would hang. When it *refuses* new connections, as it does from the moment it gets SIGTERM while
  it drains the calls it has, the waiting calls still get their answers: abandoning them turned a
  graceful shutdown into a burst of 503s.
- **dead**: down for longer than `dead_after_s` after having been up once. `/livez` turns false,
  so Kubernetes restarts the container: the way out when the engine will not come back.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from translator.contract.errors import Unavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")
Probe = Callable[[float], Awaitable[bool]]


class Check(enum.Enum):
    """One probe's outcome: the engine said ready, said no (or refused the connection), or was silent."""

    READY = "ready"
    NOT_READY = "not ready"
    SILENT = "silent"


class EngineGate:
    def __init__(
        self,
        probe: Probe,
        *,
        probe_timeout_s: float = 2.0,
        watch_interval_s: float = 5.0,
        failures_to_close: int = 3,
        recheck_interval_s: float = 0.5,
        dead_after_s: float = 180.0,
        engine_exited: Callable[[], bool] = lambda: False,
        process_check_interval_s: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probe = probe
        self._engine_exited = engine_exited
        self.process_check_interval_s = process_check_interval_s
        self.probe_timeout_s = probe_timeout_s
        self.watch_interval_s = watch_interval_s
        self.failures_to_close = failures_to_close
        self.recheck_interval_s = recheck_interval_s
        self.dead_after_s = dead_after_s
        self._clock = clock
        self.down_since: float | None = clock()
        self.reason = "the translation engine is starting"
        self._seen_up = False
        self._waiting: set[asyncio.Task] = set()
        self._background: set[asyncio.Task] = set()
        self._closed = False
        self._process_checked = float("-inf")

    # -- state ---------------------------------------------------------------------------------

    @property
    def is_up(self) -> bool:
        return self.down_since is None

    def is_alive(self) -> bool:
        if self.down_since is None or not self._seen_up:
            return True
        return self._clock() - self.down_since < self.dead_after_s

    def mark_up(self) -> None:
        if self.down_since is not None:
            logger.info("translation engine ready; accepting calls (%s before)", self.reason)
        self.down_since = None
        self._seen_up = True

    def mark_down(self, reason: str, *, abandon_waiting: bool = True) -> None:
        """Refuse new calls; `abandon_waiting=False` lets calls the engine already holds finish."""
        if self.down_since is None:
            logger.warning("translation engine unavailable: %s; refusing calls until it is ready", reason)
            self.down_since = self._clock()
            self.reason = reason
            self._spawn(self._recover())
        if abandon_waiting:
            for task in list(self._waiting):
                task.cancel()

    # -- probing -------------------------------------------------------------------------------

    async def probe(self) -> bool:
        """One bounded readiness question; any failure (refused, reset, timeout) is a no."""
        return await self._check() is Check.READY

    async def _check(self) -> Check:
        try:
            ready = await asyncio.wait_for(self._probe(self.probe_timeout_s), self.probe_timeout_s)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            logger.debug("engine probe timed out after %.1fs", self.probe_timeout_s)
            return Check.SILENT
        except Exception as exc:  # noqa: BLE001 - whatever the client raises, the answer is "not ready"
            logger.debug("engine probe failed: %r", exc)
            return Check.NOT_READY
        return Check.READY if ready else Check.NOT_READY

    def start(self) -> None:
        """Begin watching (call from within the worker's event loop)."""
        self._spawn(self._recover())
        self._spawn(self._watch())
        self._spawn(self._watch_process())

    async def close(self) -> None:
        # The loops also stop on the flag: on Python 3.11, `asyncio.wait_for` can swallow a
        # cancellation that arrives as the probe it waits on finishes, and a loop that missed its
        # cancellation would keep the worker's shutdown waiting here for ever.
        self._closed = True
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    async def _recover(self) -> None:
        while self.down_since is not None and not self._closed:
            # A ready answer with no engine process alive is not believed: the gate would open and
            # close again with every check.
            if await self.probe() and not self._engine_exited():
                self.mark_up()
                return
            await asyncio.sleep(self.recheck_interval_s)

    async def _watch(self) -> None:
        failures = 0
        while not self._closed:
            await asyncio.sleep(self.watch_interval_s)
            if not self.is_up:
                failures = 0
                continue
            check = await self._check()
            if check is Check.READY:
                failures = 0
                continue
            failures += 1
            if failures >= self.failures_to_close:
                # Several in a row: one slow answer from a busy engine is not a death. Only an engine
                # that stopped answering strands the calls it holds; one that refuses or says "not
                # ready" (draining on SIGTERM) still answers them.
                self.mark_down(
                    f"the translation engine did not answer {failures} health checks",
                    abandon_waiting=check is Check.SILENT,
                )
                failures = 0

    async def _watch_process(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.process_check_interval_s)
            if self.is_up:
                self._check_process()

    def _check_process(self) -> None:
        """Close the gate if the engine's process has exited, abandoning the calls that wait: the
        ones it held are lost with it, and the ones queued on the arbiter's socket would wait for
        a respawned engine's model load (a minute for a large model), or for ever in a container."""
        self._process_checked = self._clock()
        if self._engine_exited():
            self.mark_down("the translation engine process exited")

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def ready(self) -> bool:
        """This worker's readiness: open, and the engine says ready now.

        The kubelet's probes reach one worker of several: the startup probe may pass through one
        whose gate opened while another's is still "starting" (its recovery loop asks twice a
        second). Such a gate asks the engine itself, as a call would, so that a pod just started
        does not read unready on its next probe. A gate closed after having been open answers no
        at once, without waiting on a socket nobody may answer."""
        if self.is_up:
            self._check_process()
            if not self.is_up:
                return False
        elif self._seen_up:
            return False
        if not await self.probe():
            return False
        if not self.is_up:
            self.mark_up()
        return True

    # -- calls ---------------------------------------------------------------------------------

    async def call(self, make_call: Callable[[], Awaitable[T]]) -> T:
        """Run one engine call, refusing it while down and abandoning it if the gate closes."""
        # A check reads every engine record and /proc: per call, it was 13% of an API worker's CPU
        # under one-record load. One as recent as the watcher's is as good.
        if self.down_since is None and self._clock() - self._process_checked >= self.process_check_interval_s:
            self._check_process()
        if self.down_since is not None:
            # Each API worker has its own gate, and the kubelet's probe reaches only one of them:
            # a worker still "starting" when its pod turned ready asks the engine itself, once.
            if self._seen_up or not await self.probe():
                raise Unavailable(f"{self.reason}; retry later")
            self.mark_up()
        task = asyncio.ensure_future(make_call())
        self._waiting.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and self.down_since is not None and not (current and current.cancelling()):
                raise Unavailable(f"{self.reason}; retry later") from None
            raise
        finally:
            self._waiting.discard(task)
