"""The dispatcher warm-up: enough single calls for its training, then bursts up to a full batch."""

from __future__ import annotations

import asyncio

import pytest

from translator.schemas import Piece, PieceResult
from translator.warmup import DISPATCHER_TRAINING_CALLS, WarmupFailed, burst_sizes, warm_dispatcher


def test_burst_sizes_end_at_max_batch_size() -> None:
    assert burst_sizes(32) == [2, 4, 8, 16, 32]
    assert burst_sizes(20) == [2, 4, 8, 16, 20]
    assert burst_sizes(2) == [2]


def test_warm_up_sends_training_calls_alone_then_concurrent_bursts_of_distinct_pieces() -> None:
    seen: list[list[Piece]] = []
    in_flight = 0
    peak = 0

    async def call(pieces: list[Piece]) -> list[dict]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        seen.append(pieces)
        await asyncio.sleep(0.001)
        in_flight -= 1
        # BentoML's client may hand back the JSON form: accepted as well as the model.
        return [{"text": "ok", "error": None}]

    report = asyncio.run(warm_dispatcher(call, "en", "fr", max_batch_size=8))
    assert report.calls == DISPATCHER_TRAINING_CALLS + 2 + 4 + 8 == len(seen)
    assert all(len(pieces) == 1 for pieces in seen)
    texts = [pieces[0].text for pieces in seen]
    assert len(set(texts)) == len(texts), "identical pieces would be deduplicated by the engine"
    assert {(p[0].source, p[0].target) for p in seen} == {("en", "fr")}
    assert peak == 8


def test_a_failed_piece_fails_the_warm_up() -> None:
    async def call(pieces: list[Piece]) -> list[PieceResult]:
        return [PieceResult(error="RuntimeError: boom")]

    with pytest.raises(WarmupFailed, match="boom"):
        asyncio.run(warm_dispatcher(call, "en", "fr", max_batch_size=4))


def test_calls_shed_by_the_dispatcher_are_counted_not_fatal() -> None:
    calls = 0

    async def call(pieces: list[Piece]) -> list[PieceResult] | None:
        nonlocal calls
        calls += 1
        return None if calls % 2 else [PieceResult(text="ok")]

    report = asyncio.run(warm_dispatcher(call, "en", "fr", max_batch_size=4))
    assert report.calls == DISPATCHER_TRAINING_CALLS + 2 + 4
    assert report.shed == (report.calls + 1) // 2
