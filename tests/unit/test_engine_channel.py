"""The engine channel on a real Unix socket: both ends as the service runs them, a fake engine
behind the server end (the scheduler and the cache are tested on their own)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest

from translator.api.engine_channel import ChannelDropped, EngineChannel, EngineUnreachable
from translator.contract.protocol import EngineRefusal, EngineReply, Piece, PieceResult, Priority
from translator.contract.wire import (
    HEADER,
    MAX_FRAME_BYTES,
    FrameReader,
    ProtocolError,
    call_frame,
    pieces_of,
    reply_frame,
    reply_of,
)
from translator.engine.channel import ChannelServer

pytestmark = pytest.mark.pure


def piece(text: str, alternatives: int = 0) -> Piece:
    return Piece(text=text, source="en", target="fr", alternatives=alternatives)


class FakeEngine:
    """Answers each piece with its text upper-cased, after `delays[text]` seconds if given."""

    def __init__(self) -> None:
        self.delays: dict[str, float] = {}
        self.seen: list[tuple[list[str], Priority, float | None]] = []
        self.cancelled: list[str] = []
        self.refuse: EngineRefusal | None = None

    async def serve(self, pieces: list[Piece], priority: Priority, timeout_s: float | None) -> EngineReply:
        self.seen.append(([p.text for p in pieces], priority, timeout_s))
        if self.refuse is not None:
            return EngineReply(refused=self.refuse)
        try:
            await asyncio.sleep(max((self.delays.get(p.text, 0.0) for p in pieces), default=0.0))
        except asyncio.CancelledError:
            self.cancelled.extend(p.text for p in pieces)
            raise
        results = [PieceResult(text=p.text.upper(), alternatives=[p.text] * p.alternatives) for p in pieces]
        return EngineReply(results=results)


@contextlib.asynccontextmanager
async def channel_pair(tmp_path: Path, engine: FakeEngine | None = None):
    engine = engine or FakeEngine()
    path = tmp_path / "engine.sock"
    server = ChannelServer(path, engine.serve)
    await server.start()
    client = EngineChannel(lambda: [path] if path.exists() else [])
    try:
        yield engine, server, client
    finally:
        client.close()
        server.abort()
        await server.close()


def test_frames_round_trip_whatever_the_socket_cuts() -> None:
    pieces = [piece("Hello.", 2), piece('Ünïcode «quotes» "and" \\ back\nslash')]
    frame = call_frame(7, pieces, 1, 1234.5)
    reply = EngineReply(results=[PieceResult(text="Bonjour.", alternatives=["Salut."]), PieceResult(error="bad")])
    stream = frame + reply_frame(7, reply)
    reader = FrameReader()
    messages = []
    for i in range(0, len(stream), 5):  # five bytes at a time: every frame arrives in parts
        messages += reader.feed(stream[i : i + 5])
    call, answer = messages
    assert call[:4] == ["call", 7, 1, 1234.5]
    assert pieces_of(call[4]) == pieces
    assert reply_of(answer) == reply


def test_a_refusal_round_trips() -> None:
    refusal = EngineRefusal(reason="deadline", message="overloaded: retry after 3 s", retry_after_s=2.5)
    [message] = FrameReader().feed(reply_frame(3, EngineReply(refused=refusal)))
    assert reply_of(message) == EngineReply(refused=refusal)


def test_a_corrupt_stream_is_refused_not_trusted() -> None:
    with pytest.raises(ProtocolError, match="over the limit"):
        FrameReader().feed(HEADER.pack(MAX_FRAME_BYTES + 1))
    body = b"not json"
    with pytest.raises(ProtocolError, match="not JSON"):
        FrameReader().feed(HEADER.pack(len(body)) + body)
    body = json.dumps({"a": 1}).encode()
    with pytest.raises(ProtocolError, match="not a message"):
        FrameReader().feed(HEADER.pack(len(body)) + body)


def test_concurrent_calls_share_one_connection_and_each_gets_its_own_answer(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with channel_pair(tmp_path) as (engine, _, client):
            # The first call is the slowest: answers come back as they are ready, not in call order.
            engine.delays = {"call 0": 0.2}
            calls = [client.call([piece(f"call {i}"), piece(f"more {i}")], i % 2, 1000.0 + i) for i in range(50)]
            replies = await asyncio.gather(*calls)
            for i, reply in enumerate(replies):
                assert [r.text for r in reply.results] == [f"CALL {i}", f"MORE {i}"]
            assert len(client._connections) == 1
            assert sorted(engine.seen)[0] == (["call 0", "more 0"], Priority.INTERACTIVE, 1.0)
            assert (["call 1", "more 1"], Priority.BULK, 1.001) in engine.seen

    asyncio.run(scenario())


def test_a_caller_that_goes_away_cancels_its_work_in_the_engine(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with channel_pair(tmp_path) as (engine, server, client):
            engine.delays = {"slow": 3600}
            waiting = asyncio.ensure_future(client.call([piece("slow")], 0, None))
            while server.calls_in_flight == 0:
                await asyncio.sleep(0.01)
            waiting.cancel()
            while server.calls_in_flight:
                await asyncio.sleep(0.01)
            assert engine.cancelled == ["slow"]
            # The connection is still good for the next call.
            assert [r.text for r in (await client.call([piece("next")], 0, None)).results] == ["NEXT"]

    asyncio.run(scenario())


def test_an_engine_that_dies_fails_calls_in_flight_and_refuses_new_ones_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with channel_pair(tmp_path) as (engine, server, client):
            engine.delays = {"slow": 3600}
            waiting = asyncio.ensure_future(client.call([piece("slow")], 0, None))
            while server.calls_in_flight == 0:
                await asyncio.sleep(0.01)
            await server.close()  # the listening socket goes, as with a dead process
            server.abort()  # and every connection
            with pytest.raises(ChannelDropped):
                await asyncio.wait_for(waiting, 5)
            with pytest.raises(EngineUnreachable):
                await asyncio.wait_for(client.call([piece("late")], 0, None), 5)
            assert engine.cancelled == ["slow"]  # the engine dropped the work nobody waits for

    asyncio.run(scenario())


def test_a_respawned_engine_is_found_at_its_new_socket(tmp_path: Path) -> None:
    async def scenario() -> None:
        engines = [FakeEngine(), FakeEngine()]
        paths = [tmp_path / "engine.1", tmp_path / "engine.2"]
        live: list[Path] = [paths[0]]
        first = ChannelServer(paths[0], engines[0].serve)
        await first.start()
        client = EngineChannel(lambda: list(live))
        assert (await client.call([piece("a")], 0, None)).results[0].text == "A"
        first.abort()
        await first.close()
        second = ChannelServer(paths[1], engines[1].serve)
        await second.start()
        live[:] = [paths[1]]
        await asyncio.sleep(0.05)  # the loss reaches the client
        assert (await client.call([piece("b")], 0, None)).results[0].text == "B"
        assert [seen[0] for seen in engines[1].seen] == [["b"]]
        client.close()
        second.abort()
        await second.close()

    asyncio.run(scenario())


def test_a_refusal_comes_back_as_the_engines_reply(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with channel_pair(tmp_path) as (engine, _, client):
            engine.refuse = EngineRefusal(reason="deadline", message="late", retry_after_s=4)
            reply = await client.call([piece("x")], 0, 10.0)
            assert reply.refused == engine.refuse and reply.results == []

    asyncio.run(scenario())


def test_a_malformed_call_closes_that_connection_only(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with channel_pair(tmp_path) as (_, server, client):
            reader, writer = await asyncio.open_unix_connection(str(server.path))
            body = json.dumps(["call", 1, "urgent", None, [["x"]]]).encode()
            writer.write(HEADER.pack(len(body)) + body)
            assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the engine
            writer.close()
            assert (await client.call([piece("ok")], 0, None)).results[0].text == "OK"

    asyncio.run(scenario())


def test_the_drain_answers_calls_in_flight_and_ends_when_the_workers_go(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with channel_pair(tmp_path) as (engine, server, client):
            engine.delays = {"slow": 0.3}
            waiting = asyncio.ensure_future(client.call([piece("slow")], 0, None))
            while server.calls_in_flight == 0:
                await asyncio.sleep(0.01)
            loop = asyncio.get_running_loop()
            started = loop.time()
            drained = asyncio.ensure_future(server.drain(timeout_s=30, quiet_s=30))
            assert (await waiting).results[0].text == "SLOW"
            assert not drained.done()  # the worker is still connected: it may call again
            client.close()  # the API worker exits
            await asyncio.wait_for(drained, 5)
            assert loop.time() - started < 5

    asyncio.run(scenario())


def test_the_drain_ends_once_no_call_has_been_in_flight_for_a_while(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with channel_pair(tmp_path) as (_, server, client):
            await client.call([piece("x")], 0, None)
            await asyncio.wait_for(server.drain(timeout_s=30, quiet_s=0.2), 5)

    asyncio.run(scenario())
