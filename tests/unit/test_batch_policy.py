"""The batch policy, the linger rule and the forecast on their own: state in, decision out, no event
loop and no clock (translator/engine/batch_policy.py, linger.py; translator/contract/forecast.py)."""

from __future__ import annotations

import asyncio

import pytest

from translator.contract.forecast import QueueState, predicted_wait
from translator.contract.protocol import Piece, Priority
from translator.engine.batch_policy import Job, Limits, next_batch
from translator.engine.linger import LingerSettings, linger_s, worth_waiting
from translator.engine.piece_queue import PieceQueue

pytestmark = pytest.mark.pure

LIMITS = Limits(max_batch_size=4, max_batch_tokens=10_000, beams=1, group_window_batches=4)
_seq = iter(range(10**6))


def job(lengths: list[int], priority: Priority = Priority.INTERACTIVE, deadline: float = 100.0) -> Job:
    loop = asyncio.new_event_loop()
    pieces = [Piece(text=f"p{i}", source="en", target="fr") for i in range(len(lengths))]
    future = loop.create_future()
    loop.close()
    return Job(next(_seq), pieces, lengths, priority, arrival=0.0, deadline=deadline, future=future)


def queue_of(*jobs: Job) -> PieceQueue:
    queue = PieceQueue()
    for j in jobs:
        queue.add(j)
    return queue


def chosen(batch) -> list[tuple[int, int]]:
    return [(e.job.seq, e.index) for e in batch.entries]


def test_interactive_pieces_go_before_bulk_and_the_batch_is_full() -> None:
    bulk, urgent = job([5] * 3, Priority.BULK), job([5] * 2)
    batch = next_batch(queue_of(bulk, urgent).lines, LIMITS, now=0.0, full_batch_s=lambda _: 1.0)
    assert chosen(batch) == [(urgent.seq, 0), (urgent.seq, 1), (bulk.seq, 0), (bulk.seq, 1)]
    assert batch.padded_tokens == 4 * 5


def test_lengths_group_around_the_oldest_piece_within_the_window() -> None:
    first, second = job([10, 50, 11, 49, 12]), job([9, 48])
    batch = next_batch(queue_of(first, second).lines, LIMITS, now=0.0, full_batch_s=lambda _: 1.0)
    assert sorted(e.length for e in batch.entries) == [9, 10, 11, 12]


def test_a_piece_due_before_the_next_batch_goes_first_whatever_its_length() -> None:
    early = job([10, 10, 10, 10, 10])
    due = job([90], deadline=1.5)  # a full batch costs 1 s: it cannot wait for the one after
    batch = next_batch(queue_of(early, due).lines, LIMITS, now=0.0, full_batch_s=lambda _: 1.0)
    assert (due.seq, 0) == chosen(batch)[0]
    assert next_batch(PieceQueue().lines, LIMITS, now=0.0, full_batch_s=lambda _: 1.0) is None


def test_the_token_budget_leaves_out_what_would_pad_past_it() -> None:
    limits = Limits(max_batch_size=4, max_batch_tokens=100, beams=2, group_window_batches=1)
    batch = next_batch(queue_of(job([10, 10, 40, 10])).lines, limits, now=0.0, full_batch_s=lambda _: 1.0)
    # 4 x 40 x 2 beams is over 100; three pieces of 10 (3 x 10 x 2) fit.
    assert [e.length for e in batch.entries] == [10, 10, 10]


def test_the_queue_counts_what_it_holds_per_priority() -> None:
    a, b = job([3, 4]), job([5], Priority.BULK)
    queue = queue_of(a, b)
    assert (queue.pieces, queue.tokens) == (3, 12)
    assert queue.at_or_above(Priority.INTERACTIVE) == (2, 7) and queue.at_or_above(Priority.BULK) == (3, 12)
    queue.take(list(queue.lines[Priority.INTERACTIVE])[:1])
    assert queue.drop(a) == 1 and queue.drop(b) == 1 and (queue.pieces, queue.tokens) == (0, 0)


def test_the_linger_is_priced_against_the_batch_it_fills_within_its_caps() -> None:
    settings = LingerSettings(fraction=0.05, max_fraction=0.25, max_s=1.0)
    assert linger_s(settings, upcoming_s=2.0, learnt_return_s=None) == 0.1  # 5% before anything is learnt
    assert linger_s(settings, upcoming_s=2.0, learnt_return_s=0.3) == 0.3  # the learnt return time
    assert linger_s(settings, upcoming_s=2.0, learnt_return_s=0.9) == 0.5  # capped at a quarter
    assert linger_s(settings, upcoming_s=10.0, learnt_return_s=3.0) == 1.0  # and at max_s
    # A return timed after a lone client's batch (0.01 s) never shortens the assumed share: on a
    # cold start, 5% of a 0.33 s batch waited for all 32 callers where 0.17 s learnt had not.
    assert linger_s(settings, upcoming_s=6.6, learnt_return_s=0.01) == 0.33
    assert linger_s(LingerSettings(0.05, 0.25, 0.0), 2.0, 0.3) == 0.0  # off


def test_worth_waiting_for_enough_callers_or_interactive_ones() -> None:
    assert worth_waiting(queued=3, expected=8, interactive_missing=0, interactive_queued=0, batch_size=8)
    assert not worth_waiting(queued=8, expected=8, interactive_missing=0, interactive_queued=0, batch_size=8)
    assert worth_waiting(queued=40, expected=8, interactive_missing=1, interactive_queued=2, batch_size=8)
    assert not worth_waiting(queued=40, expected=8, interactive_missing=1, interactive_queued=8, batch_size=8)


def test_one_forecast_for_the_engine_and_the_api_workers() -> None:
    def cost(size: int) -> float:
        return 0.5 + 0.1 * size

    # Idle, nothing ahead: the request's own batch at its own size.
    assert predicted_wait(0.0, 0, 3, 32, cost, busy=False) == cost(3)
    # Busy: its batch fills behind it and is priced full (58 queued pieces: 2 full batches, not 1 + 26).
    assert predicted_wait(1.0, 57, 1, 32, cost, busy=True) == 1.0 + 2 * cost(32)
    state = QueueState(running=True, running_left_s=1.0, full_batch_s=cost(32), batch_size=32, ahead=(57, 57))
    assert state.wait_s(Priority.BULK, 1) == predicted_wait(1.0, 57, 1, 32, lambda _: cost(32), busy=True)
    assert QueueState(False, 0.0, 2.0, 32, (0, 0)).wait_s(Priority.INTERACTIVE, 5) is None  # alone: admitted
