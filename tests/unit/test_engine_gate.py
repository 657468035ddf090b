"""The API worker's view of the engine: refuse at once while it is down, recover when it is back."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests import virtual_time
from translator.api.engine_gate import EngineGate
from translator.contract.errors import Unavailable

pytestmark = pytest.mark.pure


class FakeEngine:
    def __init__(self, ready: bool = True) -> None:
        self.ready = ready
        self.hang = False
        self.refuse = False
        self.probes = 0

    async def is_ready(self, timeout: float) -> bool:
        self.probes += 1
        if self.refuse:
            raise ConnectionRefusedError(111, "Connection refused")
        if self.hang:
            await asyncio.sleep(3600)
        return self.ready


def gate_for(engine: FakeEngine, **kwargs) -> EngineGate:
    options = {"probe_timeout_s": 0.05, "watch_interval_s": 0.01, "recheck_interval_s": 0.01, **kwargs}
    return EngineGate(engine.is_ready, **options)


async def until(condition, limit: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not condition():
        assert loop.time() < deadline, "condition never became true"
        await asyncio.sleep(0.005)


def test_starts_down_and_opens_once_the_engine_is_ready() -> None:
    async def scenario() -> None:
        engine = FakeEngine(ready=False)
        gate = gate_for(engine)
        with pytest.raises(Unavailable, match="starting"):
            await gate.call(lambda: asyncio.sleep(0, result="never"))
        gate.start()
        await asyncio.sleep(0.05)
        assert not gate.is_up
        engine.ready = True
        await until(lambda: gate.is_up)
        assert await gate.call(lambda: asyncio.sleep(0, result="ok")) == "ok"
        await gate.close()

    asyncio.run(scenario())


def test_a_hanging_probe_is_a_no_within_its_timeout() -> None:
    # On a virtual clock: the probe gives up at its 0.05 s to the second, however busy the machine
    # (a probe that waited the hour out would have heard yes).
    async def scenario() -> None:
        engine = FakeEngine()
        engine.hang = True
        gate = gate_for(engine)
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await gate.probe() is False
        assert loop.time() - started == pytest.approx(0.05)

    virtual_time.run(scenario())


def test_closing_the_gate_answers_waiting_calls_with_503() -> None:
    async def scenario() -> None:
        engine = FakeEngine()
        gate = gate_for(engine, watch_interval_s=3600)
        gate.mark_up()
        waiting = asyncio.ensure_future(gate.call(lambda: asyncio.sleep(3600)))
        await asyncio.sleep(0.01)
        engine.ready = False
        gate.mark_down("the translation engine is unreachable (test)")
        with pytest.raises(Unavailable, match="unreachable"):
            await asyncio.wait_for(waiting, 10)
        with pytest.raises(Unavailable, match="retry later"):
            await gate.call(lambda: asyncio.sleep(0))
        engine.ready = True
        await until(lambda: gate.is_up)
        await gate.close()

    asyncio.run(scenario())


def test_a_cancelled_request_is_not_turned_into_a_503() -> None:
    # A client that goes away cancels its handler: that cancellation must propagate as such.
    async def scenario() -> None:
        gate = gate_for(FakeEngine())
        gate.mark_up()
        waiting = asyncio.ensure_future(gate.call(lambda: asyncio.sleep(3600)))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert gate.is_up

    asyncio.run(scenario())


def test_watchdog_closes_only_after_several_failed_checks() -> None:
    async def scenario() -> None:
        engine = FakeEngine()
        gate = gate_for(engine, failures_to_close=3)
        gate.start()
        await until(lambda: gate.is_up)
        engine.ready = False
        probes = engine.probes
        await until(lambda: not gate.is_up)
        assert engine.probes - probes >= 3
        assert "3 health checks" in gate.reason
        await gate.close()

    asyncio.run(scenario())


def test_liveness_fails_only_after_a_long_outage_of_an_engine_once_seen() -> None:
    now = [0.0]
    engine = FakeEngine(ready=False)
    gate = EngineGate(engine.is_ready, dead_after_s=100, clock=lambda: now[0])
    now[0] = 1000.0
    assert gate.is_alive(), "an engine still loading for the first time is the startup probe's business"
    gate.mark_up()
    # mark_down starts a recovery task, which needs a loop; the clock is what this test is about.
    gate.down_since, gate.reason = now[0], "gone"
    now[0] += 99
    assert gate.is_alive()
    now[0] += 2
    assert not gate.is_alive()


def test_a_worker_still_starting_asks_the_engine_before_refusing() -> None:
    # The pod turned ready through another worker's gate: this one must not refuse meanwhile.
    async def scenario() -> None:
        engine = FakeEngine(ready=True)
        gate = gate_for(engine)
        assert not gate.is_up
        assert await gate.call(lambda: asyncio.sleep(0, result="ok")) == "ok"
        assert gate.is_up

    asyncio.run(scenario())


def test_a_gate_closed_after_a_death_refuses_without_waiting() -> None:
    # On a virtual clock: no time at all passes, where a probe of its own would have taken the
    # probe's timeout.
    async def scenario() -> None:
        engine = FakeEngine(ready=True)
        gate = gate_for(engine, recheck_interval_s=3600, probe_timeout_s=30)
        gate.mark_up()
        engine.hang = True
        gate.mark_down("gone")
        probes = engine.probes
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(Unavailable, match="gone"):
            await gate.call(lambda: asyncio.sleep(0))
        assert loop.time() == started
        assert engine.probes - probes <= 1  # only the recovery loop's own probe, if any
        await gate.close()

    virtual_time.run(scenario())


def test_an_engine_that_refuses_probes_closes_the_gate_but_its_calls_still_finish() -> None:
    # Draining on SIGTERM: no new connections, but the calls it holds are answered.
    async def scenario() -> None:
        engine = FakeEngine()
        gate = gate_for(engine, failures_to_close=2)
        gate.mark_up()
        answer = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(gate.call(lambda: answer))
        await asyncio.sleep(0.01)
        engine.refuse = True
        gate.start()
        await until(lambda: not gate.is_up)
        await asyncio.sleep(0.05)
        assert not waiting.done()
        answer.set_result("answered")
        assert await asyncio.wait_for(waiting, 10) == "answered"
        await gate.close()

    asyncio.run(scenario())


def test_an_engine_that_stops_answering_strands_no_call() -> None:
    # A hung engine (or a dead one whose socket the arbiter keeps open): waiting calls get a 503.
    async def scenario() -> None:
        engine = FakeEngine()
        gate = gate_for(engine, failures_to_close=2)
        gate.mark_up()
        waiting = asyncio.ensure_future(gate.call(lambda: asyncio.sleep(3600)))
        engine.hang = True
        gate.start()
        with pytest.raises(Unavailable, match="did not answer 2 health checks"):
            await asyncio.wait_for(waiting, 10)
        await gate.close()

    asyncio.run(scenario())


def test_close_ends_the_loops_even_when_a_cancellation_is_swallowed() -> None:
    # On Python 3.11 `asyncio.wait_for` can swallow a cancellation that arrives as the probe it
    # waits on finishes; with a probe that answers at once, that race is frequent. Hung CI once.
    async def scenario() -> None:
        for _ in range(300):
            engine = FakeEngine()
            engine.refuse = True
            gate = gate_for(engine, watch_interval_s=0, recheck_interval_s=0)
            gate.mark_up()
            gate.start()
            await asyncio.sleep(0.001)
            await gate.close()

    # In a thread, so that a loop that outlives close() fails this test instead of hanging the run.
    runner = threading.Thread(target=asyncio.run, args=(scenario(),), daemon=True)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "EngineGate.close() did not end its loops"


def test_an_engine_process_that_exits_closes_the_gate_and_answers_waiting_calls() -> None:
    # A worker with no call of its own in flight learns of the death from the process, not from
    # its watchdog's probes seconds later; its waiting calls get 503 at once.
    async def scenario() -> None:
        engine = FakeEngine()
        exited = [False]
        gate = gate_for(engine, watch_interval_s=3600, engine_exited=lambda: exited[0])
        gate.start()
        await until(lambda: gate.is_up)
        waiting = asyncio.ensure_future(gate.call(lambda: asyncio.sleep(3600)))
        await asyncio.sleep(0.01)
        exited[0] = True
        engine.hang = True  # the arbiter's socket: connections wait, nobody answers
        with pytest.raises(Unavailable, match="process exited"):
            await asyncio.wait_for(waiting, 10)
        with pytest.raises(Unavailable, match="process exited"):
            await gate.call(lambda: asyncio.sleep(0))
        # The respawned engine announced itself and is ready: the gate opens again.
        exited[0], engine.hang = False, False
        await until(lambda: gate.is_up)
        await gate.close()

    asyncio.run(scenario())


def test_a_call_checks_the_engine_process_before_it_is_sent() -> None:
    async def scenario() -> None:
        gate = gate_for(FakeEngine(), engine_exited=lambda: True)
        gate.mark_up()  # no watcher running: the call itself must look
        with pytest.raises(Unavailable, match="process exited"):
            await gate.call(lambda: asyncio.sleep(0, result="sent to a dead engine"))

    asyncio.run(scenario())


def test_readiness_of_a_worker_still_starting_asks_the_engine() -> None:
    # The startup probe passed through the other worker; this one's recovery loop has not looked
    # yet (none runs here): the next readiness probe must not read 503 from it.
    async def scenario() -> None:
        engine = FakeEngine(ready=True)
        gate = gate_for(engine)
        assert await gate.ready() is True
        assert gate.is_up
        engine.ready = False
        assert await gate.ready() is False

    asyncio.run(scenario())


def test_readiness_of_a_closed_gate_is_no_without_waiting_on_the_engine() -> None:
    # On a virtual clock: no time passes and no probe is sent, where one would have waited its 30 s.
    async def scenario() -> None:
        engine = FakeEngine(ready=True)
        engine.hang = True
        gate = gate_for(engine, probe_timeout_s=30)
        gate.mark_up()
        gate.mark_down("the translation engine is unreachable (test)")
        probes = engine.probes
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await gate.ready() is False
        assert loop.time() == started and engine.probes == probes
        await gate.close()

    virtual_time.run(scenario())


def test_readiness_is_no_at_once_when_the_engine_process_has_exited() -> None:
    async def scenario() -> None:
        engine = FakeEngine(ready=True)
        gate = gate_for(engine, engine_exited=lambda: True, probe_timeout_s=30)
        gate.mark_up()
        probes = engine.probes
        assert await gate.ready() is False
        assert not gate.is_up and engine.probes == probes
        await gate.close()

    asyncio.run(scenario())


def test_the_gate_does_not_reopen_while_no_engine_process_runs() -> None:
    # A ready answer with every engine process gone (a clock gone wrong, a record left behind)
    # must not open the gate only for the process check to close it again, over and over.
    async def scenario() -> None:
        engine = FakeEngine(ready=True)
        exited = [True]
        gate = gate_for(engine, engine_exited=lambda: exited[0])
        gate.start()
        await asyncio.sleep(0.2)
        assert not gate.is_up
        exited[0] = False
        await until(lambda: gate.is_up)
        await gate.close()

    asyncio.run(scenario())
