"""The model runner (translator/engine/model_runner.py): `generate` in a process of its own, as a
`Backend`, on real child processes; and the simulated backend that holds the interpreter lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from translator.config import ConfigError, Engine, Generation, load_settings
from translator.contract.protocol import Piece
from translator.engine.backends import Decoding, SpecialIds
from translator.engine.backends.simulated_backend import SimulatedBackend, hold_lock
from translator.engine.model_runner import (
    BackendSpec,
    RunnerError,
    RunnerGone,
    RunnerProcess,
    in_process,
    start_backend,
)

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
ROWS = [[7, 10, 11, 2], [8, 12, 2]]


def simulated_spec(**engine: object) -> BackendSpec:
    settings = Engine(backend="simulated", **engine)  # type: ignore[arg-type]
    return BackendSpec("unused", settings, Decoding(1, 1.0, 0), SpecialIds(2, 2, 1), 128)


@pytest.fixture
def runner():
    process = RunnerProcess(simulated_spec(simulated_batch_s=[[1, 0.01]], runner="process"))
    yield process
    process.close()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(condition, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.model
def test_where_generate_runs(fixture_model, converted_fixture_model) -> None:
    assert in_process(Engine(runner="process", backend="ctranslate2"), fixture_model)
    assert not in_process(Engine(runner="thread", device="cuda", backend="transformers"), fixture_model)
    # auto: a process for the torch engines, on any device, and for the stand-in that holds the
    # lock; CTranslate2 (C++, the lock released) and the sleeping stand-in stay in a thread.
    assert in_process(Engine(device="cuda", backend="transformers"), fixture_model)
    assert in_process(Engine(device="cpu", backend="compiled"), fixture_model)
    assert in_process(Engine(device="cpu"), fixture_model)  # no conversion: transformers
    assert not in_process(Engine(device="cpu"), converted_fixture_model)  # CTranslate2 int8
    assert in_process(Engine(backend="simulated", simulated_lock_share=0.5), fixture_model)
    assert not in_process(Engine(backend="simulated"), fixture_model)
    assert isinstance(start_backend(simulated_spec(simulated_lock_share=0.5)), RunnerProcess)
    assert isinstance(start_backend(simulated_spec()), SimulatedBackend)


def test_a_process_answers_as_the_backend_in_this_process_does(runner: RunnerProcess) -> None:
    here = SimulatedBackend([(1, 0.01)])
    assert runner.generate(ROWS, [9, 9], 16) == here.generate(ROWS, [9, 9], 16)
    assert runner.generate(ROWS, [9, 9], 1) == here.generate(ROWS, [9, 9], 1)
    assert (runner.name, runner.device, runner.precision) == ("simulated", "cpu", "none")
    assert runner.describe()["runner"] == f"process {runner.pid}"
    assert runner.memory_stats(reset=True) is None
    assert runner.pid != os.getpid() and not gone(runner.pid)


def test_a_failure_in_the_child_keeps_its_name_and_the_runner_serves_on(runner: RunnerProcess) -> None:
    with pytest.raises(RunnerError) as raised:
        runner._call("no-such-call")
    assert type(raised.value).__name__ == "ValueError" and "unknown call 'no-such-call'" in str(raised.value)
    assert runner.failure is None
    assert [g.ids for g in runner.generate(ROWS, [9, 9], 16)] == [[10, 11], [12]]


def test_a_child_that_fails_to_load_says_why() -> None:
    spec = simulated_spec(runner="process")
    broken = BackendSpec("unused", spec.engine, spec.decoding, spec.special, spec.vocabulary_size, ((1, 2),), 0)
    # Both candidates of `auto` on CUDA are real engines, which cannot load "unused".
    with pytest.raises(RunnerError, match="no engine could run here"):
        RunnerProcess(broken)


def test_the_childs_death_fails_every_call_at_once_and_says_why(runner: RunnerProcess, monkeypatch) -> None:
    os.kill(runner.pid, signal.SIGKILL)
    with pytest.raises(RunnerGone, match=rf"process {runner.pid} exited with code -9"):
        runner.generate(ROWS, [9, 9], 16)
    assert runner.failure is not None and "exited" in runner.failure

    def never(what: str):
        def touched(*args, **kwargs):
            raise AssertionError(f"{what} a dead process")

        return touched

    # At once: the next call neither writes to the dead process, nor reads from it, nor waits on it.
    with monkeypatch.context() as patch:
        patch.setattr(runner._connection, "send", never("sent to"))
        patch.setattr(runner._connection, "recv", never("read from"))
        patch.setattr(runner._process, "wait", never("waited on"))
        with pytest.raises(RunnerGone):
            runner.generate(ROWS, [9, 9], 16)


def test_a_dead_child_is_seen_without_a_call(runner: RunnerProcess) -> None:
    # The engine's watchdog asks `failure` every second: a child that died while the sentence cache
    # answered every request must be found too.
    assert runner.failure is None
    os.kill(runner.pid, signal.SIGKILL)
    assert wait_until(lambda: runner.failure is not None)
    assert f"process {runner.pid} exited with code -9" in str(runner.failure)


def test_signals_to_the_group_leave_the_child_to_the_engine(runner: RunnerProcess) -> None:
    # SIGTERM/SIGINT go to every process of a group on Ctrl-C or a stop: the engine drains first and
    # then stops the child itself.
    os.kill(runner.pid, signal.SIGTERM)
    os.kill(runner.pid, signal.SIGINT)
    time.sleep(0.2)
    assert [g.ids for g in runner.generate(ROWS, [9, 9], 16)] == [[10, 11], [12]]
    pid = runner.pid
    runner.close()
    assert gone(pid)
    assert runner.failure is None  # stopped, not failed


def test_the_child_exits_when_the_engine_process_dies(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time
        from translator.config import Engine
        from translator.engine.backends import Decoding, SpecialIds
        from translator.engine.model_runner import BackendSpec, RunnerProcess
        spec = BackendSpec("unused", Engine(backend="simulated", runner="process"), Decoding(1, 1.0, 0),
                           SpecialIds(2, 2, 1), 128)
        print(RunnerProcess(spec).pid, flush=True)
        time.sleep(600)
        """
    )
    engine = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        child = int(engine.stdout.readline())  # type: ignore[union-attr]
        assert not gone(child)
        engine.kill()  # no clean-up of any kind in the engine
        engine.wait()
        assert wait_until(lambda: gone(child)), "the model runner outlived its engine"
    finally:
        engine.kill()


@pytest.mark.model
def test_the_engine_translates_exactly_the_same_through_a_process(fixture_model) -> None:
    from translator.engine.translator import Translator

    texts = ["Life is like a box of chocolates.", "Good morning, everyone!", "Where is the station?"]
    pieces = [Piece(text=t, source="en", target="fr") for t in texts] + [
        Piece(text=texts[0], source="en", target="de", alternatives=2),
        Piece(text="x", source="en", target="xx"),  # fails alone, in both
    ]
    answers = {}
    for runner in ("thread", "process"):
        translator = Translator(fixture_model, Engine(runner=runner), Generation())  # type: ignore[arg-type]
        try:
            answers[runner] = translator.translate(pieces)
            assert ("runner" in translator.describe()) == (runner == "process")
        finally:
            translator.close()
    assert answers["process"] == answers["thread"]
    assert answers["process"][0].text == "La vie, c'est comme une boîte de chocolats."
    assert answers["process"][-1].error == "unsupported target language 'xx'"


@pytest.mark.model
def test_a_batch_whose_runner_died_fails_whole_and_is_not_halved(fixture_model) -> None:
    from translator.engine.translator import Translator

    translator = Translator(fixture_model, Engine(runner="process"), Generation())
    try:
        os.kill(translator.backend.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        with pytest.raises(RunnerGone):
            translator.translate([Piece(text=f"Sentence {i}.", source="en", target="fr") for i in range(8)])
        assert translator.failure is not None
    finally:
        translator.close()


@pytest.mark.pure
def test_the_stand_in_spends_a_call_in_steps_holding_the_lock_for_its_share() -> None:
    held: list[float] = []
    slept: list[float] = []
    backend = SimulatedBackend([(1, 0.2), (512, 0.2)], lock_share=0.75, sleep=slept.append, hold=held.append)
    out = backend.generate([[7, *range(10, 15), 2], [8, 12, 2]], [9, 9], max_new_tokens=16)
    assert [len(g.ids) for g in out] == [5, 1]
    assert len(held) == len(slept) == 6  # a step per output token of the longest row, and the encoder's
    assert sum(held) == pytest.approx(0.15) and sum(slept) == pytest.approx(0.05)
    assert backend.device_seconds == pytest.approx(0.05)
    backend.generate([[7, 10, 2]], [9], max_new_tokens=16, min_new_tokens=15)
    assert len(held) == 6 + 16  # forced lengths: that many steps


@pytest.mark.pure
def test_holding_the_lock_is_cpu_work_of_the_calling_thread() -> None:
    started = time.thread_time()
    hold_lock(0.02)
    assert time.thread_time() - started >= 0.02


@pytest.mark.pure
def test_a_lock_share_is_for_the_simulated_backend_only(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "services:\n  TranslationEngine:\n    translation:\n      engine:\n"
        "        backend: ctranslate2\n        simulated_lock_share: 0.5\n"
    )
    with pytest.raises(ConfigError, match="simulated_lock_share are for backend simulated only"):
        load_settings(path)
    path.write_text("services:\n  TranslationEngine:\n    translation:\n      engine:\n        runner: fork\n")
    with pytest.raises(ConfigError, match="runner"):
        load_settings(path)


def test_the_child_dies_with_the_engine_even_in_the_middle_of_a_batch(tmp_path: Path) -> None:
    # A 60 s batch in the child, then the engine SIGKILLed: the child must not finish it first.
    script = textwrap.dedent(
        """
        import threading, time
        from translator.config import Engine
        from translator.engine.backends import Decoding, SpecialIds
        from translator.engine.model_runner import BackendSpec, RunnerProcess
        engine = Engine(backend="simulated", runner="process", simulated_batch_s=[[1, 60.0]])
        runner = RunnerProcess(BackendSpec("unused", engine, Decoding(1, 1.0, 0), SpecialIds(2, 2, 1), 128))
        print(runner.pid, flush=True)
        runner.generate([[7, 10, 2]], [9], 16)
        """
    )
    engine = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        child = int(engine.stdout.readline())  # type: ignore[union-attr]
        time.sleep(0.5)  # the batch has begun
        engine.kill()
        engine.wait()
        assert wait_until(lambda: gone(child), timeout_s=10), "the model runner outlived its engine"
    finally:
        engine.kill()


def test_closing_never_waits_longer_than_its_limit_on_a_batch(monkeypatch) -> None:
    import threading

    from translator.engine import model_runner

    monkeypatch.setattr(model_runner, "STOP_TIMEOUT_S", 0.5)
    runner = RunnerProcess(simulated_spec(simulated_batch_s=[[1, 60.0]], runner="process"))
    batch = threading.Thread(target=lambda: pytest.raises(RunnerGone, runner.generate, ROWS, [9, 9], 16), daemon=True)
    batch.start()
    time.sleep(0.3)  # the batch holds the channel
    started = time.monotonic()
    runner.close()
    assert time.monotonic() - started < 30  # well under the batch's 60 s
    assert gone(runner.pid)
    batch.join(5)


@pytest.mark.pure
def test_a_cuda_error_that_breaks_the_device_ends_the_child_and_out_of_memory_does_not() -> None:
    from translator.engine.model_runner import device_broken

    assert device_broken(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert device_broken(RuntimeError("CUDA error: device-side assert triggered"))
    assert not device_broken(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not device_broken(RuntimeError("CUDA error: out of memory"))
    assert not device_broken(ValueError("unknown call 'x'"))


def test_a_runner_let_go_without_close_ends_its_child() -> None:
    import gc

    runner = RunnerProcess(simulated_spec(runner="process"))
    pid = runner.pid
    del runner
    gc.collect()
    assert wait_until(lambda: gone(pid), timeout_s=10), "a dropped runner left its child running"
