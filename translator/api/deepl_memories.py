"""DeepL's translation memories (#51): `GET /v3/translation_memories` (a page of them),
`GET|DELETE /v3/translation_memories/{id}` and `GET /v3/translation_memories/{id}/segments` (a page
of segments, cursor-based, filtered by text), in DeepL's shape, over the memories every API shares
(translator/memory/). deepl-python's `list_translation_memories`, `get_translation_memory`,
`list_translation_memory_segments`, `delete_translation_memory` and `translate_text(...,
translation_memory=...)` work against them. Memories are created and filled through the native
`/memories` routes (a TMX, PO, XLIFF, CSV or TSV file); DeepL's upload-URL import and export jobs
are not offered (a 403 that says so, as DeepL's other features this server lacks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from translator.api.deepl import answering
from translator.api.deepl_codes import to_deepl
from translator.api.deepl_params import NotOffered, one
from translator.api.params import read_params
from translator.contract.errors import InvalidRequest, TranslationError
from translator.memory.index import base_language
from translator.memory.model import MemoryInfo, Segment
from translator.memory.segments import key

MAX_PAGE_SIZE = 25
MAX_SEGMENTS_PAGE = 100
DEFAULT_SEGMENTS_PAGE = 50


class MemoryNotFound(TranslationError):
    status = 404

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"Translation memory not found: {memory_id[:100]!r}")


def _code(code: str) -> str:
    return to_deepl(base_language(code)).lower()


def deepl_info(info: MemoryInfo) -> dict[str, Any]:
    return {
        "translation_memory_id": info.memory_id,
        "name": info.name,
        "source_language": _code(info.source_lang),
        "target_languages": sorted({_code(code) for code in info.target_langs}),
        "segment_count": info.segment_count,
        "creation_time": info.created,
        "updated_time": info.updated,
    }


def _whole(params: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    raw = one(params, name)
    if raw is None or raw == "":
        return default
    if not str(raw).isdigit() or not low <= int(raw) <= high:
        raise InvalidRequest(f"Value for '{name}' not supported: a whole number from {low} to {high}.")
    return int(raw)


async def listing(request: Any, handler: Any) -> dict[str, Any]:
    params = await read_params(request)
    _only(params, ("page", "page_size"))
    page = _whole(params, "page", 0, 0, 1_000_000)
    size = _whole(params, "page_size", MAX_PAGE_SIZE, 1, MAX_PAGE_SIZE)
    memories = await handler.memories.list()
    return {
        "translation_memories": [deepl_info(info) for info in memories[page * size : (page + 1) * size]],
        "total_count": len(memories),
    }


async def _found(handler: Any, memory_id: str) -> MemoryInfo:
    info = await handler.memories.get(memory_id)
    if info is None:
        raise MemoryNotFound(memory_id)
    return info


async def one_memory(request: Any, handler: Any) -> Any:
    from starlette.responses import Response

    memory_id = request.path_params["translation_memory_id"]
    if request.method == "DELETE":
        if not await handler.memories.delete(memory_id):
            raise MemoryNotFound(memory_id)
        return Response(status_code=204)
    return deepl_info(await _found(handler, memory_id))


async def segments(request: Any, handler: Any) -> dict[str, Any]:
    """One page of the memory's sources with their translations, in the order first stored; a
    source's later translation into a language replaces its earlier one, as in matching. The cursor
    is the index of the page's first source."""
    memory_id = request.path_params["translation_memory_id"]
    info = await _found(handler, memory_id)
    params = await read_params(request)
    _only(params, ("page_size", "page_cursor", "filter_text", "filter_case_sensitive"))
    size = _whole(params, "page_size", DEFAULT_SEGMENTS_PAGE, 1, MAX_SEGMENTS_PAGE)
    cursor = one(params, "page_cursor") or "0"
    if not cursor.isdigit():
        raise InvalidRequest("Value for 'page_cursor' not supported: pass a response's next_page_cursor.")
    wanted = one(params, "filter_text")
    if wanted is not None and len(wanted) < 2:
        raise InvalidRequest("Value for 'filter_text' not supported: at least 2 characters.")
    exact_case = (one(params, "filter_case_sensitive") or "false").lower() == "true"
    grouped: dict[str, tuple[str, dict[str, Segment]]] = {}
    async for segment in handler.memories.segments(memory_id):
        source_key = key(segment.source)
        _, targets = grouped.setdefault(source_key, (segment.source, {}))
        targets[base_language(segment.target_lang)] = segment
    found = [(number, source, targets) for number, (source, targets) in enumerate(grouped.values())]
    if wanted is not None:
        fold = (lambda text: text) if exact_case else str.casefold
        needle = fold(wanted)
        found = [
            entry
            for entry in found
            if needle in fold(entry[1]) or any(needle in fold(s.target) for s in entry[2].values())
        ]
    start = int(cursor)
    page = found[start : start + size]
    body: dict[str, Any] = {
        "segments": [
            {
                "source_segment_id": f"s{number}",
                "source_text": source,
                "targets": [
                    {"target_segment_id": f"s{number}-{lang}", "target_language": _code(lang), "target_text": s.target}
                    for lang, s in sorted(targets.items())
                ],
            }
            for number, source, targets in page
        ],
        "segment_count": info.segment_count,
    }
    if start + size < len(found):
        body["next_page_cursor"] = str(start + size)
    return body


async def not_offered(request: Any, handler: Any) -> Any:
    raise NotOffered(
        "Translation memory import and export jobs",
        "memories are created and filled with POST /memories (a TMX, PO, XLIFF, CSV or TSV file) and "
        "exported with GET /memories/{id}/export",
    )


def _only(params: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """A listing's parameters are its own and the key's: another is a typo a client should hear of."""
    unknown = sorted(set(params) - {*allowed, "auth_key"})
    if unknown:
        raise InvalidRequest(f"Parameter '{unknown[0][:100]}' not supported.")


def routes(get_service: Callable[[], Any]) -> list[Any]:
    from starlette.routing import Route

    from translator.api.deepl import V3_PATHS

    def route(path: str, work: Any, methods: list[str]) -> Route:
        return Route(path, answering(get_service, work), methods=methods)

    base = "/translation_memories"
    return [
        r
        for v3 in V3_PATHS
        for r in (
            route(f"{v3}{base}", listing, ["GET"]),
            route(f"{v3}{base}/import", not_offered, ["POST"]),
            route(f"{v3}{base}/jobs/{{job_id}}", not_offered, ["GET"]),
            route(f"{v3}{base}/{{translation_memory_id}}", one_memory, ["GET", "DELETE"]),
            route(f"{v3}{base}/{{translation_memory_id}}/segments", segments, ["GET"]),
            route(f"{v3}{base}/{{translation_memory_id}}/export", not_offered, ["POST"]),
        )
    ]
