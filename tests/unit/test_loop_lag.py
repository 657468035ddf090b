"""Event-loop lag is measured: work that does not yield shows up as a late timer."""

from __future__ import annotations

import asyncio
import time

import pytest

from translator.loop_lag import LoopLagMonitor

pytestmark = pytest.mark.pure


def test_work_that_blocks_the_loop_is_recorded_as_lag() -> None:
    lags: list[float] = []

    async def scenario() -> None:
        monitor = LoopLagMonitor(lags.append, interval_s=0.01)
        monitor.start()
        await asyncio.sleep(0.05)
        time.sleep(0.2)  # on the loop, without yielding: a request splitting on it would do this
        await asyncio.sleep(0.05)
        await monitor.close()

    asyncio.run(scenario())
    assert len(lags) >= 3
    assert max(lags) >= 0.15
    assert min(lags) < 0.1  # an idle loop is on time
