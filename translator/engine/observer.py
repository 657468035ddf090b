"""Where the scheduler reports what operators want to see: a protocol, and the observer of no one.

service.py gives it the Prometheus one (translator/engine/metrics.py).
"""

from __future__ import annotations

from typing import Protocol

# Every reason the scheduler gives `refused` (translator/engine/admission.py, health.py) and `dropped`
# (scheduler.py): the Prometheus observer shows each at 0 from the start.
REFUSAL_REASONS = ("deadline", "unhealthy", "shutting_down")
DROP_REASONS = ("caller_gone", "expired", "unhealthy")


class Observer(Protocol):
    """Where the scheduler reports what operators want to see (service.py: Prometheus)."""

    def batch_done(self, pieces: int, padded_tokens: int, seconds: float) -> None: ...

    def queue_changed(self, pieces: int, tokens: int, predicted_wait_s: float) -> None: ...

    def refused(self, reason: str) -> None: ...

    def dropped(self, reason: str, pieces: int) -> None: ...


class NullObserver:
    def batch_done(self, pieces: int, padded_tokens: int, seconds: float) -> None:
        pass

    def queue_changed(self, pieces: int, tokens: int, predicted_wait_s: float) -> None:
        pass

    def refused(self, reason: str) -> None:
        pass

    def dropped(self, reason: str, pieces: int) -> None:
        pass
