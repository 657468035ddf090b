"""The primitive the server's processes share memory through (translator/shm/records.py): a record
is never read half written, a writer that died mid-write does not poison it, and a process is told
apart from a later one given its pid, whatever the wall clock does."""

from __future__ import annotations

import multiprocessing
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from translator.shm.records import Owner, ProcessFiles, Records, process_file, server_file

pytestmark = pytest.mark.pure

WIDE = "q" * 32  # values a tear would show: a writer sets them all to one number


def test_the_files_are_named_after_the_server_all_its_processes_share() -> None:
    assert server_file("engine").name == f"translator-engine-{os.getppid()}"
    assert process_file(server_file("engine"), 42).name == f"translator-engine-{os.getppid()}.42"


def test_a_record_reads_as_its_writer_wrote_it_and_as_none_before(tmp_path: Path) -> None:
    writer = Records.create(tmp_path / "table", "qd", count=3)
    reader = Records.open(tmp_path / "table", "qd")
    assert writer.count == reader.count == 3
    assert reader.read(1) is None and not reader.written(1)
    me = Owner.current()
    writer.write(1, me, (7, 0.5))
    assert reader.read(1) == (me, (7, 0.5))
    writer.write(1, me, (8, 1.5))
    assert reader.read(1) == (me, (8, 1.5))
    assert reader.read(0) is None and reader.read(2) is None


def test_a_file_is_grown_to_the_most_records_asked_and_never_shrunk(tmp_path: Path) -> None:
    first = Records.create(tmp_path / "table", "q", count=4)
    first.write(3, Owner.current(), (5,))
    assert Records.create(tmp_path / "table", "q", count=2).count == 4
    larger = Records.create(tmp_path / "table", "q", count=8)
    assert larger.count == 8 and larger.read(3) == (Owner.current(), (5,))


def test_a_file_too_short_for_a_record_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "short").write_text("half a line")
    with pytest.raises(ValueError, match="shorter than one record"):
        Records.open(tmp_path / "short", "qd")


def write_forever(path: str, stop) -> None:
    records = Records.create(Path(path), WIDE)
    owner = Owner.current()
    n = 0
    while not stop.is_set():
        n += 1
        records.write(0, owner, (n,) * len(WIDE))


@pytest.mark.processes
def test_a_record_is_never_read_half_written(tmp_path: Path) -> None:
    # A writer rewriting the record as fast as it can, and a reader reading it meanwhile: every
    # read is one write whole (all its values one number), never the start of one and the end of
    # another.
    Records.create(tmp_path / "record", WIDE).close()
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    writer = ctx.Process(target=write_forever, args=(str(tmp_path / "record"), stop))
    writer.start()
    try:
        reader = Records.open(tmp_path / "record", WIDE)
        seen: set[int] = set()
        # For 1.5 s, and on a busy machine for as long as it takes to see 100 writes (given up after 30 s).
        started = time.monotonic()
        while time.monotonic() - started < 1.5 or len(seen) <= 100:
            assert time.monotonic() - started < 30, "the reader never read while the writer wrote"
            record = reader.read(0)
            if record is not None:
                values = record[1]
                assert len(set(values)) == 1, f"a torn read: {sorted(set(values))}"
                seen.add(values[0])
    finally:
        stop.set()
        writer.join(30)


def test_a_record_being_written_or_left_half_written_reads_as_it_was(tmp_path: Path) -> None:
    writer = Records.create(tmp_path / "record", "qq")
    me = Owner.current()
    writer.write(0, me, (1, 1))
    reader = Records.open(tmp_path / "record", "qq")
    assert reader.read(0) == (me, (1, 1))
    # A writer that died halfway: the sequence number odd, the values half new.
    seq = struct.unpack_from("<Q", writer._map, 0)[0]
    writer._map[: writer.layout.size] = writer.layout.pack(seq + 1, me.pid, me.started, 2, 999)
    assert reader.read(0) == (me, (1, 1))  # the last whole write
    assert Records.open(tmp_path / "record", "qq").read(0) is None  # never read whole: nothing
    # The next writer of the record (a worker taking over a dead one's slot) makes it whole again.
    writer.write(0, me, (3, 3))
    assert reader.read(0) == (me, (3, 3))
    assert Records.open(tmp_path / "record", "qq").read(0) == (me, (3, 3))


def test_a_process_alive_is_its_owner_and_a_pid_nobody_has_is_not() -> None:
    me = Owner.current()
    assert me.alive() and Owner(me.pid, me.started).alive()
    assert Owner.of(2**22 + 7) is None  # above any pid_max
    assert not Owner(2**22 + 7, me.started).alive()


def test_a_process_found_gone_is_not_looked_for_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # A dead worker's slot is read on every request until a new worker takes it over.
    gone = Owner(2**22 + 7, 0.0)
    assert not gone.alive()

    def looked_for(pid: int) -> Owner | None:
        raise AssertionError("looked for again")

    monkeypatch.setattr(Owner, "of", looked_for)
    assert not gone.alive()


def test_a_pid_given_to_another_process_is_not_its_owner() -> None:
    me = Owner.current()
    # The same pid, a process started one clock tick later (or earlier): not the one recorded.
    assert not Owner(me.pid, me.started + 0.01).alive()
    assert not Owner(me.pid, me.started - 0.01).alive()


@pytest.mark.processes
def test_a_zombie_is_dead_before_it_is_reaped() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        owner = Owner.of(child.pid)
        assert owner is not None and owner.alive()
        assert owner.alive()  # asked again: psutil's check on the process matched
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not owner.alive()
        assert Owner.of(child.pid) is None
        assert not Owner(child.pid, owner.started).alive()
    finally:
        child.kill()
        child.wait()
    assert not owner.alive()


@pytest.mark.skipif(sys.platform != "linux", reason="steps psutil's Linux boot time")
def test_a_step_of_the_wall_clock_does_not_change_an_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    # psutil's create_time() is seconds since the epoch, from /proc/stat's btime, which the
    # kernel moves when the wall clock steps: the start since boot does not move.
    import psutil._pslinux as pslinux

    recorded = Owner.current()
    before = psutil.Process().create_time()
    boot_time = pslinux.boot_time
    monkeypatch.setattr(pslinux, "boot_time", lambda: boot_time() + 3600.0)
    assert psutil.Process().create_time() == pytest.approx(before + 3600.0)
    assert Owner(recorded.pid, recorded.started).alive()
    assert Owner.current() == recorded


@pytest.mark.skipif(sys.platform != "linux", reason="steps psutil's Linux boot time")
def test_a_step_between_the_readings_of_the_boot_time_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil._pslinux as pslinux

    recorded = Owner.current()
    boot_time = pslinux.boot_time
    steps = iter([0.0, 3600.0])  # the first reading before a step, every later one after it
    monkeypatch.setattr(pslinux, "boot_time", lambda: boot_time() + next(steps, 3600.0))
    assert Owner.current() == recorded


def test_a_reader_sees_files_come_and_go_and_one_made_again_under_its_name(tmp_path: Path) -> None:
    base = tmp_path / "engine"
    files = ProcessFiles(base, "")
    assert files.owners() == []
    me = Owner.current()
    first = Records.create(process_file(base, 1), "")
    first.write(0, me, ())
    (tmp_path / "engine.2").write_text("half a line")  # no evidence of anything
    assert [owner for _, owner in files.owners()] == [me]
    # Removed and made again, by another process that got the same pid: read anew.
    process_file(base, 1).unlink()
    again = Records.create(process_file(base, 1), "")
    other = Owner(me.pid, me.started + 0.01)
    again.write(0, other, ())
    assert [owner for _, owner in files.owners()] == [other]
    process_file(base, 1).unlink()
    assert files.owners() == []
