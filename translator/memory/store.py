"""Where translation memories are kept (#51): on the glossaries' backends, the shared Valkey or Redis
when the sentence cache has one (every replica sees the same memories), else files in the server's
own BENTOML_HOME.

A memory is its description (translator/memory/model.py `MemoryInfo`) and chunks of segments, each
the segments one import or one learning job added, compressed. Chunks are appended, never
rewritten: a worker that has read a memory's first n chunks reads only the ones after them when it
sees the description's count grow. An append is serialised as a glossary's update is (a file lock,
or Valkey's WATCH on the description), and checks the bounds before it writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import tempfile
import uuid
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Protocol

from translator.config import state_directory
from translator.contract.errors import PayloadTooLarge, Unavailable
from translator.memory.model import MAX_MEMORIES, MAX_SEGMENTS, MemoryInfo, Segment, now

# The store's bytes, compressed, all memories together: a few memories of a million segments of
# sentences (bench/results/translation-memory.md), beside the documents' 128 MiB and the glossaries'
# 64 MiB within the Deployment's 512 MiB BentoML home (deploy/base/deployment.yaml).
MAX_STORED_BYTES = 256 * 1024 * 1024
# Named before the stores' `list` methods, which a class body's annotations would take for them.
Segments = list[Segment]
Chunks = list[list[Segment]]


class MemoryStore(Protocol):
    async def create(self, info: MemoryInfo) -> None: ...
    async def get(self, memory_id: str) -> MemoryInfo | None: ...
    async def list(self) -> list[MemoryInfo]: ...
    async def delete(self, memory_id: str) -> bool: ...
    async def append(self, memory_id: str, segments: Segments) -> MemoryInfo | None:
        """The description after `segments` joined the memory as one chunk; None when there is no
        such memory. Raises PayloadTooLarge past the bounds, and nothing is stored."""
        ...

    async def chunks(self, memory_id: str, start: int) -> Chunks:
        """The memory's chunks from the `start`-th (0-based) on, in the order they were appended."""
        ...


def encode_chunk(segments: list[Segment]) -> bytes:
    rows = [[s.source, s.target_lang, s.target] for s in segments]
    return zlib.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode(), 6)


def decode_chunk(data: bytes) -> list[Segment]:
    return [Segment(source, lang, target) for source, lang, target in json.loads(zlib.decompress(data))]


def valid_id(memory_id: str) -> bool:
    try:
        return str(uuid.UUID(memory_id)) == memory_id
    except ValueError:
        return False


def _appended(info: MemoryInfo, segments: list[Segment]) -> MemoryInfo:
    count = info.segment_count + len(segments)
    if count > MAX_SEGMENTS:
        raise PayloadTooLarge("memory: segments stored", MAX_SEGMENTS, count)
    languages = sorted(set(info.target_langs) | {s.target_lang for s in segments})
    return dataclasses.replace(
        info, segment_count=count, target_langs=tuple(languages), updated=now(), chunks=info.chunks + 1
    )


def _check_bytes(stored: int, adding: int, max_bytes: int) -> None:
    if stored + adding > max_bytes:
        raise PayloadTooLarge("memories: bytes stored", max_bytes, stored + adding)


class FileStore:
    """A directory a memory: `info.json` (written whole and renamed into place) and `chunk-<n>.json.z`."""

    def __init__(self, directory: Path, max_bytes: int = MAX_STORED_BYTES) -> None:
        self.directory = directory
        self.max_bytes = max_bytes

    def _dir(self, memory_id: str) -> Path:
        return self.directory / memory_id

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, path: Path, data: bytes) -> None:
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)

    def _read_info(self, memory_id: str) -> MemoryInfo | None:
        try:
            return MemoryInfo.from_json(json.loads((self._dir(memory_id) / "info.json").read_bytes()))
        except FileNotFoundError:
            return None

    def _stored_bytes(self) -> int:
        total = 0
        for path in self.directory.glob("*/chunk-*"):
            with contextlib.suppress(FileNotFoundError):
                total += path.stat().st_size
        return total

    async def create(self, info: MemoryInfo) -> None:
        def create() -> None:
            with self._locked():
                if sum(1 for _ in self.directory.glob("*/info.json")) >= MAX_MEMORIES:
                    raise PayloadTooLarge("memories: number stored", MAX_MEMORIES)
                self._dir(info.memory_id).mkdir()
                self._write(self._dir(info.memory_id) / "info.json", json.dumps(info.to_json()).encode())

        await asyncio.to_thread(create)

    async def get(self, memory_id: str) -> MemoryInfo | None:
        if not valid_id(memory_id):
            return None
        return await asyncio.to_thread(self._read_info, memory_id)

    async def list(self) -> list[MemoryInfo]:
        def read_all() -> list[MemoryInfo]:
            found = [self._read_info(path.parent.name) for path in self.directory.glob("*/info.json")]
            return sorted((info for info in found if info is not None), key=lambda info: info.created)

        return await asyncio.to_thread(read_all)

    async def delete(self, memory_id: str) -> bool:
        if not valid_id(memory_id):
            return False

        def delete() -> bool:
            with self._locked():
                if not (self._dir(memory_id) / "info.json").exists():
                    return False
                shutil.rmtree(self._dir(memory_id), ignore_errors=True)
                return True

        return await asyncio.to_thread(delete)

    async def append(self, memory_id: str, segments: Segments) -> MemoryInfo | None:
        if not valid_id(memory_id):
            return None
        data = encode_chunk(segments)

        def append() -> MemoryInfo | None:
            with self._locked():
                info = self._read_info(memory_id)
                if info is None:
                    return None
                changed = _appended(info, segments)
                _check_bytes(self._stored_bytes(), len(data), self.max_bytes)
                self._write(self._dir(memory_id) / f"chunk-{info.chunks}.json.z", data)
                self._write(self._dir(memory_id) / "info.json", json.dumps(changed.to_json()).encode())
                return changed

        return await asyncio.to_thread(append)

    async def chunks(self, memory_id: str, start: int) -> Chunks:
        if not valid_id(memory_id):
            return []

        def read() -> Chunks:
            info = self._read_info(memory_id)
            if info is None:
                return []
            out = []
            for number in range(start, info.chunks):
                try:
                    out.append(decode_chunk((self._dir(memory_id) / f"chunk-{number}.json.z").read_bytes()))
                except FileNotFoundError:  # deleted meanwhile
                    return []
            return out

        return await asyncio.to_thread(read)


@contextlib.asynccontextmanager
async def _reachable() -> AsyncIterator[None]:
    """A Valkey that does not answer is a 503 with Retry-After: a memory cannot be silently dropped."""
    from redis.exceptions import RedisError

    try:
        yield
    except RedisError as exc:
        raise Unavailable(f"memories: the shared store does not answer ({type(exc).__name__})") from None


_APPEND_ATTEMPTS = 20


class ValkeyStore:
    """A memory's description at `memory:<id>` (JSON), its chunks in the list `memory-chunks:<id>`,
    the ids in the set `memories`, and the chunks' bytes together in `memories-bytes`."""

    _SET = "memories"
    _BYTES = "memories-bytes"

    def __init__(self, url: str, timeout_s: float = 5.0, max_bytes: int = MAX_STORED_BYTES) -> None:
        import redis.asyncio as redis

        self.max_bytes = max_bytes
        self._client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)

    async def create(self, info: MemoryInfo) -> None:
        async with _reachable():
            if await self._client.scard(self._SET) >= MAX_MEMORIES:
                raise PayloadTooLarge("memories: number stored", MAX_MEMORIES)
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(f"memory:{info.memory_id}", json.dumps(info.to_json()))
                pipe.sadd(self._SET, info.memory_id)
                await pipe.execute()

    async def get(self, memory_id: str) -> MemoryInfo | None:
        if not valid_id(memory_id):
            return None
        async with _reachable():
            raw = await self._client.get(f"memory:{memory_id}")
        return MemoryInfo.from_json(json.loads(raw)) if raw else None

    async def list(self) -> list[MemoryInfo]:
        async with _reachable():
            ids = sorted(i.decode() if isinstance(i, bytes) else i for i in await self._client.smembers(self._SET))
            values = await self._client.mget([f"memory:{i}" for i in ids]) if ids else []
        found = [MemoryInfo.from_json(json.loads(value)) for value in values if value]
        return sorted(found, key=lambda info: info.created)

    async def delete(self, memory_id: str) -> bool:
        if not valid_id(memory_id):
            return False
        async with _reachable():
            chunks = await self._client.lrange(f"memory-chunks:{memory_id}", 0, -1)
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(f"memory:{memory_id}")
                pipe.delete(f"memory-chunks:{memory_id}")
                pipe.srem(self._SET, memory_id)
                pipe.decrby(self._BYTES, sum(len(chunk) for chunk in chunks))
                deleted, *_ = await pipe.execute()
        return bool(deleted)

    async def append(self, memory_id: str, segments: Segments) -> MemoryInfo | None:
        from redis.exceptions import WatchError

        if not valid_id(memory_id):
            return None
        data = encode_chunk(segments)
        key = f"memory:{memory_id}"
        async with _reachable():
            for _ in range(_APPEND_ATTEMPTS):
                try:
                    async with self._client.pipeline(transaction=True) as pipe:
                        # Optimistic: the write fails (WatchError) if another replica appended meanwhile.
                        await pipe.watch(key, self._BYTES)
                        raw = await pipe.get(key)
                        if not raw:
                            return None
                        changed = _appended(MemoryInfo.from_json(json.loads(raw)), segments)
                        _check_bytes(int(await pipe.get(self._BYTES) or 0), len(data), self.max_bytes)
                        pipe.multi()
                        pipe.rpush(f"memory-chunks:{memory_id}", data)
                        pipe.set(key, json.dumps(changed.to_json()))
                        pipe.incrby(self._BYTES, len(data))
                        await pipe.execute()
                    return changed
                except WatchError:
                    continue
        raise Unavailable("memories: the memory is being changed by others; retry later")

    async def chunks(self, memory_id: str, start: int) -> Chunks:
        if not valid_id(memory_id):
            return []
        async with _reachable():
            raw = await self._client.lrange(f"memory-chunks:{memory_id}", start, -1)
        chunks = [chunk.encode() if isinstance(chunk, str) else chunk for chunk in raw]  # a client decoding replies
        return await asyncio.to_thread(lambda: [decode_chunk(chunk) for chunk in chunks])


# Without a shared store: files in the server's own BentoML home (`memories/`), as its glossaries are.
def local_directory() -> Path:
    return state_directory("memories")


def store_for(shared_url: str | None, directory: Path | None = None) -> MemoryStore:
    if shared_url:
        return ValkeyStore(shared_url)
    return FileStore(directory if directory is not None else local_directory())
