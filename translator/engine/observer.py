"""Where the scheduler reports what operators want to see: a protocol, and the observer of no one.

service.py gives it the Prometheus one (translator/engine/metrics.py).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


# The reasons the scheduler gives `refused` (translator/engine/admission.py, health.py) and `dropped`
# (scheduler.py), typed so that no other can be counted (mypy refuses a plain string): the
# Prometheus observer shows each at 0 from the start, so a series never appears only with its
# first event.
class RefusalReason(StrEnum):
    DEADLINE = "deadline"
    UNHEALTHY = "unhealthy"
    SHUTTING_DOWN = "shutting_down"


class DropReason(StrEnum):
    CALLER_GONE = "caller_gone"
    EXPIRED = "expired"
    UNHEALTHY = "unhealthy"


REFUSAL_REASONS = tuple(RefusalReason)
DROP_REASONS = tuple(DropReason)


class Observer(Protocol):
    """Where the scheduler reports what operators want to see (service.py: Prometheus)."""

    def batch_done(self, pieces: int, padded_tokens: int, seconds: float) -> None: ...

    def queue_changed(self, pieces: int, tokens: int, predicted_wait_s: float) -> None: ...

    def refused(self, reason: RefusalReason) -> None: ...

    def dropped(self, reason: DropReason, pieces: int) -> None: ...


class NullObserver:
    def batch_done(self, pieces: int, padded_tokens: int, seconds: float) -> None:
        pass

    def queue_changed(self, pieces: int, tokens: int, predicted_wait_s: float) -> None:
        pass

    def refused(self, reason: RefusalReason) -> None:
        pass

    def dropped(self, reason: DropReason, pieces: int) -> None:
        pass
