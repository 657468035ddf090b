"""How many pieces and padded tokens one batch may hold: set by the operator, or from the device.

On a CPU a batch's time grows almost with its size, and 32 pieces and 8,192 padded tokens were
measured right on 2 cores (docs/batching.md). A GPU is the other way round: the 418M model on an
H200 took about 0.12-0.18 s a call whatever the size up to 512 sentences, so 32 left three
quarters of it idle at beam 5 and fourteen fifteenths at greedy. The right size depends on the
card, the model and the precision, so on CUDA it is measured at start-up, where it is unset: calls
of 32, 64, 128 ... sentences, each size taken while a sentence costs clearly less than at the
size before (GAIN) and the call's memory stays within the share of the card's free memory that
batches may take (MEMORY_SHARE). The token budget follows from the chosen size with room for
sentences longer than the calibration's, within the same memory. A setting in the file wins.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from translator.contract.protocol import Piece, PieceResult
from translator.engine.backends.base import Backend

logger = logging.getLogger(__name__)

CPU_MAX_BATCH_SIZE = 32
CPU_MAX_BATCH_TOKENS = 8192
CANDIDATE_SIZES = (32, 64, 128, 256, 512, 1024)
# A bigger batch is taken while a sentence in it costs less than this share of what it cost in the
# size before: past that, more pieces per batch only lengthen every caller's wait.
GAIN = 0.9
# Of the memory free on the card once the model is loaded, what batches may take at most.
MEMORY_SHARE = 0.8
# Real sentences run longer than the calibration's (about 12 tokens): the token budget leaves them
# this many times the calibration's padded tokens per piece.
TOKEN_HEADROOM = 4


@dataclass(frozen=True)
class BatchLimits:
    max_batch_size: int
    max_batch_tokens: int
    source: str  # "configured", "cpu default", or how it was measured


@dataclass(frozen=True)
class Trial:
    """One calibration call: `pieces` sentences took `seconds`, `memory_bytes` of the card at its peak
    (None where unknown), `padded_tokens` padded source tokens times beams."""

    pieces: int
    seconds: float
    padded_tokens: int
    memory_bytes: int | None = None


def best_size(trials: Sequence[Trial], free_bytes: int | None) -> Trial:
    """The largest trial reached by growing while each size pays (see GAIN and MEMORY_SHARE)."""
    chosen = trials[0]
    for trial in trials[1:]:
        if free_bytes is not None and trial.memory_bytes is not None and trial.memory_bytes > MEMORY_SHARE * free_bytes:
            break
        if trial.seconds / trial.pieces >= GAIN * chosen.seconds / chosen.pieces:
            break
        chosen = trial
    return chosen


def token_budget(chosen: Trial, free_bytes: int | None) -> int:
    """Room for `TOKEN_HEADROOM` times the calibration's padded tokens per piece, within the memory."""
    budget = chosen.padded_tokens * TOKEN_HEADROOM
    if free_bytes is not None and chosen.memory_bytes:
        per_token = chosen.memory_bytes / max(1, chosen.padded_tokens)
        budget = min(budget, math.floor(MEMORY_SHARE * free_bytes / per_token))
    return max(chosen.padded_tokens, budget)


# `pieces` through the model -> (seconds, peak memory bytes or None, padded tokens).
Measure = Callable[[list[Piece]], tuple[float, int | None, int]]


class Engine(Protocol):
    """What calibration needs of the engine (translator/engine/translator.py's `Translator`)."""

    backend: Backend
    device: str
    num_beams: int
    max_batch_tokens: int

    def translate(self, pieces: Sequence[Piece]) -> list[PieceResult]: ...

    def count_tokens(self, piece: Piece) -> int: ...

    def calibration_batches(self, max_batch_size: int) -> list[list[Piece]]: ...


def resolve(
    configured_size: int | None,
    configured_tokens: int | None,
    device: str,
    calibration: Callable[[int], list[Piece]],
    measure: Measure,
    free_bytes: int | None,
    sizes: Sequence[int] = CANDIDATE_SIZES,
) -> BatchLimits:
    """The limits the engine runs with: the configured ones, the CPU's, or measured on CUDA."""
    if configured_size is not None and configured_tokens is not None:
        return BatchLimits(configured_size, configured_tokens, "configured")
    if not device.startswith("cuda"):
        return BatchLimits(
            configured_size or CPU_MAX_BATCH_SIZE, configured_tokens or CPU_MAX_BATCH_TOKENS, "cpu default"
        )
    trials: list[Trial] = []
    for size in [configured_size] if configured_size is not None else sizes:
        try:
            seconds, memory, padded = measure(calibration(size))
        except Exception as exc:  # noqa: BLE001 - out of memory, usually: the sizes before it stand
            logger.warning(
                "batch calibration: %d sentences failed (%s: %s); stopping there", size, type(exc).__name__, exc
            )
            break
        trials.append(Trial(size, seconds, padded, memory))
        logger.info("batch calibration on %s: %d sentences in %.3f s (%s bytes at peak)", device, size, seconds, memory)
        if len(trials) > 1 and best_size(trials, free_bytes) is not trials[-1]:
            break  # it stopped paying: larger sizes are not tried
    if not trials:
        return _unmeasured(configured_size, configured_tokens, "the CPU's, no calibration call succeeded")
    chosen = best_size(trials, free_bytes)
    size = configured_size or chosen.pieces
    tokens = configured_tokens or token_budget(chosen, free_bytes)
    per_sentence = ", ".join(f"{t.pieces}: {1000 * t.seconds / t.pieces:.2f} ms" for t in trials)
    return BatchLimits(size, tokens, f"measured on {device} (per sentence {per_sentence})")


def _unmeasured(configured_size: int | None, configured_tokens: int | None, source: str) -> BatchLimits:
    return BatchLimits(configured_size or CPU_MAX_BATCH_SIZE, configured_tokens or CPU_MAX_BATCH_TOKENS, source)


def device_time(translator: Engine, clock: Callable[[], float]) -> Measure:
    """A `Measure` through the engine's own translate, timing its backend's generate calls alone
    (results come back to the host, so the device has finished): tokenizing and decoding cost the
    same per sentence at any batch size and would hide where the device stops gaining. Memory: the
    card's peak where torch can say it, asked of the backend in whichever process holds the model.
    `clock` is the engine's (service.py gives the scheduler's); tests give a virtual one, where a
    simulated device's time is virtual and a busy machine cannot stretch it."""

    def measure(pieces: list[Piece]) -> tuple[float, int | None, int]:
        backend = translator.backend
        generate = backend.generate
        spent = 0.0

        def timed_generate(*args: Any, **kwargs: Any) -> Any:
            nonlocal spent
            started = clock()
            try:
                return generate(*args, **kwargs)
            finally:
                spent += clock() - started

        before = backend.memory_stats(reset=True)
        backend.generate = timed_generate  # type: ignore[method-assign]
        try:
            translator.translate(pieces)
        finally:
            del backend.generate  # the class's method again
        after = backend.memory_stats()
        memory = None
        if before is not None and after is not None:
            # torch's own peak (transformers); CTranslate2 allocates outside torch, and its caching
            # allocator keeps what a call took: the card's free memory tells that.
            memory = max(after.peak - before.allocated, before.free - after.free)
        padded = len(pieces) * max(translator.count_tokens(p) for p in pieces) * translator.num_beams
        return spent, memory, padded

    return measure


def for_engine(
    translator: Engine,
    configured_size: int | None,
    configured_tokens: int | None,
    clock: Callable[[], float],
) -> BatchLimits:
    """`resolve` on a loaded engine, whose token budget it then sets."""
    budget = translator.max_batch_tokens
    translator.max_batch_tokens = 1 << 40  # one generate call per calibration batch
    stats = translator.backend.memory_stats()
    try:
        limits = resolve(
            configured_size,
            configured_tokens,
            translator.device,
            lambda size: translator.calibration_batches(size)[1],
            device_time(translator, clock),
            stats.free if stats is not None else None,
        )
    finally:
        translator.max_batch_tokens = budget
    translator.max_batch_tokens = limits.max_batch_tokens
    logger.info(
        "batch limits: %d pieces, %d padded tokens (%s)", limits.max_batch_size, limits.max_batch_tokens, limits.source
    )
    return limits
