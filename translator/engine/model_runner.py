"""Where the model's `generate` runs: a thread of the engine process, or a process of its own.

Eager `generate` on CUDA is a Python loop launching thousands of small kernels a batch, each
launch holding the interpreter lock. In the engine process that lock is also the event loop's,
which reads every call off the channel, looks it up in the cache and schedules it: measured on an
H100, one-record traffic got 0.17x of the engine's own rate with the GPU busy under 15% of the
time (issue #37; the likely cause, each side waiting for the lock, is not yet measured there). So the backend can
run in a child process (`RunnerProcess`) that does nothing else: the engine process keeps the
tokenizer, the scheduler and the cache, and hands it batches of token ids over a socket pair,
getting token ids back. Everything above the backend (translator/engine/translator.py) is the same
either way: a `RunnerProcess` is a `Backend`.

`runner: auto` does so for the torch backends (transformers, compiled) on any device: measured on
2 CPU cores with the fixture on transformers float32, one-record traffic got 397 sentences/s with
the model in a process against 271 in a thread (bench/results/standin.md). CTranslate2 decodes in
C++ without the lock and stays in a thread (508 against 526, the same within the noise), which
saves a process and a copy of each batch; `runner: process` or `thread` forces either.

The child ignores SIGINT and SIGTERM: it stops when the engine tells it to, so the engine can drain
first, and exits with the engine process (it watches its parent), even in the middle of a batch. A CUDA
error that leaves the device unusable (not out of memory) makes it exit. If the child dies, every
call fails at once, `failure` says why, the engine's watchdog refuses the
waiting callers (translator/engine/health.py), and the engine process exits (service.py): a new
engine and child outside a container, a restarted pod inside one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import translator
from translator.config import Engine, with_engine
from translator.engine.backends import (
    TORCH_BACKENDS,
    Backend,
    Decoding,
    Generated,
    SpecialIds,
    cuda_candidates,
    fastest,
    load_backend,
)
from translator.engine.backends import choose as choose_backend
from translator.engine.backends.base import MemoryStats

logger = logging.getLogger(__name__)

# How long `close` waits for the child to exit before killing it.
STOP_TIMEOUT_S = 10.0
# The child's exit code when the device is in an error state it cannot leave.
DEVICE_BROKEN_EXIT = 70
# How often the child looks whether the engine process is still its parent.
PARENT_POLL_S = 0.5


@dataclass(frozen=True)
class BackendSpec:
    """What to load, picklable for the child: the settings and, for `auto` on CUDA, the rows both
    engines are timed on (the faster is kept, translator/engine/backends/__init__.py `fastest`)."""

    model_dir: str
    engine: Engine
    decoding: Decoding
    special: SpecialIds
    vocabulary_size: int
    measured_rows: tuple[tuple[int, ...], ...] = ()
    measured_target: int = 0


def open_backend(spec: BackendSpec) -> Backend:
    """The backend `spec` asks for, loaded in this process."""
    if spec.measured_rows:

        def loader(choice: str) -> Any:
            engine = with_engine(spec.engine, choice)
            return lambda: load_backend(spec.model_dir, engine, spec.decoding, spec.special, spec.vocabulary_size)

        rows = [list(row) for row in spec.measured_rows]
        loaders = [(f"{b}:{d}", loader(f"{b}:{d}")) for b, d in cuda_candidates(spec.model_dir)]
        backend, _ = fastest(loaders, rows, [spec.measured_target] * len(rows), 16)
        return backend
    return load_backend(spec.model_dir, spec.engine, spec.decoding, spec.special, spec.vocabulary_size)


def in_process(engine: Engine, model_dir: str | Path) -> bool:
    """Whether `generate` runs in a process of its own (see the module's docstring)."""
    if engine.runner != "auto":
        return engine.runner == "process"
    backend, device, _ = choose_backend(engine, model_dir=model_dir)
    return backend in TORCH_BACKENDS or (backend == "simulated" and engine.simulated_lock_share > 0)


def start_backend(spec: BackendSpec) -> Backend:
    """The backend, in a child process where `in_process` says so, else loaded here."""
    if in_process(spec.engine, spec.model_dir):
        return RunnerProcess(spec)
    return open_backend(spec)


class RunnerError(RuntimeError):
    """A call that failed in the child; its subclass bears the name of the child's exception, so a
    piece's error reads as it would in-process ("OutOfMemoryError: CUDA out of memory ...")."""


class RunnerGone(RuntimeError):
    """The child process exited: nothing it held can be asked again."""


_ERRORS: dict[str, type[RunnerError]] = {}


def _error(name: str, message: str) -> RunnerError:
    kind = _ERRORS.setdefault(name, type(name, (RunnerError,), {}))
    return kind(message)


class RunnerProcess:
    """A `Backend` whose model lives in a child process (`python -m translator.engine.model_runner`)."""

    def __init__(self, spec: BackendSpec) -> None:
        ours, theirs = socket.socketpair()
        environment = dict(os.environ)
        # The child imports this package from where the engine did, whatever its working directory.
        root = str(Path(translator.__file__).resolve().parent.parent)
        environment["PYTHONPATH"] = os.pathsep.join(p for p in (root, environment.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "translator.engine.model_runner", str(theirs.fileno()), str(os.getpid())],
            pass_fds=[theirs.fileno()],
            env=environment,
        )
        theirs.close()
        self._connection = Connection(ours.detach())
        # A runner dropped without close() (a Translator a test or a tool let go) still ends its
        # child: the socket closes, and the child exits at its EOF.
        weakref.finalize(self, _release, self._connection)
        # One exchange at a time: the model thread's batches, the start-up's calibration, probes.
        self._lock = threading.Lock()
        self._failure: str | None = None
        self._closing = False
        self.pid = self._process.pid
        try:
            self.name, self.device, self.precision = self._call("open", spec)
        except BaseException:
            self.close()
            raise
        logger.info("model runner process %d: %s on %s (%s)", self.pid, self.name, self.device, self.precision)

    def generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int = 0,
        hypotheses: int = 1,
    ) -> list[Generated]:
        outputs = self._call("generate", rows, targets, max_new_tokens, min_new_tokens, hypotheses)
        return [Generated(ids, ended, tuple(alternatives)) for ids, ended, alternatives in outputs]

    def release_memory(self) -> None:
        self._call("release")

    def memory_stats(self, reset: bool = False) -> MemoryStats | None:
        stats: MemoryStats | None = self._call("memory", reset)
        return stats

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = self._call("describe")
        return {**described, "runner": f"process {self.pid}"}

    @property
    def failure(self) -> str | None:
        """Why the child cannot be asked any more, None while it can: seen at the first call after
        its death, or here, where the engine's watchdog asks every second (a child that died while
        the sentence cache answered every request is found all the same)."""
        if self._failure is None and not self._closing and (code := self._process.poll()) is not None:
            self._gone(code, "found exited")
        return self._failure

    def _gone(self, code: int, how: str) -> None:
        self._failure = f"the engine's model runner process {self.pid} exited with code {code} ({how})"
        logger.error("%s", self._failure)

    def close(self) -> None:
        """Ask the child to stop; killed if it has not within STOP_TIMEOUT_S, or if a batch still
        holds the channel that long (a drain that timed out, a stuck batch): shutdown never waits
        on the model for longer."""
        self._closing = True
        if self._lock.acquire(timeout=STOP_TIMEOUT_S):
            try:
                if self._process.poll() is None and self._failure is None:
                    # Not through `_call`: a child exiting on its own (it failed to load) is no failure.
                    with contextlib.suppress(OSError, EOFError):
                        self._connection.send(("stop",))
                        self._connection.recv()
                self._reap()
            finally:
                self._lock.release()
        else:
            self._process.kill()
            self._reap()
        self._connection.close()

    def _reap(self) -> int:
        """The child's exit code, once it has exited: killed if it takes longer than STOP_TIMEOUT_S
        (a child hung in its teardown must not hold the engine)."""
        try:
            return self._process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            return self._process.wait()

    def _call(self, kind: str, *arguments: Any) -> Any:
        with self._lock:
            if self.failure is not None:
                raise RunnerGone(self.failure)
            try:
                self._connection.send((kind, *arguments))
                reply = self._connection.recv()
            except (EOFError, OSError) as exc:
                self._gone(self._reap(), type(exc).__name__)
                raise RunnerGone(self._failure) from exc
        if reply[0] == "ok":
            return reply[1]
        raise _error(reply[1], reply[2])


def _release(connection: Connection) -> None:
    with contextlib.suppress(OSError):
        connection.close()


# -- the child ------------------------------------------------------------------------------------


def serve(connection: Connection) -> int:
    """Answer the engine's calls until it says stop or goes away."""
    try:
        kind, spec = connection.recv()
    except EOFError:
        return 0
    try:
        backend = open_backend(spec)
    except Exception as exc:  # noqa: BLE001 - the engine reports it and never becomes ready
        logger.exception("the model could not be loaded")
        connection.send(("error", type(exc).__name__, str(exc)))
        return 1
    connection.send(("ok", (backend.name, backend.device, backend.precision)))
    while True:
        try:
            kind, *arguments = connection.recv()
        except EOFError:
            return 0  # the engine process is gone
        reply: tuple[Any, ...]
        broken = False
        try:
            reply = ("ok", _answer(backend, kind, arguments))
        except Exception as exc:  # noqa: BLE001 - the engine isolates the failure to its pieces
            reply = ("error", type(exc).__name__, str(exc))
            broken = device_broken(exc)
        connection.send(reply)
        if kind == "stop":
            return 0
        if broken:
            # An illegal address, a device-side assert: the CUDA context is unusable for good, and
            # every later batch would fail while the engine looked ready. Exiting makes it the
            # runner's death, which restarts the engine (the module's docstring).
            logger.error("the device is in an error state it cannot leave (%s); the model runner exits", reply[-1])
            return DEVICE_BROKEN_EXIT


def _answer(backend: Backend, kind: str, arguments: Sequence[Any]) -> Any:
    if kind == "generate":
        return [(out.ids, out.ended, out.alternatives) for out in backend.generate(*arguments)]
    if kind == "memory":
        return backend.memory_stats(*arguments)
    if kind == "release":
        return backend.release_memory()
    if kind == "describe":
        return backend.describe()
    if kind == "stop":
        return None
    raise ValueError(f"unknown call {kind!r}")


def device_broken(exc: BaseException) -> bool:
    """Whether `exc` left the CUDA context unusable: a CUDA error other than running out of memory
    (which the engine survives by halving the batch)."""
    text = f"{type(exc).__name__}: {exc}"
    return "CUDA error" in text and "out of memory" not in text


def _die_with_parent(parent: int) -> None:
    """Exit when the engine process is gone, even in the middle of a generate: a thread watching
    the parent's pid (not PR_SET_PDEATHSIG, which fires when the creating *thread* ends: the offline
    tools start the engine in a worker thread, and their runner was killed under them)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: Sequence[str]) -> int:
    # The engine decides when this process stops (after its drain), not a signal to the group.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent(int(argv[1]))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s model-runner %(levelname)s %(name)s: %(message)s")
    return serve(Connection(int(argv[0])))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
