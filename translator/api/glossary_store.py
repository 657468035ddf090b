"""Where stored glossaries are kept (#33, #44): the shared Valkey or Redis when the sentence cache has
one, so that every replica sees them, else files in the server's own BENTOML_HOME.

A glossary (translator/api/glossary_model.py: a name and dictionaries, and its JSON as stored)
changes only through `update`, a read-modify-write that one replica at a time completes (a file
lock, or Valkey's WATCH), and each version has a revision: a reader that cached a glossary asks for
its revision, a few bytes, before using it again, and reads it anew when it changed. Both stores
bound the glossaries' count, each glossary's bytes and their bytes together, and check them before
writing (creations are not serialised with each other: concurrent ones may pass the count or the
total by the few that raced, as the document jobs' bounds may).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Protocol

# The model re-exported: the tests take it from here, with the stores.
from translator.api.glossary_model import Dictionary as Dictionary
from translator.api.glossary_model import Glossary, from_json, to_json
from translator.api.glossary_model import new_glossary as new_glossary
from translator.api.glossary_model import new_multilingual as new_multilingual
from translator.config import state_directory
from translator.contract.errors import PayloadTooLarge, Unavailable
from translator.contract.glossary import MAX_GLOSSARY_BYTES, MAX_STORED_GLOSSARIES, MAX_STORED_GLOSSARY_BYTES

Change = Callable[[Glossary], Glossary]


class GlossaryStore(Protocol):
    async def create(self, glossary: Glossary) -> None: ...
    async def get(self, glossary_id: str) -> Glossary | None: ...
    async def revision(self, glossary_id: str) -> str | None:
        """The version stored (changed by every update), None when there is no such glossary."""
        ...

    async def exists(self, glossary_id: str) -> bool: ...
    async def list(self) -> list[Glossary]: ...
    async def delete(self, glossary_id: str) -> bool: ...
    async def update(self, glossary_id: str, change: Change) -> Glossary | None:
        """The glossary as `change` made it from the one stored, stored in its place, in one step no
        other update interleaves with; None when there is no such glossary. What `change` raises
        (a TranslationError) is raised, and nothing is stored."""
        ...


def _check_room(count: int, stored_bytes: int, adding: int, max_bytes: int) -> None:
    """Before a glossary of `adding` bytes joins `count` glossaries of `stored_bytes`."""
    if count >= MAX_STORED_GLOSSARIES:
        raise PayloadTooLarge("glossaries: number stored", MAX_STORED_GLOSSARIES)
    _check_bytes(stored_bytes, adding, max_bytes)


def _check_bytes(stored_bytes: int, adding: int, max_bytes: int) -> None:
    if adding > MAX_GLOSSARY_BYTES:
        raise PayloadTooLarge("glossary: bytes stored", MAX_GLOSSARY_BYTES, adding)
    if stored_bytes + adding > max_bytes:
        raise PayloadTooLarge("glossaries: bytes stored", max_bytes, stored_bytes + adding)


def _valid_id(glossary_id: str) -> bool:
    try:
        return str(uuid.UUID(glossary_id)) == glossary_id
    except ValueError:
        return False


class FileStore:
    """One JSON file per glossary, written whole and renamed into place: safe across processes. A
    file's revision is its identity on disk (inode, modification time, size), which every rename
    into place changes; writers take a lock file, so that two updates never interleave."""

    def __init__(self, directory: Path, max_bytes: int = MAX_STORED_GLOSSARY_BYTES) -> None:
        self.directory = directory
        self.max_bytes = max_bytes

    def _path(self, glossary_id: str) -> Path:
        return self.directory / f"{glossary_id}.json"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    async def create(self, glossary: Glossary) -> None:
        await asyncio.to_thread(self._create, glossary)

    def _create(self, glossary: Glossary) -> None:
        data = to_json(glossary).encode()
        with self._locked():
            sizes = [_size(path) for path in self.directory.glob("*.json")]
            _check_room(len(sizes), sum(sizes), len(data), self.max_bytes)
            self._write(glossary.glossary_id, data)

    def _write(self, glossary_id: str, data: bytes) -> None:
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, self._path(glossary_id))

    async def get(self, glossary_id: str) -> Glossary | None:
        if not _valid_id(glossary_id):
            return None
        return await asyncio.to_thread(self._read, self._path(glossary_id))

    async def revision(self, glossary_id: str) -> str | None:
        if not _valid_id(glossary_id):
            return None
        try:
            return _revision(await asyncio.to_thread(os.stat, self._path(glossary_id)))
        except FileNotFoundError:
            return None

    async def exists(self, glossary_id: str) -> bool:
        return await self.revision(glossary_id) is not None

    @staticmethod
    def _read(path: Path) -> Glossary | None:
        try:
            with path.open("rb") as file:  # the revision of the very file read
                return from_json(file.read(), _revision(os.fstat(file.fileno())))
        except FileNotFoundError:
            return None

    async def list(self) -> list[Glossary]:
        def read_all() -> list[Glossary]:
            found = [self._read(path) for path in sorted(self.directory.glob("*.json"))]
            return [glossary for glossary in found if glossary is not None]

        return await asyncio.to_thread(read_all)

    async def delete(self, glossary_id: str) -> bool:
        if not _valid_id(glossary_id):
            return False
        return await asyncio.to_thread(self._delete, glossary_id)

    def _delete(self, glossary_id: str) -> bool:
        with self._locked():  # not between an update's read and its write, which would bring it back
            try:
                self._path(glossary_id).unlink()
            except FileNotFoundError:
                return False
            return True

    async def update(self, glossary_id: str, change: Change) -> Glossary | None:
        if not _valid_id(glossary_id):
            return None
        return await asyncio.to_thread(self._update, glossary_id, change)

    def _update(self, glossary_id: str, change: Change) -> Glossary | None:
        with self._locked():
            current = self._read(self._path(glossary_id))
            if current is None:
                return None
            changed = change(current)
            data = to_json(changed).encode()
            others = sum(_size(path) for path in self.directory.glob("*.json")) - current.stored_bytes
            _check_bytes(others, len(data), self.max_bytes)
            self._write(glossary_id, data)
            return self._read(self._path(glossary_id))


def _revision(stat: os.stat_result) -> str:
    return f"{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_size}"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # deleted by another worker meanwhile
        return 0


@contextlib.asynccontextmanager
async def _reachable() -> AsyncIterator[None]:
    """A Valkey that does not answer is a 503 with Retry-After for the requests that need a stored
    glossary (the sentence cache degrades to local; a glossary cannot: it would be silently dropped)."""
    from redis.exceptions import RedisError

    try:
        yield
    except RedisError as exc:
        raise Unavailable(f"glossaries: the shared store does not answer ({type(exc).__name__})") from None


# Updates of one glossary racing on several replicas: each retries after the one that won.
_UPDATE_ATTEMPTS = 20


class ValkeyStore:
    """Each glossary a JSON string at `glossary:<id>`, its revision at `glossary-revision:<id>`
    (absent for one stored before revisions, which has never changed: "0"), and their ids in the set
    `glossaries`."""

    _SET = "glossaries"

    def __init__(self, url: str, timeout_s: float = 2.0, max_bytes: int = MAX_STORED_GLOSSARY_BYTES) -> None:
        import redis.asyncio as redis

        self.max_bytes = max_bytes
        self._client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, decode_responses=True
        )

    async def _stored_bytes(self) -> tuple[int, int]:
        """How many glossaries are stored, and their bytes."""
        ids = [i if isinstance(i, str) else i.decode() for i in await self._client.smembers(self._SET)]
        async with self._client.pipeline(transaction=False) as pipe:
            for glossary_id in ids:
                pipe.strlen(f"glossary:{glossary_id}")
            sizes = await pipe.execute() if ids else []
        return len(ids), sum(sizes)

    async def create(self, glossary: Glossary) -> None:
        data = to_json(glossary)
        async with _reachable():
            count, stored = await self._stored_bytes()
            _check_room(count, stored, len(data.encode()), self.max_bytes)
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(f"glossary:{glossary.glossary_id}", data)
                pipe.set(f"glossary-revision:{glossary.glossary_id}", uuid.uuid4().hex)
                pipe.sadd(self._SET, glossary.glossary_id)
                await pipe.execute()

    async def get(self, glossary_id: str) -> Glossary | None:
        async with _reachable():
            if not _valid_id(glossary_id):
                return None
            async with self._client.pipeline(transaction=True) as pipe:  # the revision of the very value read
                pipe.get(f"glossary:{glossary_id}")
                pipe.get(f"glossary-revision:{glossary_id}")
                raw, revision = await pipe.execute()
            return from_json(raw, revision or "0") if raw else None

    async def revision(self, glossary_id: str) -> str | None:
        async with _reachable():
            if not _valid_id(glossary_id):
                return None
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.exists(f"glossary:{glossary_id}")
                pipe.get(f"glossary-revision:{glossary_id}")
                exists, revision = await pipe.execute()
            return (revision or "0") if exists else None

    async def exists(self, glossary_id: str) -> bool:
        return await self.revision(glossary_id) is not None

    async def list(self) -> list[Glossary]:
        async with _reachable():
            ids = sorted(i if isinstance(i, str) else i.decode() for i in await self._client.smembers(self._SET))
            values = await self._client.mget([f"glossary:{i}" for i in ids]) if ids else []
            return [from_json(value, "") for value in values if value]

    async def delete(self, glossary_id: str) -> bool:
        async with _reachable():
            if not _valid_id(glossary_id):
                return False
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(f"glossary:{glossary_id}")
                pipe.delete(f"glossary-revision:{glossary_id}")
                pipe.srem(self._SET, glossary_id)
                deleted, _, _ = await pipe.execute()
            return bool(deleted)

    async def update(self, glossary_id: str, change: Change) -> Glossary | None:
        from redis.exceptions import WatchError

        if not _valid_id(glossary_id):
            return None
        key, revision_key = f"glossary:{glossary_id}", f"glossary-revision:{glossary_id}"
        async with _reachable():
            for _ in range(_UPDATE_ATTEMPTS):
                try:
                    async with self._client.pipeline(transaction=True) as pipe:
                        # Optimistic: the write fails (WatchError) if another replica wrote meanwhile.
                        await pipe.watch(key)
                        raw = await pipe.get(key)
                        if not raw:
                            return None
                        current = from_json(raw, "")
                        changed = change(current)
                        data = to_json(changed)
                        _, stored = await self._stored_bytes()
                        _check_bytes(stored - current.stored_bytes, len(data.encode()), self.max_bytes)
                        revision = uuid.uuid4().hex
                        pipe.multi()
                        pipe.set(key, data)
                        pipe.set(revision_key, revision)
                        await pipe.execute()
                    return replace(changed, revision=revision, stored_bytes=len(data.encode()))
                except WatchError:
                    continue
        raise Unavailable("glossaries: the glossary is being changed by others; retry later")


# Without a shared store: files in the server's own BentoML home (`glossaries/`), as its document
# jobs are, so that two servers on one machine (a test's, say) never see each other's glossaries.
def local_directory() -> Path:
    return state_directory("glossaries")


def store_for(shared_url: str | None, directory: Path | None = None) -> GlossaryStore:
    if shared_url:
        return ValkeyStore(shared_url)
    return FileStore(directory if directory is not None else local_directory())
