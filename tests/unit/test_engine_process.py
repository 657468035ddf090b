"""The engine's processes, recorded for the API workers: a dead engine is seen as dead at once,
including the zombie the arbiter has not reaped yet and a pid given since to another process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from translator.shm.engine_process import EngineProcess, announce_engine, withdraw_engine
from translator.shm.records import Owner, Records

pytestmark = pytest.mark.pure

ROOT = Path(__file__).resolve().parents[2]


def recorded(path: Path) -> Owner | None:
    """The process an engine's record names (the record is its owner alone)."""
    records = Records.open(path, "")
    record = records.read(0)
    records.close()
    return None if record is None else record[0]


def start_engine(base: Path) -> subprocess.Popen:
    """Another process that records itself as an engine under `base`, then waits."""
    code = (
        "import pathlib; from translator.shm.engine_process import announce_engine; "
        f"announce_engine(pathlib.Path({str(base)!r})); input()"
    )
    engine = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE)
    record = base.with_name(f"{base.name}.{engine.pid}")
    # The state the tests need: the engine's record readable and naming it (not merely a file).
    deadline = time.monotonic() + 60
    while not (record.exists() and (owner := recorded(record)) is not None and owner.pid == engine.pid):
        assert time.monotonic() < deadline and engine.poll() is None, "the engine never recorded itself"
        time.sleep(0.05)
    return engine


def kill_unreaped(engine: subprocess.Popen) -> None:
    """SIGKILL, and leave the zombie, as the arbiter does for a few seconds."""
    os.kill(engine.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while psutil.Process(engine.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_nothing_recorded_is_no_evidence_of_a_death(tmp_path: Path) -> None:
    assert EngineProcess(tmp_path / "engine").exited() is False
    (tmp_path / "engine.123").write_text("half a line")
    assert EngineProcess(tmp_path / "engine").exited() is False


def test_an_engine_record_appears_only_once_it_is_written_whole(tmp_path: Path, monkeypatch) -> None:
    # A reader that found the file before its record was written, then the engine killed, saw a
    # record of no one and took the death for no evidence (#52, once in CI under two workers).
    base = tmp_path / "engine"
    seen_while_writing: list[list[str]] = []
    write = Records.write

    def watched(self: Records, index: int, owner: Owner, values) -> None:
        seen_while_writing.append(sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("engine.")))
        write(self, index, owner, values)

    monkeypatch.setattr(Records, "write", watched)
    path = announce_engine(base)
    assert path is not None and seen_while_writing == [[]]
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name] and recorded(path) == Owner.current()


def test_a_running_engine_has_not_exited(tmp_path: Path) -> None:
    path = announce_engine(tmp_path / "engine")
    assert path is not None and recorded(path) == Owner.current()
    assert EngineProcess(tmp_path / "engine").exited() is False


@pytest.mark.processes
def test_a_killed_engine_has_exited_before_and_after_it_is_reaped(tmp_path: Path) -> None:
    engine = start_engine(tmp_path / "engine")
    watch = EngineProcess(tmp_path / "engine")
    try:
        assert watch.exited() is False
        kill_unreaped(engine)
        assert watch.exited() is True
    finally:
        engine.kill()
        engine.wait()
    assert watch.exited() is True


@pytest.mark.processes
def test_with_two_engines_one_dead_is_not_a_death_and_a_new_one_clears_old_records(tmp_path: Path) -> None:
    base = tmp_path / "engine"
    first, second = start_engine(base), start_engine(base)
    watch = EngineProcess(base)
    try:
        kill_unreaped(first)
        assert watch.exited() is False
        kill_unreaped(second)
        assert watch.exited() is True
        # The respawned engine records itself and removes the records of the dead.
        announce_engine(base)
        assert sorted(p.name for p in tmp_path.iterdir()) == [f"engine.{os.getpid()}"]
        assert watch.exited() is False
    finally:
        for engine in (first, second):
            engine.kill()
            engine.wait()


def test_a_pid_given_to_another_process_reads_as_dead(tmp_path: Path) -> None:
    path = announce_engine(tmp_path / "engine")
    assert path is not None
    owner = recorded(path)
    # Recorded in seconds since boot, not since the epoch: a wall-clock step changes nothing
    # (tests/unit/test_shm_records.py steps the clock).
    assert owner is not None and 0 < owner.started <= time.time() - psutil.boot_time() + 1
    # The same pid, started one clock tick later: another process.
    records = Records.create(path, "")
    records.write(0, Owner(owner.pid, owner.started + 0.01), ())
    records.close()
    assert EngineProcess(tmp_path / "engine").exited() is True


def test_withdraw_removes_this_engines_record(tmp_path: Path) -> None:
    path = announce_engine(tmp_path / "engine")
    withdraw_engine(path)
    assert path is not None and not path.exists()


def test_an_engine_that_cannot_write_its_record_still_starts(tmp_path: Path) -> None:
    assert announce_engine(tmp_path / "missing-directory" / "engine") is None
    withdraw_engine(None)
