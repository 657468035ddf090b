"""The engine's Prometheus metrics: what operators and the autoscaler watch.

Created through `bentoml.metrics`, so they land in BentoML's multiprocess registry and `/metrics`
on the public port shows them beside BentoML's own.
"""

from __future__ import annotations

import bentoml

from translator.engine.observer import DROP_REASONS, REFUSAL_REASONS, DropReason, RefusalReason

_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

BATCH_PIECES = bentoml.metrics.Histogram(
    name="translation_batch_pieces",
    documentation="Pieces (sentences) per batch handed to the model, across requests",
    buckets=_BATCH_BUCKETS,
)
BATCH_PADDED_TOKENS = bentoml.metrics.Histogram(
    name="translation_batch_padded_tokens",
    documentation="Padded source tokens (pieces x longest x beams) per batch handed to the model",
    buckets=(16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768),
)
BATCH_SECONDS = bentoml.metrics.Histogram(
    name="translation_batch_seconds",
    documentation="Model time per batch",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64),
)
BATCH_LIMIT = bentoml.metrics.Gauge(
    name="translation_batch_limit",
    documentation="The engine's batch limits: pieces per batch, padded tokens x beams per generate call",
    labelnames=["limit"],
    multiprocess_mode="livemax",
)
CALLS_IN_FLIGHT = bentoml.metrics.Gauge(
    name="translation_engine_calls_in_flight",
    documentation="Requests' calls at the engine (on its channel), answered or not yet",
    multiprocess_mode="livesum",
)
QUEUE_PIECES = bentoml.metrics.Gauge(
    name="translation_queue_pieces",
    documentation="Pieces waiting in the engine's queue",
    multiprocess_mode="livesum",
)
QUEUE_TOKENS = bentoml.metrics.Gauge(
    name="translation_queue_tokens",
    documentation="Source tokens waiting in the engine's queue",
    multiprocess_mode="livesum",
)
LATENCY_OBJECTIVE = bentoml.metrics.Gauge(
    name="translation_latency_objective_seconds",
    documentation="The latency objective (batching.max_latency_ms): requests predicted to answer later are refused",
    multiprocess_mode="livemax",
)
PREDICTED_WAIT = bentoml.metrics.Gauge(
    name="translation_predicted_wait_seconds",
    documentation="Predicted seconds until a bulk request queued now would be answered",
    multiprocess_mode="livemax",
)
REFUSED = bentoml.metrics.Counter(
    name="translation_refused_requests",
    documentation="Requests the engine refused at admission, by reason",
    labelnames=["reason"],
)
DROPPED = bentoml.metrics.Counter(
    name="translation_dropped_pieces",
    documentation=(
        "Queued pieces dropped without generation, by reason "
        "(caller_gone: the caller went away; expired: its deadline passed; unhealthy: the engine failed)"
    ),
    labelnames=["reason"],
)

CACHE_LOOKUPS = bentoml.metrics.Counter(
    name="translation_cache_lookups",
    documentation="Sentence cache lookups by level (local, shared) and result (hit, miss, error, store_error)",
    labelnames=["level", "result"],
)


class PrometheusCacheObserver:
    def lookup(self, level: str, result: str, count: int) -> None:
        CACHE_LOOKUPS.labels(level=level, result=result).inc(count)


class PrometheusObserver:
    """The scheduler's `Observer`, writing to the metrics above."""

    def __init__(self) -> None:
        # Every reason at 0 from the start: rate() and alerts see a series before the first event.
        for refusal in REFUSAL_REASONS:
            REFUSED.labels(reason=refusal)
        for drop in DROP_REASONS:
            DROPPED.labels(reason=drop)

    def batch_done(self, pieces: int, padded_tokens: int, seconds: float) -> None:
        BATCH_PIECES.observe(pieces)
        BATCH_PADDED_TOKENS.observe(padded_tokens)
        BATCH_SECONDS.observe(seconds)

    def queue_changed(self, pieces: int, tokens: int, predicted_wait_s: float) -> None:
        QUEUE_PIECES.set(pieces)
        QUEUE_TOKENS.set(tokens)
        PREDICTED_WAIT.set(predicted_wait_s)

    def refused(self, reason: RefusalReason) -> None:
        REFUSED.labels(reason=reason).inc()

    def dropped(self, reason: DropReason, pieces: int) -> None:
        DROPPED.labels(reason=reason).inc(pieces)


def record_batch_limits(pieces: int, tokens: int) -> None:
    """What the engine runs with, configured or from the device (translator/engine/batch_limits.py)."""
    BATCH_LIMIT.labels(limit="pieces").set(pieces)
    BATCH_LIMIT.labels(limit="tokens").set(tokens)


def record_latency_objective(seconds: float) -> None:
    """`batching.max_latency_ms`, for alerts that compare the predicted wait with it."""
    LATENCY_OBJECTIVE.set(seconds)


def record_calls_in_flight(calls: int) -> None:
    CALLS_IN_FLIGHT.set(calls)
