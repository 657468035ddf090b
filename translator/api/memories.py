"""Translation memories on the native API (#51): `/memories` (create, list), `/memories/{id}` (get,
delete), `/memories/{id}/segments` (add: a file people have, or segments as JSON) and
`/memories/{id}/export` (TMX).

A file is TMX, PO/POT, XLIFF 1.2/2.0, CSV or TSV (translator/memory/files.py reads them, with the
documents' bounds and clear refusals); what it held that is not a translation people made (an
untranslated or fuzzy entry, a unit without the memory's source language) is skipped and counted in
the answer's `imported`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from translator.contract import limits
from translator.contract.errors import InvalidRequest, validation_message
from translator.memory.index import base_language
from translator.memory.model import (
    MAX_NAME_CHARS,
    MAX_SEGMENT_CHARS,
    MAX_SEGMENTS_PER_IMPORT,
    Imported,
    MemoryInfo,
    Segment,
)
from translator.memory.requests import MemoryNotFound

TMX_TYPE = "application/x-tmx+xml"


def native_info(info: MemoryInfo) -> dict[str, Any]:
    return {
        "memoryId": info.memory_id,
        "name": info.name,
        "sourceLang": info.source_lang,
        "targetLangs": list(info.target_langs),
        "segmentCount": info.segment_count,
        "created": info.created,
        "updated": info.updated,
    }


class NewSegment(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    source: str = Field(min_length=1, max_length=MAX_SEGMENT_CHARS)
    target: str = Field(min_length=1, max_length=MAX_SEGMENT_CHARS)
    target_lang: str = Field(alias="targetLang", min_length=1, max_length=20)


class NewSegments(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    segments: list[NewSegment] = Field(min_length=1, max_length=MAX_SEGMENTS_PER_IMPORT)


class NewMemory(BaseModel):
    """`POST /memories` as JSON; as a form, the same fields beside a `file`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    source_lang: str = Field(alias="sourceLang", min_length=1, max_length=20)
    segments: list[NewSegment] = Field(default_factory=list, max_length=MAX_SEGMENTS_PER_IMPORT)


def imported_body(imported: Imported) -> dict[str, Any]:
    return {"segments": len(imported.segments), "skipped": imported.skipped, "notes": imported.notes}


class MemoryFiles:
    """What a memory route reads from a request: JSON, or a form with a `file` part."""

    def __init__(self, languages: frozenset[str], canonical: Callable[[str], str]) -> None:
        self.languages = languages
        self.canonical = canonical

    def language(self, code: str | None, field: str) -> str:
        if not code:
            raise InvalidRequest(f"{field}: required", field=field)
        if code not in self.languages:
            raise InvalidRequest(f"{field}: unsupported language code {code!r}", field=field)
        return self.canonical(code)

    def target(self, code: str, field: str) -> str:
        """A segment's language: a model's code, or one with a region as files write them (`ja-JP`)."""
        if code not in self.languages and base_language(code) in self.languages:
            return code
        return self.language(code, field)

    def segments(self, items: list[NewSegment], source_lang: str, field: str = "segments") -> Imported:
        imported = Imported(source_lang)
        for index, item in enumerate(items):
            target = self.target(item.target_lang, f"{field}.{index}.targetLang")
            if base_language(target) == base_language(source_lang):
                raise InvalidRequest(f"{field}.{index}.targetLang: the memory's source language", field=field)
            imported.segments.append(Segment(item.source, target, item.target))
        return imported

    def file(self, upload_name: str, data: bytes, source_lang: str, target_lang: str | None) -> Imported:
        from translator.memory.files import read_memory_file

        if not data:
            raise InvalidRequest("file: empty (0 bytes)", field="file")
        imported = read_memory_file(upload_name, data, source_lang, target_lang)
        if base_language(imported.source_lang) != base_language(source_lang):
            raise InvalidRequest(
                f"file: its source language is {imported.source_lang!r}, the memory's {source_lang!r}", field="file"
            )
        return imported


async def read_request(request: Any) -> tuple[dict[str, Any], tuple[str, bytes] | None]:
    """The body's fields (JSON, or a form's text fields) and its `file` part, if any, as (name, bytes)."""
    content_type = str(request.headers.get("content-type", "")).split(";")[0].strip().lower()
    if content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        try:
            form = await request.form(max_files=1, max_fields=20, max_part_size=limits.MAX_BODY_BYTES)
        except Exception as exc:  # malformed multipart: python-multipart's and Starlette's errors
            raise InvalidRequest(f"the form could not be read ({str(exc)[:200]})") from exc
        fields = {key: value for key, value in form.items() if isinstance(value, str)}
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            return fields, None
        return fields, (upload.filename or "", await upload.read())
    body = await request.body()
    try:
        import json

        data = json.loads(body) if body.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise InvalidRequest(f"the body is not valid JSON ({str(exc)[:200]})") from exc
    if not isinstance(data, dict):
        raise InvalidRequest("the JSON body must be an object")
    return data, None


def _model(model: type[BaseModel], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequest(validation_message(exc.errors())) from None


def routes(get_service: Callable[[], Any]) -> list[Any]:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from translator.api.endpoints import NATIVE, endpoint

    def guarded(work: Callable[[Request, Any], Any]) -> Callable[[Request], Any]:
        """Its errors as the native API's; its key was checked by the edge (translator/api/access.py)."""
        return endpoint(NATIVE, lambda request: work(request, get_service().handler))

    def files(handler: Any) -> MemoryFiles:
        return MemoryFiles(handler.languages, handler.canonical)

    def imported(fields: dict[str, Any], upload: tuple[str, bytes] | None, handler: Any, source: str) -> Imported:
        reader = files(handler)
        if upload is None:
            return reader.segments(_model(NewSegments, fields).segments, source)
        target = fields.get("targetLang")
        return reader.file(upload[0], upload[1], source, reader.language(target, "targetLang") if target else None)

    async def create(request: Request, handler: Any) -> Response:
        fields, upload = await read_request(request)
        body = _model(NewMemory, {key: value for key, value in fields.items() if key != "targetLang"})
        source = files(handler).language(body.source_lang, "sourceLang")
        if upload is not None or body.segments:
            found = imported(fields if upload else {"segments": fields["segments"]}, upload, handler, source)
        else:
            found = Imported(source)
        info = await handler.memories.create(body.name, source)
        if found.segments:
            info = await handler.memories.add(info.memory_id, found.segments) or info
        return JSONResponse({**native_info(info), "imported": imported_body(found)}, status_code=201)

    async def listing(request: Request, handler: Any) -> Response:
        return JSONResponse({"memories": [native_info(info) for info in await handler.memories.list()]})

    async def one(request: Request, handler: Any) -> Response:
        memory_id = request.path_params["memory_id"]
        if request.method == "DELETE":
            if not await handler.memories.delete(memory_id):
                raise MemoryNotFound(memory_id, "memory_id")
            return Response(status_code=204)
        return JSONResponse(native_info(await _found(handler, memory_id)))

    async def add(request: Request, handler: Any) -> Response:
        memory_id = request.path_params["memory_id"]
        info = await _found(handler, memory_id)
        fields, upload = await read_request(request)
        found = imported(fields, upload, handler, info.source_lang)
        changed = await handler.memories.add(memory_id, found.segments) if found.segments else info
        if changed is None:
            raise MemoryNotFound(memory_id, "memory_id")
        return JSONResponse({**native_info(changed), "imported": imported_body(found)})

    async def export(request: Request, handler: Any) -> Response:
        from translator.memory.tmx import write_tmx

        memory_id = request.path_params["memory_id"]
        info = await _found(handler, memory_id)
        segments = [segment async for segment in handler.memories.segments(memory_id)]
        data = write_tmx(info.name, info.source_lang, segments)
        disposition = f'attachment; filename="{memory_id}.tmx"'
        return Response(data, media_type=TMX_TYPE, headers={"Content-Disposition": disposition})

    return [
        Route("/memories", guarded(create), methods=["POST"]),
        Route("/memories", guarded(listing), methods=["GET"]),
        Route("/memories/{memory_id}", guarded(one), methods=["GET", "DELETE"]),
        Route("/memories/{memory_id}/segments", guarded(add), methods=["POST"]),
        Route("/memories/{memory_id}/export", guarded(export), methods=["GET"]),
    ]


async def _found(handler: Any, memory_id: str) -> MemoryInfo:
    info = await handler.memories.get(memory_id)
    if info is None:
        raise MemoryNotFound(memory_id, "memory_id")
    return info
