"""A time limit on each part of an answer, and the answers their clients stopped reading: uvicorn's
send waits for ever while a client does not read, so each message is bounded in time, and a
request whose answer is not taken stays in its worker, counted, until its client goes."""

from __future__ import annotations

import asyncio

from translator.api.json_errors import Message, Send
from translator.api.refusal import Receive


class AnswerNotTaken(Exception):
    """The client did not take a part of its answer within the send time limit."""


def not_taken(exc: Exception) -> AnswerNotTaken | None:
    """The answer not taken that `exc` is, or holds (raised in a task group of the app)."""
    if isinstance(exc, AnswerNotTaken):
        return exc
    if isinstance(exc, ExceptionGroup) and exc.subgroup(AnswerNotTaken) is not None:
        return AnswerNotTaken(str(exc))
    return None


class TimedAnswer:
    """A response's `send`, each message bounded in time, with what went out counted."""

    def __init__(self, send: Send, timeout_s: float) -> None:
        self._send = send
        self.timeout_s = timeout_s
        self.started = False
        self.body_bytes = 0

    async def send(self, message: Message) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        self.body_bytes += len(message.get("body", b""))
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._send(message)
        except TimeoutError:
            raise AnswerNotTaken(f"the client took no part of its answer within {self.timeout_s:.0f} s") from None


class UnreadAnswers:
    """The answers of this worker that their clients stopped reading, in bytes, until they go."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0

    def too_many(self) -> bool:
        return self.bytes > self.max_bytes

    async def hold(self, receive: Receive, answer: TimedAnswer) -> None:
        """Hold the request of an answer not taken until its client goes, the answer counted.

        Closing cannot free what the client was sent: uvicorn's close waits for the unread bytes to
        leave, for as long as the client keeps the socket open."""
        self.bytes += answer.body_bytes
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:
            self.bytes -= answer.body_bytes
