"""Stop working for a caller who has gone away.

Neither uvicorn nor BentoML cancels a handler when its client disconnects: the handler runs to
the end and its answer is thrown away. For a translation that means a model batch spent on nobody.
Once the body has been read, the next ASGI `receive()` returns only when the connection closes
(`http.disconnect`), so one task waiting on it is enough to notice, at no cost while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
Receive = Callable[[], Awaitable[dict[str, Any]]]


class CallerGone(Exception):
    """The client closed the connection before the answer was ready."""


async def unless_disconnected(receive: Receive, work: Awaitable[T]) -> T:
    """Await `work`; cancel it and raise `CallerGone` if the client disconnects first."""
    task = asyncio.ensure_future(work)
    gone = False

    async def watch() -> None:
        nonlocal gone
        while True:
            message = await receive()
            if message.get("type") == "http.disconnect":
                gone = True
                task.cancel()
                return

    watcher = asyncio.ensure_future(watch())
    try:
        return await task
    except asyncio.CancelledError:
        if gone:
            raise CallerGone("the client closed the connection") from None
        raise
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watcher
        if not task.done():
            task.cancel()
