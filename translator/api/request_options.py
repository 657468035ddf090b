"""Per-request options carried in HTTP headers, beside the JSON contract (which stays as it is).

- `Priority` (RFC 9218): urgency `u=0..7`, lower is more urgent; `u=5` and above is bulk work
  (long jobs, evaluation), which takes what interactive traffic leaves. No header (or an urgency
  below 5) is interactive. Other parameters of the header (`i` for incremental) are ignored.
- `X-Deadline-Ms`: the caller will not wait longer than this many milliseconds. The engine then
  plans with the sooner of this and `max_latency_ms`: refused at once if it cannot make it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from translator.contract.errors import InvalidRequest
from translator.contract.options import RequestOptions
from translator.contract.protocol import Priority

PRIORITY_HEADER = "priority"
DEADLINE_HEADER = "x-deadline-ms"
BULK_URGENCY = 5
_URGENCY = re.compile(r"[0-9]{1,15}")
# An hour: far beyond any HTTP timeout on the way; a larger value is a mistake, not a wish.
MAX_DEADLINE_MS = 3_600_000


def options_of(headers: Mapping[str, str], receive: Callable[[], Awaitable[dict[str, Any]]]) -> RequestOptions:
    """The options an HTTP request carries in its headers; `receive` tells when its client goes."""
    return RequestOptions(priority_of(headers), deadline_ms_of(headers), gone=receive)


def priority_of(headers: Mapping[str, str]) -> Priority:
    value = headers.get(PRIORITY_HEADER)
    if value is None:
        return Priority.INTERACTIVE
    urgency = None
    for item in value.split(","):
        key, _, raw = item.strip().partition("=")
        if key.strip() == "u":
            raw = raw.strip()
            # ASCII digits, as RFC 8941 integers are: str.isdigit() also takes '²', which int()
            # refuses, and a header of thousands of digits would meet int()'s own limit.
            if not (_URGENCY.fullmatch(raw) and int(raw) <= 7):
                raise InvalidRequest(
                    f"header Priority: urgency must be u=0..7 (RFC 9218), not {raw[:20]!r}", field="Priority"
                )
            urgency = int(raw)
    if urgency is not None and urgency >= BULK_URGENCY:
        return Priority.BULK
    return Priority.INTERACTIVE


def deadline_ms_of(headers: Mapping[str, str]) -> float | None:
    value = headers.get(DEADLINE_HEADER)
    if value is None:
        return None
    try:
        deadline = float(value)
    except ValueError:
        deadline = float("nan")
    # From 1 ms, as the message says: 0.5 ms was taken and answered 504, for an input error.
    if not (1 <= deadline <= MAX_DEADLINE_MS):
        raise InvalidRequest(
            f"header X-Deadline-Ms: must be a number of milliseconds between 1 and {MAX_DEADLINE_MS}, "
            f"not {value[:20]!r}",
            field="X-Deadline-Ms",
        )
    return deadline
