"""The virtual-time loop the scheduler's tests run on: its own faults hang or fail other tests."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests import virtual_time

pytestmark = pytest.mark.pure


def test_a_thread_outliving_its_loop_spends_time_on_that_loop_not_the_next_ones():
    # A gated batch released as its test ends runs on in its thread; when it sleeps, the next
    # test's loop is current. Its sleep must not touch that loop's count of working threads.
    released = threading.Event()
    next_test_started = threading.Event()
    thread_done = threading.Event()

    def old_batch() -> None:
        released.wait(5)
        next_test_started.wait(5)
        virtual_time.sleep_in_thread(1.0)  # its loop is closed: returns at once
        thread_done.set()

    # The scheduler's own executor, which the loop's close does not wait for (the default one's is)
    executor = ThreadPoolExecutor(1)

    async def first():
        loop = asyncio.get_running_loop()
        loop.run_in_executor(executor, old_batch)  # never awaited: the test ends during the batch

    async def second():
        # No thread works for this loop: its time jumps from timer to timer while the old thread
        # runs on in real time (an old sleep taken on this loop would count one thread below zero)
        next_test_started.set()
        while not thread_done.is_set():
            await asyncio.sleep(1)
        return virtual_time.now()

    virtual_time.run(first())
    released.set()
    assert virtual_time.run(second(), timeout_s=1e12) > 1000.0
    executor.shutdown()


def test_sleep_in_thread_takes_virtual_time_while_the_loop_fires_its_timers():
    fired: list[float] = []

    def batch() -> None:
        virtual_time.sleep_in_thread(2.0)

    async def main():
        loop = asyncio.get_running_loop()
        start = loop.time()
        loop.call_later(1.0, lambda: fired.append(loop.time() - start))
        await loop.run_in_executor(None, batch)
        return loop.time() - start

    assert virtual_time.run(main()) == 2.0
    assert fired == [1.0]
