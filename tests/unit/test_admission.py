"""One admission limit shared by processes: counted together, never split between them."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from translator.api.admission import SharedInFlight


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
