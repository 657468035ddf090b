"""What the translation-memory routes take and answer (#51), for the OpenAPI document: the native
`/memories` routes and DeepL's `/v3/translation_memories`. Merged into translator/api/operations.py's
table, which the document and its test read."""

from __future__ import annotations

from translator.api.operation_parts import FILE, Codes, Operation, Schema, object_, string

_INFO = object_(
    ["memoryId", "name", "sourceLang", "targetLangs", "segmentCount", "created", "updated"],
    memoryId=string(),
    name=string(),
    sourceLang=string(),
    targetLangs={"type": "array", "items": string()},
    segmentCount={"type": "integer"},
    created=string(),
    updated=string(),
)
_SEGMENTS = {
    "type": "array",
    "minItems": 1,
    "items": object_(
        ["source", "target", "targetLang"],
        source=string(minLength=1),
        target=string(minLength=1),
        targetLang=string(),
    ),
}
_IMPORTED = object_(
    ["segments", "skipped", "notes"],
    segments={"type": "integer"},
    skipped={"type": "integer"},
    notes={"type": "array", "items": string()},
)
_ADDED = {**_INFO, "properties": {**_INFO["properties"], "imported": _IMPORTED}}
_NOT_OFFERED = Operation("Not offered here: a 403 that says so (POST /memories imports)", status=403, answer=None)
_DEEPL_MEMORY = object_(
    ["translation_memory_id", "name", "source_language", "target_languages", "segment_count"],
    translation_memory_id=string(),
    name=string(),
    source_language=string(),
    target_languages={"type": "array", "items": string()},
    segment_count={"type": "integer"},
    creation_time=string(),
    updated_time=string(),
)


def _new_memory(codes: Codes) -> Schema:
    """As JSON: a name, the source language, segments if any; as a form, a `file` beside them."""
    return object_(
        ["name", "sourceLang"],
        name=string(minLength=1, maxLength=200),
        sourceLang=string(enum=codes.languages),
        targetLang=string(enum=codes.languages),
        segments=_SEGMENTS,
        file=FILE,
    )


def _new_segments(codes: Codes) -> Schema:
    return object_([], segments=_SEGMENTS, targetLang=string(enum=codes.languages), file=FILE)


def _page_query(codes: Codes) -> dict[str, Schema]:
    return {"page": {"type": "integer", "minimum": 0}, "page_size": {"type": "integer", "minimum": 1, "maximum": 25}}


def _segments_query(codes: Codes) -> dict[str, Schema]:
    return {
        "page_size": {"type": "integer", "minimum": 1, "maximum": 100},
        "page_cursor": string(),
        "filter_text": string(minLength=2),
        "filter_case_sensitive": string(enum=["true", "false"]),
    }


MEMORY_OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/memories"): Operation(
        "Store a translation memory, from segments or a TMX, PO, XLIFF, CSV or TSV file",
        body=_new_memory,
        status=201,
        answer=_ADDED,
        errors=(413,),
    ),
    ("GET", "/memories"): Operation("The stored translation memories"),
    ("GET", "/memories/{memory_id}"): Operation("A translation memory", answer=_INFO),
    ("DELETE", "/memories/{memory_id}"): Operation("Delete a translation memory", status=204, answer=None),
    ("POST", "/memories/{memory_id}/segments"): Operation(
        "Add segments to a memory, or a file's", body=_new_segments, answer=_ADDED, errors=(413,)
    ),
    ("GET", "/memories/{memory_id}/export"): Operation(
        "A memory as TMX 1.4b", answer=string(), answer_type="application/x-tmx+xml"
    ),
    # DeepL's (also under /deepl)
    ("GET", "/v3/translation_memories"): Operation("Translation memories (DeepL)", query=_page_query),
    ("GET", "/v3/translation_memories/{translation_memory_id}"): Operation(
        "A translation memory (DeepL)", answer=_DEEPL_MEMORY
    ),
    ("DELETE", "/v3/translation_memories/{translation_memory_id}"): Operation(
        "Delete a translation memory (DeepL)", status=204, answer=None
    ),
    ("GET", "/v3/translation_memories/{translation_memory_id}/segments"): Operation(
        "A page of a translation memory's segments (DeepL)", query=_segments_query
    ),
    # DeepL's upload-URL import and export jobs: memories are filled through POST /memories.
    ("POST", "/v3/translation_memories/import"): _NOT_OFFERED,
    ("GET", "/v3/translation_memories/jobs/{job_id}"): _NOT_OFFERED,
    ("POST", "/v3/translation_memories/{translation_memory_id}/export"): _NOT_OFFERED,
}
