"""The API-to-engine protocol: what an API worker sends the engine process and what comes back.

Both processes import this module and nothing of each other's: a `Piece` goes out with a
`Priority`, an `EngineReply` (a `PieceResult` per piece, in order, or an `EngineRefusal`) comes
back. The public HTTP models are in `translator.contract.schemas`.
"""

from __future__ import annotations

import enum

from pydantic import BaseModel, Field

# Ends the log line of a process that will not report ready until restarted (misconfigured keys, a
# failed warm-up): Kubernetes restarts it when its startup probe's budget runs out, and the test
# harness stops waiting at once (harness/servers.py) rather than after its whole start timeout.
NEVER_READY = "readiness stays false"


class Priority(enum.IntEnum):
    """Who waits for the answer: a person (interactive) or a job (bulk, `Priority: u=5` or more)."""

    INTERACTIVE = 0
    BULK = 1


class Piece(BaseModel):
    """One sentence (or chunk of one) on its way from the API service to the engine."""

    text: str
    source: str
    target: str
    # Other translations wanted beside the best (n-best from the beam search); 0 for the best only.
    alternatives: int = 0


# PieceResult.error_kind of a piece whose translation did not end within the model's limit, even
# with all of it and cut in parts: the request fails with 422 rather than return a cut text.
TRUNCATED = "truncated"
# PieceResult.error_kind of every piece of a batch that failed as a whole, outside the backend's
# per-piece isolation: the engine's fault, not the piece's (503, a retry may succeed). A piece
# that fails alone has no kind: it is its text that fails (500 naming the record).
ENGINE_FAILED = "engine_failed"


class PieceResult(BaseModel):
    """The engine's answer for one piece: a translation, or why that piece alone failed."""

    text: str | None = None
    error: str | None = None
    error_kind: str | None = None
    # The next best translations, best first, when the piece asked for them (fewer when the beam
    # search found fewer distinct ones).
    alternatives: list[str] = Field(default_factory=list)


class EngineRefusal(BaseModel):
    """Why the engine did not take a request: refused at admission, never after waiting."""

    reason: str
    message: str
    retry_after_s: float


class EngineReply(BaseModel):
    """The engine's answer to one request: a result per piece in order, or a refusal."""

    results: list[PieceResult] = Field(default_factory=list)
    refused: EngineRefusal | None = None
