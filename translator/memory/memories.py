"""The memories as an API worker uses them (#51): the store, and each memory's index built from its
chunks, kept current.

A worker holds the indexes of the memories requests name (the most recently used `MAX_INDEXES`).
Before a lookup it asks the store for the memory's description at most once per `refresh_s` (a
file's read, or one Valkey GET): where the chunk count grew (an import, a learning job, on this
replica or another) it reads the new chunks only, in a thread, and adds them to the index. A
deleted memory is dropped at the same check. Writes through this worker are seen by its next
lookup at once; another replica's within `refresh_s`.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass

from translator.memory.index import MemoryIndex
from translator.memory.model import MAX_SEGMENTS_PER_IMPORT, MemoryInfo, Segment, new_memory
from translator.memory.store import MemoryStore

MAX_INDEXES = 8
REFRESH_S = 1.0


@dataclass
class _Loaded:
    info: MemoryInfo
    index: MemoryIndex
    chunks_read: int
    checked: float


class Memories:
    def __init__(self, store: MemoryStore, refresh_s: float = REFRESH_S, max_indexes: int = MAX_INDEXES) -> None:
        self.store = store
        self.refresh_s = refresh_s
        self.max_indexes = max_indexes
        self._loaded: OrderedDict[str, _Loaded] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}

    async def create(self, name: str, source_lang: str) -> MemoryInfo:
        info = new_memory(name, source_lang)
        await self.store.create(info)
        return info

    async def add(self, memory_id: str, segments: list[Segment]) -> MemoryInfo | None:
        """`segments` appended, in chunks of at most MAX_SEGMENTS_PER_IMPORT; the description after."""
        info = await self.store.get(memory_id)
        for start in range(0, len(segments), MAX_SEGMENTS_PER_IMPORT):
            info = await self.store.append(memory_id, segments[start : start + MAX_SEGMENTS_PER_IMPORT])
            if info is None:
                return None
        loaded = self._loaded.get(memory_id)
        if loaded is not None:
            loaded.checked = 0.0  # this worker's next lookup reads the new chunks
        return info

    async def get(self, memory_id: str) -> MemoryInfo | None:
        return await self.store.get(memory_id)

    async def list(self) -> list[MemoryInfo]:
        return await self.store.list()

    async def delete(self, memory_id: str) -> bool:
        self._loaded.pop(memory_id, None)
        return await self.store.delete(memory_id)

    async def segments(self, memory_id: str) -> AsyncIterator[Segment]:
        """Every stored segment, in the order stored (an export, a listing)."""
        for chunk in await self.store.chunks(memory_id, 0):
            for segment in chunk:
                yield segment

    async def index(self, memory_id: str) -> tuple[MemoryInfo, MemoryIndex] | None:
        """The memory's description and its current index; None when there is no such memory."""
        loaded = self._loaded.get(memory_id)
        if loaded is not None and time.monotonic() - loaded.checked < self.refresh_s:
            self._loaded.move_to_end(memory_id)
            return loaded.info, loaded.index
        lock = self._locks.setdefault(memory_id, asyncio.Lock())
        async with lock:  # one reader of new chunks at a time; the others find its work done
            loaded = self._loaded.get(memory_id)
            if loaded is not None and time.monotonic() - loaded.checked < self.refresh_s:
                return loaded.info, loaded.index
            info = await self.store.get(memory_id)
            if info is None:
                self._loaded.pop(memory_id, None)
                self._locks.pop(memory_id, None)
                return None
            if loaded is None:
                loaded = _Loaded(info, MemoryIndex(info.source_lang), 0, 0.0)
            if info.chunks > loaded.chunks_read:
                chunks = await self.store.chunks(memory_id, loaded.chunks_read)
                segments = [segment for chunk in chunks for segment in chunk]
                await asyncio.to_thread(loaded.index.add, segments)
                loaded.chunks_read += len(chunks)
                # An index is millions of objects kept for long: out of the collector's full passes,
                # which walked them all with every request of the worker waiting (p99 near a second
                # with a million segments; bench/results/translation-memory.md).
                gc.freeze()
            loaded.info, loaded.checked = info, time.monotonic()
            self._loaded[memory_id] = loaded
            self._loaded.move_to_end(memory_id)
            while len(self._loaded) > self.max_indexes:
                self._loaded.popitem(last=False)
            return loaded.info, loaded.index
