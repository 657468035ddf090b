"""Where the scheduler reports what operators want to see: a protocol, and the observer of no one.

service.py gives it the Prometheus one (translator/engine/metrics.py).
"""

from __future__ import annotations

from typing import Protocol


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
