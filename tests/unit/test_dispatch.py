"""The refill pause: clients answered by one batch get into the next one instead of halving it."""

from __future__ import annotations

import asyncio

from bentoml._internal.marshal.dispatcher import CorkDispatcher

from translator.dispatch import refill_dispatcher_class

BATCH_S = 0.05


def run_closed_loop(dispatcher_cls: type, clients: int = 8, rounds: int = 6) -> list[int]:
    """`clients` closed-loop clients, each returning 5 ms after its answer, as through the API."""
    sizes: list[int] = []

    async def scenario() -> None:
        dispatcher = dispatcher_cls(
            max_latency_in_ms=60_000, max_batch_size=clients, fallback=lambda: None, get_batch_size=lambda _: 1
        )

        async def model(batch):
            sizes.append(len(batch))
            await asyncio.sleep(BATCH_S)
            return list(batch)

        call = dispatcher(model)

        async def client(i: int) -> None:
            # Half the clients start while the first half's batch runs, as a ramp-up does.
            await asyncio.sleep(BATCH_S / 2 if i % 2 else 0)
            for _ in range(rounds):
                assert await call(i) == i
                await asyncio.sleep(0.005)

        # The dispatcher's first 11 batches are its training (no pause there): not measured.
        for _ in range(11):
            await call(-1)
        sizes.clear()
        await asyncio.gather(*(client(i) for i in range(clients)))
        dispatcher.shutdown()

    asyncio.run(scenario())
    return sizes


def test_plain_dispatcher_splits_a_closed_loop_into_partial_batches() -> None:
    # The behaviour the pause exists for; if BentoML fixes it, this test says so.
    sizes = run_closed_loop(CorkDispatcher)
    assert sum(sizes) / len(sizes) < 8


def test_refill_pause_lets_answered_clients_join_the_next_batch() -> None:
    sizes = run_closed_loop(refill_dispatcher_class(CorkDispatcher, fraction=0.5, max_pause_s=0.05))
    # From the second batch on, the two halves travel together: full batches (the last one is
    # the half that started late finishing its rounds).
    assert sizes[1:-1] == [8] * (len(sizes) - 2), sizes


def test_a_lone_client_waits_at_most_the_pause() -> None:
    sizes = run_closed_loop(refill_dispatcher_class(CorkDispatcher, fraction=0.1, max_pause_s=0.005), clients=1)
    assert sizes == [1] * 6
