"""The API worker's engine client: every failure between the services maps to 503 or 504."""

from __future__ import annotations

import asyncio
import time

import pytest

from translator.api.disconnect import CallerGone, unless_disconnected
from translator.api.engine_channel import ChannelDropped, EngineUnreachable
from translator.api.engine_client import EngineClient
from translator.api.engine_gate import EngineGate
from translator.contract.errors import GatewayTimeout, TranslationFailed, Unavailable
from translator.contract.protocol import EngineRefusal, EngineReply, Piece, PieceResult, Priority
from translator.contract.wire import ProtocolError

pytestmark = pytest.mark.pure

PIECES = [Piece(text="Hello.", source="en", target="fr")]


def client_calling(call, engine_up: bool = True, **options) -> EngineClient:
    """An engine client on `call`, its gate open, its probe answering `engine_up`."""

    async def probe(timeout: float) -> bool:
        return engine_up

    gate = EngineGate(probe)
    gate.mark_up()
    return EngineClient(gate, call, **options)


def client_with(outcomes: list, engine_up: bool = True) -> tuple[EngineClient, list]:
    calls: list = []

    async def call(pieces, priority, timeout_ms):
        calls.append((priority, timeout_ms))
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return client_calling(call, engine_up), calls


def ok(text: str = "Bonjour.") -> EngineReply:
    return EngineReply(results=[PieceResult(text=text)])


def run(coro):
    return asyncio.run(coro)


def test_a_good_reply_and_its_json_form_both_give_the_results():
    client, calls = client_with([ok(), ok().model_dump()])
    assert [r.text for r in run(client.translate(PIECES))] == ["Bonjour."]
    assert [r.text for r in run(client.translate(PIECES, Priority.BULK))] == ["Bonjour."]
    assert [priority for priority, _ in calls] == [0, 1]


@pytest.mark.parametrize(
    "error",
    [ChannelDropped("EOF"), EngineUnreachable("refused"), ConnectionResetError()],
    ids=["dropped", "refused", "reset"],
)
def test_a_dropped_connection_is_retried_while_the_engine_answers_its_probe(error):
    client, calls = client_with([error, ok()])
    assert [r.text for r in run(client.translate(PIECES))] == ["Bonjour."]
    assert len(calls) == 2


@pytest.mark.parametrize("error", [ChannelDropped("EOF"), ConnectionResetError()], ids=["dropped", "reset"])
def test_a_dropped_connection_to_a_dead_engine_is_a_503_and_closes_the_gate(error):
    client, _ = client_with([error], engine_up=False)
    with pytest.raises(Unavailable) as raised:
        run(client.translate(PIECES))
    assert raised.value.status == 503 and "Retry-After" in raised.value.headers()
    assert not client.gate.is_up


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (TimeoutError(), 504),
        (ProtocolError("a frame that is not JSON"), 503),
        (ValueError("anything else"), 503),
    ],
    ids=["timeout", "protocol", "other"],
)
def test_every_other_failure_is_a_503_or_a_504_never_a_500(error, status):
    client, _ = client_with([error])
    with pytest.raises((Unavailable, GatewayTimeout)) as raised:
        run(client.translate(PIECES))
    assert raised.value.status == status


def test_a_refusal_carries_the_engines_retry_after():
    refusal = EngineRefusal(reason="deadline", message="overloaded: retry after 12 s", retry_after_s=11.2)
    client, _ = client_with([EngineReply(refused=refusal)])
    with pytest.raises(Unavailable) as raised:
        run(client.translate(PIECES))
    assert raised.value.headers() == {"Retry-After": "12"}
    assert "overloaded" in raised.value.message


def test_a_reply_of_the_wrong_length_fails_the_request():
    client, _ = client_with([EngineReply(results=[])])
    with pytest.raises(TranslationFailed, match="0 pieces for 1 sent"):
        run(client.translate(PIECES))


def test_the_remaining_time_is_passed_on_and_an_expired_request_is_not_sent():
    client, calls = client_with([ok()])
    run(client.translate(PIECES, deadline=time.monotonic() + 2.0))
    assert 1000 < calls[0][1] <= 2000
    with pytest.raises(GatewayTimeout):
        run(client.translate(PIECES, deadline=time.monotonic() - 0.1))
    assert len(calls) == 1


def test_a_disconnect_cancels_the_work_and_a_normal_end_leaves_nothing_running():
    async def main():
        disconnect = asyncio.Event()

        async def receive():
            await disconnect.wait()
            return {"type": "http.disconnect"}

        cancelled = asyncio.Event()

        async def work():
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        task = asyncio.ensure_future(unless_disconnected(receive, work()))
        await asyncio.sleep(0.01)
        disconnect.set()
        with pytest.raises(CallerGone):
            await task
        assert cancelled.is_set()

        async def quick():
            return 42

        never = asyncio.Event()

        async def silent_receive():
            await never.wait()
            return {"type": "http.disconnect"}

        assert await unless_disconnected(silent_receive, quick()) == 42
        assert len(asyncio.all_tasks()) == 1  # only main(): the watcher is gone

    run(main())


def test_a_refused_connection_refuses_new_calls_but_lets_calls_the_engine_holds_finish():
    # After SIGTERM the engine stops accepting connections while it drains the calls it holds: a
    # request that comes too late gets a 503, and the requests in flight still get their answers.
    async def scenario():
        held = asyncio.get_running_loop().create_future()

        async def call(pieces, priority, timeout_ms):
            if pieces[0].text == "late":
                raise EngineUnreachable("the translation engine refused the connection")
            return await held

        async def probe(timeout: float) -> bool:
            raise ConnectionRefusedError(111, "Connection refused")

        gate = EngineGate(probe, watch_interval_s=3600)
        gate.mark_up()
        client = EngineClient(gate, call)
        in_flight = asyncio.ensure_future(client.translate(PIECES))
        await asyncio.sleep(0.01)
        with pytest.raises(Unavailable, match="unreachable: EngineUnreachable"):
            await client.translate([Piece(text="late", source="en", target="fr")])
        assert not gate.is_up
        held.set_result(ok())
        assert [r.text for r in await asyncio.wait_for(in_flight, 1.0)] == ["Bonjour."]
        await gate.close()

    run(scenario())


def test_an_engine_that_never_answers_is_a_504_at_the_deadline_plus_the_slack():
    # The engine answers an expired request itself; when it cannot (a blocked event loop, a socket
    # nobody reads), the worker stops waiting on its own, bounded, instead of traffic.timeout.
    async def never(pieces, priority, timeout_ms):
        await asyncio.sleep(3600)

    async def scenario() -> float:
        client = client_calling(never, deadline_slack_s=0.2)
        started = time.monotonic()
        with pytest.raises(GatewayTimeout, match="deadline"):
            await client.translate(PIECES, deadline=started + 0.3, binding=True)
        return time.monotonic() - started

    # Not before the deadline and its slack; well before the hour the engine would take.
    assert 0.45 <= run(scenario()) < 10


def test_without_a_binding_deadline_the_engine_decides_when_a_call_is_late():
    # The server's own objective: the engine may have admitted the request alone although it is
    # predicted late, and answers it when it is done (or refuses it as expired itself).
    async def slow(pieces, priority, timeout_ms):
        await asyncio.sleep(0.5)
        return ok()

    async def scenario() -> list:
        client = client_calling(slow, deadline_slack_s=0.05)
        return await client.translate(PIECES, deadline=time.monotonic() + 0.1)

    assert [r.text for r in run(scenario())] == ["Bonjour."]


def test_an_expired_refusal_from_the_engine_is_a_504():
    refusal = EngineRefusal(reason="expired", message="the request's deadline (1.0 s) passed", retry_after_s=5)
    client, _ = client_with([EngineReply(refused=refusal)])
    with pytest.raises(GatewayTimeout, match="deadline"):
        run(client.translate(PIECES, deadline=time.monotonic() + 10))
