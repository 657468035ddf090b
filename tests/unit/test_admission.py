"""One admission limit shared by processes: counted together, never split between them."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from translator.shm.in_flight import MIN_SLOTS, SharedInFlight, slots_for

pytestmark = pytest.mark.pure


def hold(path: str, limit: int, n: int, ready, release, admitted) -> None:
    counter = SharedInFlight(limit, Path(path))
    admitted.put(sum(counter.try_acquire() for _ in range(n)))
    ready.set()
    release.wait(30)
    for _ in range(n):
        counter.release()


def test_processes_share_one_limit_and_release_frees_it(tmp_path):
    path = tmp_path / "admission"
    ctx = multiprocessing.get_context("spawn")
    ready, release, admitted = ctx.Event(), ctx.Event(), ctx.Queue()
    other = ctx.Process(target=hold, args=(str(path), 10, 7, ready, release, admitted))
    other.start()
    try:
        assert ready.wait(30)
        assert admitted.get(timeout=10) == 7
        here = SharedInFlight(10, path)
        # 7 held by the other process: 3 left here, whichever process the requests reach.
        assert [here.try_acquire() for _ in range(4)] == [True, True, True, False]
        assert here.in_flight() == 10
        release.set()
        other.join(30)
        assert here.in_flight() == 3
        assert here.try_acquire()
    finally:
        release.set()
        other.join(30)


def test_a_dead_processs_requests_do_not_count(tmp_path):
    path = tmp_path / "admission"
    ctx = multiprocessing.get_context("spawn")
    ready, release, admitted = ctx.Event(), ctx.Event(), ctx.Queue()
    other = ctx.Process(target=hold, args=(str(path), 5, 5, ready, release, admitted))
    other.start()
    assert ready.wait(30)
    os.kill(other.pid, 9)
    other.join(30)
    here = SharedInFlight(5, path)
    assert here.try_acquire(), "a killed process's count still blocked admission"


def test_one_process_alone_gets_the_whole_limit(tmp_path):
    counter = SharedInFlight(3, tmp_path / "admission")
    assert [counter.try_acquire() for _ in range(4)] == [True, True, True, False]
    counter.release()
    assert counter.try_acquire()


def hold_one(path: str, slots: int, ready, release) -> None:
    counter = SharedInFlight(1000, Path(path), slots=slots)
    assert counter.try_acquire()
    ready.release()
    release.wait(60)
    counter.release()


@pytest.mark.processes
def test_more_than_64_workers_share_the_limit(tmp_path):
    # A node with many CPUs and `workers: cpu_count` starts more than 64 API workers: each needs a
    # slot of its own, or its requests fail. 80 processes, each holding one request.
    path, workers = tmp_path / "admission", 80
    slots = slots_for(workers)
    assert slots >= workers
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Semaphore(0), ctx.Event()
    others = [ctx.Process(target=hold_one, args=(str(path), slots, ready, release)) for _ in range(workers)]
    for process in others:
        process.start()
    try:
        for _ in others:
            assert ready.acquire(timeout=60)
        here = SharedInFlight(workers + 2, path, slots=slots)
        assert here.in_flight() == workers
        assert [here.try_acquire() for _ in range(3)] == [True, True, False]
    finally:
        release.set()
        for process in others:
            process.join(60)
    assert all(process.exitcode == 0 for process in others)


def test_the_table_is_sized_from_the_workers_setting():
    assert slots_for(1) == slots_for(32) == MIN_SLOTS
    assert slots_for(100) == 200
    assert slots_for("cpu_count") >= min(MIN_SLOTS, 2 * (os.cpu_count() or 1))
    with pytest.raises(ValueError, match="slots must be >= 1"):
        SharedInFlight(1, slots=0)


@pytest.mark.processes
def test_processes_that_asked_for_fewer_slots_read_the_whole_table(tmp_path):
    path = tmp_path / "admission"
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Semaphore(0), ctx.Event()
    other = ctx.Process(target=hold_one, args=(str(path), 200, ready, release))
    other.start()
    try:
        assert ready.acquire(timeout=60)
        small = SharedInFlight(10, path, slots=MIN_SLOTS)
        assert small.in_flight() == 1 and small.slots == 200
    finally:
        release.set()
        other.join(60)
