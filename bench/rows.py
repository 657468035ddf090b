"""The one result row: every measured point of every system and scenario, in bench/results/*.json.

Built in three places (the offline limit, a load point against a server, a bulk job), read by
bench/report.py and the tests: its fields are defined here once, and `as_dict` gives them in one
order for the JSON and the tables.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench import report


def latency_fields(values: Sequence[float]) -> dict[str, float | None]:
    return {
        **{f"latency_p{q}_s": report.percentile(values, q) for q in (50, 95, 99)},
        "latency_max_s": max(values, default=None),
    }


@dataclass
class Row:
    system: str  # offline, service or baseline
    sentences: int
    seconds: float  # the time the load ran: the rates are over it
    generated_tokens: int
    memory: dict[str, Any]  # MemorySampler's peak (MemoryPeak.as_row())
    concurrency: int | None = None  # clients (None offline)
    records_per_request: int | None = None
    priority: str | None = None
    scenario: str | None = None  # None: a point of the closed-loop grid
    batch_size: int | None = None  # offline only
    requests: int | None = None
    failed_requests: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    latencies_s: Sequence[float] = ()  # per request (offline: per batch)
    refusal_latencies_s: Sequence[float] = ()  # of the 429/503 answers
    refusals_without_retry_after: int = 0
    mean_batch_size: float | None = None
    model_calls: int = 0
    client_cpu_s: float | None = None  # CPU the load generator used (None offline)
    first_failure: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # a scenario's own fields

    def as_dict(self) -> dict[str, Any]:
        refusals = self.refusal_latencies_s
        cores = os.cpu_count() or 1
        return {
            "system": self.system,
            "concurrency": self.concurrency,
            "records_per_request": self.records_per_request,
            "priority": self.priority,
            "scenario": self.scenario,
            "batch_size": self.batch_size,
            "requests": self.requests,
            "failed_requests": self.failed_requests,
            "outcomes": dict(self.outcomes),
            "sentences": self.sentences,
            "seconds": round(self.seconds, 3),
            "sentences_per_s": self.sentences / self.seconds,
            "generated_tokens": self.generated_tokens,
            "generated_tokens_per_s": self.generated_tokens / self.seconds,
            **latency_fields(self.latencies_s),
            "refusal_latency_p50_s": report.percentile(refusals, 50),
            "refusal_latency_p99_s": report.percentile(refusals, 99),
            "refusal_latency_max_s": max(refusals, default=None),
            "refusals_without_retry_after": self.refusals_without_retry_after,
            "mean_batch_size": self.mean_batch_size,
            "model_calls": self.model_calls,
            **self.memory,
            "client_cpu_share": None if self.client_cpu_s is None else self.client_cpu_s / (self.seconds * cores),
            "first_failure": self.first_failure,
            **self.extra,
        }
