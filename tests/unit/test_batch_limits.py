"""Batch limits from the device: the CPU's measured defaults, a GPU's measured at start-up, the
file's whenever set (translator/engine/batch_limits.py)."""

from __future__ import annotations

import pytest

from translator.config import Engine, Generation
from translator.contract.protocol import Piece
from translator.engine import batch_limits
from translator.engine.backends.simulated_backend import H200_418M_GREEDY, batch_seconds
from translator.engine.batch_limits import (
    CPU_MAX_BATCH_SIZE,
    CPU_MAX_BATCH_TOKENS,
    MEMORY_SHARE,
    TOKEN_HEADROOM,
    Trial,
    best_size,
    resolve,
    token_budget,
)

pytestmark = pytest.mark.pure


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def calibration(size: int) -> list[Piece]:
    return [Piece(text=f"Sentence {i}.", source="en", target="fr") for i in range(size)]


def on_curve(curve, bytes_per_piece: int | None = None, tokens_per_piece: int = 10, fail_from: int | None = None):
    tried: list[int] = []

    def measure(pieces: list[Piece]) -> tuple[float, int | None, int]:
        tried.append(len(pieces))
        if fail_from is not None and len(pieces) >= fail_from:
            raise RuntimeError("CUDA out of memory")
        memory = None if bytes_per_piece is None else bytes_per_piece * len(pieces)
        return batch_seconds(curve, len(pieces)), memory, tokens_per_piece * len(pieces)

    return measure, tried


def test_the_cpu_keeps_its_measured_defaults_and_measures_nothing() -> None:
    measure, tried = on_curve(H200_418M_GREEDY)
    limits = resolve(None, None, "cpu", calibration, measure, None)
    assert (limits.max_batch_size, limits.max_batch_tokens, limits.source) == (32, 8192, "cpu default")
    assert tried == []
    assert (resolve(48, None, "cpu", calibration, measure, None).max_batch_size, CPU_MAX_BATCH_TOKENS) == (48, 8192)


def test_a_setting_in_the_file_wins_on_any_device() -> None:
    measure, tried = on_curve(H200_418M_GREEDY)
    limits = resolve(64, 20000, "cuda:0", calibration, measure, 10**10)
    assert (limits.max_batch_size, limits.max_batch_tokens, limits.source) == (64, 20000, "configured")
    assert tried == []


def test_on_the_h200_curve_the_batch_grows_to_512_where_a_sentence_stops_getting_cheaper() -> None:
    measure, tried = on_curve(H200_418M_GREEDY)
    limits = resolve(None, None, "cuda", calibration, measure, None)
    assert limits.max_batch_size == 512
    assert limits.max_batch_tokens == 512 * 10 * TOKEN_HEADROOM
    assert tried == [32, 64, 128, 256, 512, 1024]  # 1024 cost as much per sentence: not taken
    assert "measured on cuda" in limits.source


def test_on_a_cpu_like_curve_a_gpu_keeps_the_smallest_size() -> None:
    linear = [(1, 0.01), (1024, 10.24)]  # a sentence costs the same at every size
    measure, tried = on_curve(linear)
    assert resolve(None, None, "cuda", calibration, measure, None).max_batch_size == 32
    assert tried == [32, 64]


def test_memory_stops_the_growth_and_bounds_the_token_budget() -> None:
    free = 200 * 10**6
    measure, _ = on_curve(H200_418M_GREEDY, bytes_per_piece=10**6)  # 1 MB a piece: 160 pieces fit
    limits = resolve(None, None, "cuda", calibration, measure, free)
    assert limits.max_batch_size == 128
    # 1 MB per 10 padded tokens: MEMORY_SHARE of the free memory is 1,600 tokens.
    assert limits.max_batch_tokens == int(MEMORY_SHARE * free / (10**6 / 10))


def test_a_size_that_fails_leaves_the_sizes_before_it() -> None:
    measure, tried = on_curve(H200_418M_GREEDY, fail_from=256)
    assert resolve(None, None, "cuda", calibration, measure, None).max_batch_size == 128
    assert tried == [32, 64, 128, 256]
    measure, _ = on_curve(H200_418M_GREEDY, fail_from=1)
    limits = resolve(None, None, "cuda", calibration, measure, None)
    assert (limits.max_batch_size, limits.max_batch_tokens) == (CPU_MAX_BATCH_SIZE, CPU_MAX_BATCH_TOKENS)


def test_best_size_and_budget_on_their_own() -> None:
    trials = [Trial(32, 0.2, 320), Trial(64, 0.21, 640), Trial(128, 0.4, 1280)]
    assert best_size(trials, None).pieces == 64  # 128 costs 0.95 of 64's per sentence: over GAIN
    assert token_budget(Trial(64, 0.2, 640, memory_bytes=None), None) == 640 * TOKEN_HEADROOM
    assert token_budget(Trial(64, 0.2, 640, memory_bytes=640), 100) == 640  # never below the trial's own


@pytest.mark.slow
@pytest.mark.model
def test_the_engine_measures_its_limits_through_its_own_translate(fixture_model) -> None:
    from translator.engine.translator import Translator

    # In this process: the virtual clock below replaces the simulated device's sleep.
    engine = Engine(
        backend="simulated", device="cuda", simulated_batch_s=[list(p) for p in H200_418M_GREEDY], runner="thread"
    )  # type: ignore[arg-type]
    translator = Translator(fixture_model, engine, Generation(num_beams=1))
    # The device's time on a virtual clock: in real time, a CI machine under load once stretched the
    # 128-sentence call's 0.15 s sleep to 0.53 s, and 64 was chosen.
    clock = VirtualClock()
    translator.backend.sleep = clock.sleep
    limits = batch_limits.for_engine(translator, None, None, clock=clock)
    assert limits.max_batch_size == 512
    assert clock.now == pytest.approx(sum(batch_seconds(H200_418M_GREEDY, n) for n in (32, 64, 128, 256, 512, 1024)))
    assert translator.max_batch_tokens == limits.max_batch_tokens > CPU_MAX_BATCH_TOKENS
