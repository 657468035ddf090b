"""Stored glossaries (#33): create, list, get, delete; and the terms a request asks for.

Where they are kept: in the shared Valkey or Redis when the sentence cache has one
(`translation.cache.url`), so every replica sees the same glossaries; otherwise in files in the
server's BENTOML_HOME (`glossaries/`), shared by the API workers of one replica (in the deployment
an emptyDir: lost with the pod). A
glossary is immutable once created, as DeepL's are: to change one, create another and delete the
old one.

The native routes are `/glossaries` and `/glossaries/{id}`; translator/contract/glossary.py holds
the entries' shape and limits, translator/text/glossary.py the matching.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import cachetools
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from translator.config import state_directory
from translator.contract.errors import (
    InvalidRequest,
    PayloadTooLarge,
    TranslationError,
    Unavailable,
    validation_message,
)
from translator.contract.glossary import (
    MAX_ENTRIES,
    MAX_NAME_CHARS,
    MAX_STORED_GLOSSARIES,
    MAX_STORED_GLOSSARY_BYTES,
    GlossaryEntry,
    entries_list,
    entries_map,
)
from translator.contract.schemas import Payload
from translator.text.glossary import Terms


class GlossaryNotFound(TranslationError):
    status = 404

    def __init__(self, glossary_id: str, field: str = "glossaryId") -> None:
        super().__init__(f"{field}: no glossary {glossary_id[:100]!r}", field=field)


class GlossaryMismatch(InvalidRequest):
    pass


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


# Stored glossaries' Terms (each compiles its matcher once, on first use), by id and spelled pair.
_COMPILED: cachetools.LRUCache[tuple[str, str, str], Terms] = cachetools.LRUCache(maxsize=64)


def _same(code: str) -> str:
    return code


async def request_terms(
    payload: Payload, store: GlossaryStore, canonical: Callable[[str], str] = _same
) -> Terms | None:
    """The glossary a translation request asks for (inline or stored), checked against its languages.
    `canonical` gives one spelling per language (an NLLB checkpoint takes `en` and `eng_Latn` alike):
    a stored pair is kept in that spelling and a request's codes are compared in it."""
    if payload.glossary is not None and payload.glossary_id is not None:
        raise InvalidRequest("payload.glossary: give either glossary or glossaryId, not both", field="payload.glossary")
    if payload.glossary is not None:
        if payload.from_lang == "auto":
            raise InvalidRequest(
                "payload.glossary: an inline glossary needs fromLang (not 'auto'); a stored one (glossaryId) "
                "applies to the records detected in its source language",
                field="payload.glossary",
            )
        entries = entries_map(payload.glossary.entries, "payload.glossary.entries")
        return Terms(payload.from_lang, payload.to_lang, entries)
    if payload.glossary_id is None:
        return None
    return await stored_terms(
        payload.glossary_id, payload.from_lang, payload.to_lang, store, canonical, field="payload.glossaryId"
    )


async def stored_terms(
    glossary_id: str,
    from_lang: str,
    to_lang: str,
    store: GlossaryStore,
    canonical: Callable[[str], str] = _same,
    field: str = "glossaryId",
) -> Terms:
    """A stored glossary's terms for `from_lang` (or auto) -> `to_lang`: 404 when there is no such
    glossary, 400 when it is for another pair; `field` is how the caller's API names the id."""
    glossary = await store.get(glossary_id)
    if glossary is None:
        raise GlossaryNotFound(glossary_id, field)
    source, target = canonical(from_lang), canonical(to_lang)
    if canonical(glossary.target_lang) != target or source not in ("auto", canonical(glossary.source_lang)):
        raise GlossaryMismatch(
            f"{field}: glossary {glossary.glossary_id!r} is for {glossary.source_lang} -> "
            f"{glossary.target_lang}, the request asks for {from_lang} -> {to_lang}",
            field=field,
        )
    # In the request's own spelling, which the plan compares with; detection answers listed codes.
    source_code = canonical(glossary.source_lang) if from_lang == "auto" else from_lang
    key = (glossary.glossary_id, source_code, to_lang)
    terms = _COMPILED.get(key)
    if terms is None:  # a stored glossary never changes: its matcher is compiled once, not per request
        terms = _COMPILED[key] = Terms(source_code, to_lang, glossary.entries)
    return terms


class NewGlossary(BaseModel):
    """`POST /glossaries`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    source_lang: str = Field(alias="sourceLang", min_length=1, max_length=20)
    target_lang: str = Field(alias="targetLang", min_length=1, max_length=20)
    entries: list[GlossaryEntry] = Field(min_length=1, max_length=MAX_ENTRIES)


def check_pair(
    source_lang: str,
    target_lang: str,
    supported: frozenset[str],
    prefix: str = "",
    canonical: Callable[[str], str] = _same,
) -> None:
    for field, code in ((f"{prefix}sourceLang", source_lang), (f"{prefix}targetLang", target_lang)):
        if code not in supported:
            raise InvalidRequest(f"{field}: unsupported language code {code!r}", field=field)
    if canonical(source_lang) == canonical(target_lang):  # `en` and `eng_Latn` are one language
        raise InvalidRequest(f"{prefix}targetLang: the same as sourceLang", field=f"{prefix}targetLang")


async def found_or_deleted(request: Any, store: GlossaryStore) -> Glossary | None:
    """The route of one glossary, on either API: GET finds it, DELETE deletes it (None); an unknown
    id is a 404 either way."""
    glossary_id = request.path_params["glossary_id"]
    if request.method == "DELETE":
        if not await store.delete(glossary_id):
            raise GlossaryNotFound(glossary_id, "glossary_id")
        return None
    glossary = await store.get(glossary_id)
    if glossary is None:
        raise GlossaryNotFound(glossary_id, "glossary_id")
    return glossary


def routes(get_service: Callable[[], Any]) -> list[Any]:
    """The native glossary routes; the service's handler holds the store and the languages."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from translator.api.auth import api_keys, keys_problem
    from translator.contract.errors import Unavailable, http_response

    def guarded(work: Callable[[Request, Any], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            if keys_problem() is not None:  # keys asked for but not given: closed, as the middleware is
                return http_response(Unavailable("API keys are misconfigured on this server"))
            keys = api_keys()
            refusal = keys.refusal(request.scope["headers"]) if keys is not None else None
            if refusal is not None:
                return http_response(refusal)
            try:
                return await work(request, get_service().handler)
            except TranslationError as exc:
                return http_response(exc)

        return endpoint

    async def create(request: Request, handler: Any) -> Response:
        try:
            body = NewGlossary.model_validate_json(await request.body())
        except ValidationError as exc:
            return http_response(InvalidRequest(validation_message(exc.errors())))
        check_pair(body.source_lang, body.target_lang, handler.languages, canonical=handler.canonical)
        source, target = handler.canonical(body.source_lang), handler.canonical(body.target_lang)
        glossary = new_glossary(body.name, source, target, entries_map(body.entries, "entries"))
        await handler.glossaries.create(glossary)
        return JSONResponse({**glossary.info(), "entries": entries_list(glossary.entries)}, status_code=201)

    async def listing(request: Request, handler: Any) -> Response:
        return JSONResponse({"glossaries": [g.info() for g in await handler.glossaries.list()]})

    async def one(request: Request, handler: Any) -> Response:
        glossary = await found_or_deleted(request, handler.glossaries)
        if glossary is None:
            return Response(status_code=204)
        return JSONResponse({**glossary.info(), "entries": entries_list(glossary.entries)})

    return [
        Route("/glossaries", guarded(create), methods=["POST"]),
        Route("/glossaries", guarded(listing), methods=["GET"]),
        Route("/glossaries/{glossary_id}", guarded(one), methods=["GET", "DELETE"]),
    ]
