"""What every runner is (`Runner`: records in, translations out, in order) and shares: the
planning of requests, the reading of answers, and the two ways a request fails.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from translator.contract import limits

if TYPE_CHECKING:
    pass


logger = logging.getLogger(__name__)


class RunnerError(RuntimeError):
    """The translation system failed in a way that retrying will not fix."""


class RequestRejected(RuntimeError):
    """The system refused a request for what it holds (400, 413...): retrying it is pointless."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Translated:
    """A record's translation, and whether the translation memory the job names answered it (its
    `origin.kind` is "memory": a person's text) rather than the model."""

    text: str
    memory: bool = False


class Runner(Protocol):
    # What decides the translations; hashed into the checkpoint keys (with the memory's id, if any).
    identity: dict[str, Any]
    # The translation memory every request names (#51: `translationMemory`), or None.
    memory: str | None
    # For people: the URL or the model directory.
    label: str
    # Requests worth keeping in flight at once.
    concurrency: int

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def languages(self) -> frozenset[str] | None: ...

    async def translate(self, source: str, target: str, texts: Sequence[str], fmt: str = "text") -> list[Translated]:
        """`fmt`: the native API's `format` ("text" or "html")."""
        ...

    async def memory_info(self) -> dict[str, Any] | None:
        """`memory`'s description in the native API's shape (`GET /memories/{id}`), None if there
        is no such memory; raises RunnerError when it cannot be asked."""
        ...

    async def learn(self, filename: str, data: bytes, target: str) -> int:
        """A PO or XLIFF file's translations people made added to `memory`, as `memoryLearn` adds a
        document job's: the number of segments added."""
        ...


def plan_requests(texts: Sequence[str], records_per_request: int) -> list[range]:
    """Consecutive index ranges, one per request, within the service's per-request limits.

    A text over the per-record limit gets a request of its own (which the service refuses): the
    job checks lengths before planning, so that only happens to a caller that did not.
    """
    per_request = max(1, min(records_per_request, limits.MAX_RECORDS_PER_REQUEST))
    requests: list[range] = []
    start = chars = 0
    for index, text in enumerate(texts):
        if index > start and (index - start >= per_request or chars + len(text) > limits.MAX_CHARS_PER_REQUEST):
            requests.append(range(start, index))
            start, chars = index, 0
        chars += len(text)
    if start < len(texts):
        requests.append(range(start, len(texts)))
    return requests


def records_from(answer: Any, ids: list[str], where: str) -> list[Translated]:
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, list) or len(result) != len(ids):
        got = len(result) if isinstance(result, list) else "no"
        raise RunnerError(f"{where}: expected {len(ids)} records in 'result', got {got}")
    texts = []
    for expected, record in zip(ids, result, strict=True):
        if not isinstance(record, dict) or record.get("id") != expected or not isinstance(record.get("text"), str):
            raise RunnerError(f"{where}: record {expected!r} missing or out of order in the answer")
        origin = record.get("origin")
        from_memory = isinstance(origin, dict) and origin.get("kind") == "memory"
        texts.append(Translated(record["text"], from_memory))
    return texts
