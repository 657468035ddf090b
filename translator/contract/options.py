"""What a translation request asks besides its payload, typed: each API reads it from its own
request (translator/api/request_options.py: HTTP headers; a document job: bulk, by construction),
and the handler (translator/api/handler.py) takes it, never raw headers (#50: document jobs faked
both the headers and an ASGI `receive` to call it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from translator.contract.protocol import Priority


@dataclass(frozen=True)
class RequestOptions:
    priority: Priority = Priority.INTERACTIVE
    # How long the caller will wait (X-Deadline-Ms); None: the server's latency objective.
    deadline_ms: float | None = None
    # Returns when the caller has gone (an HTTP client's disconnect: the ASGI `receive` once the body
    # is read); its work is then cancelled. None: nobody can go away (a background job).
    gone: Callable[[], Awaitable[dict[str, Any]]] | None = None


# A document job's chunks: bulk work, which yields to interactive requests, with nobody waiting.
BULK = RequestOptions(priority=Priority.BULK)
