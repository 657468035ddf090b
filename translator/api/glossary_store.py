"""Where stored glossaries are kept (#33): the shared Valkey or Redis when the sentence cache has one,
so that every replica sees them, else files in the server's own BENTOML_HOME. A glossary never
changes once created (as DeepL's): a new one is made and the old one deleted. Both stores bound the
count and the bytes kept, and check them before writing (without a lock: concurrent creations may
pass a bound by the few that raced, as the document jobs' bounds may).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from translator.config import state_directory
from translator.contract.errors import PayloadTooLarge, Unavailable
from translator.contract.glossary import MAX_STORED_GLOSSARIES, MAX_STORED_GLOSSARY_BYTES
from translator.text.glossary import Terms


@dataclass(frozen=True)
class Glossary:
    glossary_id: str
    name: str
    source_lang: str
    target_lang: str
    creation_time: str
    entries: dict[str, str]

    def info(self) -> dict[str, Any]:
        """What the native API answers about it (entries apart)."""
        return {
            "glossaryId": self.glossary_id,
            "name": self.name,
            "sourceLang": self.source_lang,
            "targetLang": self.target_lang,
            "creationTime": self.creation_time,
            "entryCount": len(self.entries),
        }

    def terms(self) -> Terms:
        return Terms(self.source_lang, self.target_lang, self.entries)


def new_glossary(name: str, source_lang: str, target_lang: str, entries: dict[str, str]) -> Glossary:
    created = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return Glossary(str(uuid.uuid4()), name, source_lang, target_lang, created, entries)


class GlossaryStore(Protocol):
    async def create(self, glossary: Glossary) -> None: ...
    async def get(self, glossary_id: str) -> Glossary | None: ...
    async def exists(self, glossary_id: str) -> bool: ...
    async def list(self) -> list[Glossary]: ...
    async def delete(self, glossary_id: str) -> bool: ...


def _check_room(count: int, stored_bytes: int, adding: int, max_bytes: int) -> None:
    """Before a glossary of `adding` bytes joins `count` glossaries of `stored_bytes`."""
    if count >= MAX_STORED_GLOSSARIES:
        raise PayloadTooLarge("glossaries: number stored", MAX_STORED_GLOSSARIES)
    if stored_bytes + adding > max_bytes:
        raise PayloadTooLarge("glossaries: bytes stored", max_bytes, stored_bytes + adding)


def _valid_id(glossary_id: str) -> bool:
    try:
        return str(uuid.UUID(glossary_id)) == glossary_id
    except ValueError:
        return False


class FileStore:
    """One JSON file per glossary, written whole and renamed into place: safe across processes."""

    def __init__(self, directory: Path, max_bytes: int = MAX_STORED_GLOSSARY_BYTES) -> None:
        self.directory = directory
        self.max_bytes = max_bytes

    def _path(self, glossary_id: str) -> Path:
        return self.directory / f"{glossary_id}.json"

    async def create(self, glossary: Glossary) -> None:
        await asyncio.to_thread(self._create, glossary)

    def _create(self, glossary: Glossary) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        data = json.dumps(asdict(glossary), ensure_ascii=False).encode()
        sizes = [_size(path) for path in self.directory.glob("*.json")]
        _check_room(len(sizes), sum(sizes), len(data), self.max_bytes)
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, self._path(glossary.glossary_id))

    async def get(self, glossary_id: str) -> Glossary | None:
        if not _valid_id(glossary_id):
            return None
        return await asyncio.to_thread(self._read, self._path(glossary_id))

    async def exists(self, glossary_id: str) -> bool:
        return _valid_id(glossary_id) and await asyncio.to_thread(self._path(glossary_id).is_file)

    @staticmethod
    def _read(path: Path) -> Glossary | None:
        try:
            return Glossary(**json.loads(path.read_text(encoding="utf-8")))
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
        try:
            await asyncio.to_thread(self._path(glossary_id).unlink)
        except FileNotFoundError:
            return False
        return True


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


class ValkeyStore:
    """Each glossary a JSON string at `glossary:<id>`, and their ids in the set `glossaries`."""

    _SET = "glossaries"

    def __init__(self, url: str, timeout_s: float = 2.0, max_bytes: int = MAX_STORED_GLOSSARY_BYTES) -> None:
        import redis.asyncio as redis

        self.max_bytes = max_bytes
        self._client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, decode_responses=True
        )

    async def create(self, glossary: Glossary) -> None:
        data = json.dumps(asdict(glossary), ensure_ascii=False)
        async with _reachable():
            ids = [i if isinstance(i, str) else i.decode() for i in await self._client.smembers(self._SET)]
            async with self._client.pipeline(transaction=False) as pipe:
                for glossary_id in ids:
                    pipe.strlen(f"glossary:{glossary_id}")
                sizes = await pipe.execute() if ids else []
            _check_room(len(ids), sum(sizes), len(data.encode()), self.max_bytes)
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(f"glossary:{glossary.glossary_id}", data)
                pipe.sadd(self._SET, glossary.glossary_id)
                await pipe.execute()

    async def get(self, glossary_id: str) -> Glossary | None:
        async with _reachable():
            if not _valid_id(glossary_id):
                return None
            raw = await self._client.get(f"glossary:{glossary_id}")
            return Glossary(**json.loads(raw)) if raw else None

    async def exists(self, glossary_id: str) -> bool:
        async with _reachable():
            return _valid_id(glossary_id) and bool(await self._client.exists(f"glossary:{glossary_id}"))

    async def list(self) -> list[Glossary]:
        async with _reachable():
            ids = sorted(i if isinstance(i, str) else i.decode() for i in await self._client.smembers(self._SET))
            values = await self._client.mget([f"glossary:{i}" for i in ids]) if ids else []
            return [Glossary(**json.loads(value)) for value in values if value]

    async def delete(self, glossary_id: str) -> bool:
        async with _reachable():
            if not _valid_id(glossary_id):
                return False
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(f"glossary:{glossary_id}")
                pipe.srem(self._SET, glossary_id)
                deleted, _ = await pipe.execute()
            return bool(deleted)


# Without a shared store: files in the server's own BentoML home (`glossaries/`), as its document
# jobs are, so that two servers on one machine (a test's, say) never see each other's glossaries.
def local_directory() -> Path:
    return state_directory("glossaries")


def store_for(shared_url: str | None, directory: Path | None = None) -> GlossaryStore:
    if shared_url:
        return ValkeyStore(shared_url)
    return FileStore(directory if directory is not None else local_directory())
