"""The engine's admission: a request is taken only if it can be answered before its deadline, and
refused at once otherwise, with the time after which it would fit; never after it has waited.

The prediction is the one forecast both processes use (translator/contract/forecast.py). A request
with nothing ahead of it is admitted even if predicted late: it cannot be answered any sooner, and
refused it would be refused again every time it came back. An admitted request expires (its caller
gets `expired`, 504 at the API) once its deadline and a grace have passed, whatever the model is
doing: a prediction is an estimate, and a request a little late is still answered.
"""

from __future__ import annotations

import math

# Retry-After of a request that ran out of time in the queue (the engine was slower than predicted).
RETRY_AFTER_EXPIRED_S = 5
# A request admitted alone although predicted late expires at this many times its prediction.
LATE_ALONE_ALLOWANCE = 2.0
# How long past its deadline an admitted request is still waited for: a fraction of its budget,
# at least this many seconds.
EXPIRY_GRACE_FRACTION = 0.5
EXPIRY_GRACE_MIN_S = 1.0


class Refused(Exception):
    """The request cannot be answered in time (or at all now); the caller may retry later."""

    def __init__(self, reason: str, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s


def refusal(now: float, finish: float, deadline: float, budget_s: float) -> Refused:
    """The answer to a request predicted to finish at `finish`, past its `deadline`: after
    `finish - deadline` seconds the work now ahead of it is done, and then it would fit."""
    retry = max(1.0, math.ceil(finish - deadline))
    return Refused(
        "deadline",
        f"the engine is overloaded: this request would be answered in about {finish - now:.1f} s, "
        f"over its limit of {budget_s:.1f} s; retry after {retry:.0f} s",
        retry,
    )


def expires_at(deadline: float, budget_s: float, late: bool, counted: float, finish: float) -> float:
    """When an admitted request stops being waited for. Admitted alone although predicted late, it
    is given its predicted time with room for a misprediction: expired at its deadline it would be
    expired again on every retry."""
    at = deadline + max(EXPIRY_GRACE_MIN_S, EXPIRY_GRACE_FRACTION * budget_s)
    if late:
        at = max(at, counted + LATE_ALONE_ALLOWANCE * (finish - counted) + 1.0)
    return at


def expired(budget_s: float, outstanding: int, pieces: int, queued: int) -> Refused:
    return Refused(
        "expired",
        f"the request's deadline ({budget_s:.2f} s) passed, and its grace, before the engine could answer it "
        f"({outstanding} of {pieces} pieces unanswered, {queued} still queued)",
        RETRY_AFTER_EXPIRED_S,
    )
