"""The engine's process id, shared with the API workers: a dead engine is seen as dead at once,
including the zombie the arbiter has not reaped yet and a pid given since to another process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from translator.contract.engine_process import EngineProcess, announce_engine, server_file, withdraw_engine

ROOT = Path(__file__).resolve().parents[2]


def test_nothing_announced_is_no_evidence_of_a_death(tmp_path: Path) -> None:
    assert EngineProcess(tmp_path / "engine").exited() is False
    (tmp_path / "engine").write_text("half a line")
    assert EngineProcess(tmp_path / "engine").exited() is False


def test_a_running_engine_has_not_exited(tmp_path: Path) -> None:
    path = announce_engine(tmp_path / "engine")
    assert path.read_text().split()[0] == str(os.getpid())
    assert EngineProcess(path).exited() is False


def test_a_killed_engine_has_exited_before_and_after_it_is_reaped(tmp_path: Path) -> None:
    path = tmp_path / "engine"
    code = (
        "import pathlib; from translator.contract.engine_process import announce_engine; "
        f"announce_engine(pathlib.Path({str(path)!r})); input()"
    )
    engine = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not path.exists():
            assert time.monotonic() < deadline and engine.poll() is None, "the engine never announced itself"
            time.sleep(0.05)
        watch = EngineProcess(path)
        assert watch.exited() is False
        os.kill(engine.pid, signal.SIGKILL)
        # Not reaped: the process stays a zombie, as under the arbiter for a few seconds.
        deadline = time.monotonic() + 10
        while psutil.Process(engine.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert watch.exited() is True
    finally:
        engine.kill()
        engine.wait()
    assert watch.exited() is True


def test_a_pid_given_to_another_process_reads_as_dead(tmp_path: Path) -> None:
    path = tmp_path / "engine"
    started = psutil.Process().create_time()
    path.write_text(f"{os.getpid()} {started - 5.0!r}\n")
    assert EngineProcess(path).exited() is True


def test_withdraw_removes_only_this_engines_record(tmp_path: Path) -> None:
    path = announce_engine(tmp_path / "engine")
    withdraw_engine(path)
    assert not path.exists()
    path.write_text(f"{os.getpid() + 1} 0.0\n")  # a newer engine's
    withdraw_engine(path)
    assert path.exists()


def test_the_file_is_named_after_the_server_all_its_processes_share() -> None:
    assert server_file("engine").name == f"translator-engine-{os.getppid()}"


def test_an_engine_that_cannot_write_its_record_still_starts(tmp_path: Path) -> None:
    assert announce_engine(tmp_path / "missing-directory" / "engine") is None
    withdraw_engine(None)
