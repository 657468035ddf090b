"""What each route of translator/api/routes.py takes and answers, for the OpenAPI document
(translator/api/openapi.py): its parameters (JSON or form, as the route reads them through
translator/api/params.py), its success answer, and the errors it adds to the ones every route of its
API may answer. Keyed by method and path as the routes declare them; DeepL's routes once, without
the `/deepl` prefix they also answer under. A route without a declaration here fails
tests/unit/test_openapi.py, so the document cannot silently miss one.

Language parameters are the loaded model's codes (`languages`), as enums: a client generated from
the document offers exactly what the server takes.
"""

from __future__ import annotations

from translator.api.memory_operations import MEMORY_OPERATIONS
from translator.api.operation_parts import FILE as _FILE
from translator.api.operation_parts import KEY as _KEY
from translator.api.operation_parts import Codes, Operation, Schema
from translator.api.operation_parts import object_ as _object
from translator.api.operation_parts import optional as _optional
from translator.api.operation_parts import string as _string
from translator.api.operation_parts import texts as _texts
from translator.contract import limits

_JOB = _object(
    ["id", "status", "filename", "progress", "resultUrl"],
    id=_string(),
    status=_string(enum=["queued", "running", "done", "failed"]),
    filename=_string(),
    progress=_object(["done", "total"], done={"type": "integer"}, total={"type": "integer"}),
    resultUrl=_string(),
    detectedLanguage=_string(),
    error=_string(),
    warning=_string(),
    untranslated=_object(["count", "where"], count={"type": "integer"}, where={"type": "array", "items": _string()}),
    translationMemory=_string(),
    memoryHits={"type": "integer"},
    learned={"type": "integer"},
)
_GLOSSARY_ENTRIES = {"type": "array", "items": _object(["source", "target"], source=_string(), target=_string())}
_LT_LANGUAGES = {
    "type": "array",
    "items": _object(["code", "name", "targets"], code=_string(), name=_string(), targets={"type": "array"}),
}
_DEEPL_GLOSSARY = _object(["glossary_id", "name"], glossary_id=_string(), name=_string())
_NOT_OFFERED = Operation("Not offered here (DeepL's LLM features): a 403 that says so", status=403, answer=None)


def _native_documents(codes: Codes) -> Schema:
    return _object(
        ["fromLang", "toLang"],
        fromLang=_string(enum=["auto", *codes.languages]),
        toLang=_string(enum=codes.languages),
        glossaryId=_string(),
        encoding=_string(),
        translationMemory=_string(maxLength=100),
        memoryLearn=_string(enum=["true", "false"]),
    )


def _new_glossary(codes: Codes) -> Schema:
    return _object(
        ["name", "source_lang", "target_lang", "entries"],
        name=_string(minLength=1),
        source_lang=_string(enum=codes.languages),
        target_lang=_string(enum=codes.languages),
        entries={**_GLOSSARY_ENTRIES, "minItems": 1},
    )


def _lt_translate(codes: Codes) -> Schema:
    return _object(
        ["q", "source", "target"],
        q=_texts(),
        source=_string(enum=["auto", *codes.languages]),
        target=_string(enum=codes.languages),
        format=_optional(_string(enum=["text", "html"])),
        # Up to the server's MAX_ALTERNATIVES; more is taken as that many, as LibreTranslate does.
        alternatives={"type": "integer"},
        translation_memory=_optional(_string(maxLength=100)),
        api_key=_KEY,
    )


def _lt_file(codes: Codes) -> Schema:
    return _object(
        ["source", "target"],
        source=_string(enum=["auto", *codes.languages]),
        target=_string(enum=codes.languages),
        translation_memory=_optional(_string(maxLength=100)),
        api_key=_KEY,
    )


def _deepl_translate(codes: Codes) -> Schema:
    text = _string(minLength=1, maxLength=limits.MAX_CHARS_PER_RECORD)
    return _object(
        ["text", "target_lang"],
        text={
            "oneOf": [
                text,
                {"type": "array", "items": text, "minItems": 1, "maxItems": limits.MAX_RECORDS_PER_REQUEST},
            ]
        },
        target_lang=_string(enum=codes.deepl_targets),
        source_lang=_optional(_string(enum=codes.deepl_sources)),
        formality=_optional(_string(enum=["default", "prefer_more", "prefer_less"])),
        # JSON clients send booleans or numbers for 0 and 1.
        split_sentences=_optional(
            {"anyOf": [_string(enum=["0", "1", "nonewlines"]), {"type": "boolean"}, {"enum": [0, 1]}]}
        ),
        tag_handling=_optional(_string(enum=["html", "xml"])),
        glossary_id=_optional(_string()),
        translation_memory_id=_optional(_string()),
        translation_memory_threshold=_optional({"type": "integer", "minimum": 0, "maximum": 100}),
        auth_key=_KEY,
    )


def _deeplx(codes: Codes) -> Schema:
    return _object(
        ["text", "target_lang"],
        text=_string(minLength=1, maxLength=limits.MAX_CHARS_PER_RECORD),
        source_lang=_optional(_string(enum=codes.deepl_sources)),
        target_lang=_string(enum=codes.deepl_targets),
    )


def _dictionary(codes: Codes) -> Schema:
    return _object(
        ["source_lang", "target_lang", "entries", "entries_format"],
        source_lang=_string(enum=codes.deepl_sources),
        target_lang=_string(enum=codes.deepl_sources),
        entries=_string(minLength=3),
        entries_format=_string(enum=["tsv", "csv"]),
    )


def _deepl_v2_glossary(codes: Codes) -> Schema:
    """A v2 glossary is one dictionary with a name."""
    dictionary = _dictionary(codes)
    return _object(["name", *dictionary["required"]], name=_string(minLength=1), **dictionary["properties"])


def _deepl_v3_glossary(codes: Codes) -> Schema:
    return _object(
        ["name", "dictionaries"],
        name=_string(minLength=1),
        dictionaries={"type": "array", "items": _dictionary(codes), "minItems": 1, "maxItems": 1},
    )


def _deepl_document(codes: Codes) -> Schema:
    return _object(
        ["target_lang"],
        target_lang=_string(enum=codes.deepl_targets),
        source_lang=_string(enum=codes.deepl_sources),
        translation_memory_id=_string(),
        glossary_id=_string(),
        auth_key=_KEY,
    )


def _document_key(codes: Codes) -> Schema:
    return _object(["document_key"], document_key=_string(minLength=1), auth_key=_KEY)


def _entries_query(codes: Codes) -> dict[str, Schema]:
    return {"source_lang": _string(enum=codes.deepl_sources), "target_lang": _string(enum=codes.deepl_sources)}


def _languages_query(codes: Codes) -> dict[str, Schema]:
    return {"type": _string(enum=["source", "target"])}


_DEEPL_TRANSLATIONS = _object(
    ["translations"],
    translations={
        "type": "array",
        "items": _object(["detected_source_language", "text"], detected_source_language=_string(), text=_string()),
    },
)

# (method, path) -> what it takes and answers. HEAD is GET's, OPTIONS a CORS preflight (204).
OPERATIONS: dict[tuple[str, str], Operation] = {
    ("GET", "/languages"): Operation("The model's languages, their names, and what `auto` detects"),
    ("POST", "/glossaries"): Operation("Store a glossary", body=_new_glossary, status=201),
    ("GET", "/glossaries"): Operation("The stored glossaries"),
    ("GET", "/glossaries/{glossary_id}"): Operation("A glossary with its entries"),
    ("DELETE", "/glossaries/{glossary_id}"): Operation("Delete a glossary", status=204, answer=None),
    ("POST", "/documents"): Operation(
        "Translate a file in the background: a job", body=_native_documents, upload=True, status=202, answer=_JOB
    ),
    ("GET", "/documents/{job}"): Operation("A document job's state", answer=_JOB),
    ("GET", "/documents/{job}/result"): Operation(
        "A done job's translated file", answer=_FILE, answer_type="application/octet-stream", errors=(409,)
    ),
    # LibreTranslate's API
    ("POST", "/libretranslate/translate"): Operation("Translate (LibreTranslate)", body=_lt_translate),
    ("POST", "/libretranslate/detect"): Operation(
        "Detect the language (LibreTranslate)",
        body=lambda c: _object(["q"], q=_texts(max_length=limits.MAX_CHARS_PER_REQUEST, min_length=0), api_key=_KEY),
        answer={"type": "array"},
    ),
    ("GET", "/libretranslate/languages"): Operation("Languages (LibreTranslate)", answer=_LT_LANGUAGES),
    ("POST", "/libretranslate/languages"): Operation("Languages (LibreTranslate)", answer=_LT_LANGUAGES),
    ("GET", "/libretranslate/frontend/settings"): Operation("LibreTranslate's front-end settings"),
    ("GET", "/libretranslate/health"): Operation("LibreTranslate's health check"),
    ("POST", "/libretranslate/translate_file"): Operation(
        "Translate a file and wait (LibreTranslate)", body=_lt_file, upload=True
    ),
    ("GET", "/libretranslate/download_file/{name}"): Operation(
        "A translated file (LibreTranslate)", answer=_FILE, answer_type="application/octet-stream"
    ),
    # DeepL's API, v2 and v3 (also under /deepl)
    ("POST", "/v2/translate"): Operation("Translate (DeepL)", body=_deepl_translate, answer=_DEEPL_TRANSLATIONS),
    ("GET", "/v2/translate"): Operation(
        "Translate (DeepL), parameters in the query string",
        query=lambda c: (
            {k: v for k, v in _deepl_translate(c)["properties"].items() if k != "text"}
            | {"text": _string(minLength=1, maxLength=limits.MAX_CHARS_PER_RECORD)}
        ),
        query_required=("text", "target_lang"),
        answer=_DEEPL_TRANSLATIONS,
    ),
    ("GET", "/v2/languages"): Operation("Languages (DeepL)", query=_languages_query, answer={"type": "array"}),
    ("POST", "/v2/languages"): Operation("Languages (DeepL)", answer={"type": "array"}),
    ("GET", "/v2/usage"): Operation("Usage (DeepL): not metered here"),
    ("POST", "/v2/usage"): Operation("Usage (DeepL): not metered here"),
    ("GET", "/v2/glossary-language-pairs"): Operation("Glossary language pairs (DeepL)"),
    ("POST", "/v2/glossaries"): Operation(
        "Create a glossary (DeepL v2)", body=_deepl_v2_glossary, status=201, answer=_DEEPL_GLOSSARY
    ),
    ("GET", "/v2/glossaries"): Operation("Glossaries (DeepL v2)"),
    ("GET", "/v2/glossaries/{glossary_id}"): Operation("A glossary (DeepL v2)", answer=_DEEPL_GLOSSARY),
    ("DELETE", "/v2/glossaries/{glossary_id}"): Operation("Delete a glossary (DeepL v2)", status=204, answer=None),
    ("GET", "/v2/glossaries/{glossary_id}/entries"): Operation(
        "A glossary's entries, TSV (DeepL v2)", answer=_string(), answer_type="text/tab-separated-values"
    ),
    ("POST", "/v3/glossaries"): Operation(
        "Create a glossary of dictionaries (DeepL v3)", body=_deepl_v3_glossary, status=201, answer=_DEEPL_GLOSSARY
    ),
    ("GET", "/v3/glossaries"): Operation("Glossaries (DeepL v3)"),
    ("GET", "/v3/glossaries/{glossary_id}"): Operation("A glossary (DeepL v3)", answer=_DEEPL_GLOSSARY),
    ("DELETE", "/v3/glossaries/{glossary_id}"): Operation("Delete a glossary (DeepL v3)", status=204, answer=None),
    ("PATCH", "/v3/glossaries/{glossary_id}"): Operation(
        "Rename a glossary or merge dictionaries into it (DeepL v3)",
        body=lambda c: {
            "type": "object",
            "minProperties": 1,
            "properties": {
                "name": _string(minLength=1),
                "dictionaries": {"type": "array", "items": _dictionary(c), "minItems": 1, "maxItems": 1},
            },
        },
        answer=_DEEPL_GLOSSARY,
    ),
    ("PUT", "/v3/glossaries/{glossary_id}/dictionaries"): Operation(
        "Replace a dictionary (DeepL v3)", body=_dictionary
    ),
    ("DELETE", "/v3/glossaries/{glossary_id}/dictionaries"): Operation(
        "Delete a dictionary (DeepL v3)",
        query=_entries_query,
        query_required=("source_lang", "target_lang"),
        status=204,
        answer=None,
    ),
    ("GET", "/v3/glossaries/{glossary_id}/entries"): Operation(
        "A dictionary's entries (DeepL v3)", query=_entries_query, query_required=("source_lang", "target_lang")
    ),
    ("POST", "/v2/document"): Operation(
        "Upload a document to translate (DeepL)",
        body=_deepl_document,
        upload=True,
        answer=_object(["document_id", "document_key"], document_id=_string(), document_key=_string()),
    ),
    ("POST", "/v2/document/{document_id}"): Operation("A document's status (DeepL)", body=_document_key),
    ("POST", "/v2/document/{document_id}/result"): Operation(
        "A translated document, once (DeepL)",
        body=_document_key,
        answer=_FILE,
        answer_type="application/octet-stream",
        errors=(503,),
    ),
    ("POST", "/deepl/translate"): Operation(
        "Translate (DeepLX's shape, for zotero-pdf-translate)",
        body=_deeplx,
        answer=_object(["code", "data"], code={"type": "integer"}, data=_string()),
    ),
    # The page for people
    ("GET", "/ui"): Operation("The translation page", answer=_string(), answer_type="text/html"),
    ("GET", "/ui/"): Operation("The translation page", answer=_string(), answer_type="text/html"),
    ("GET", "/ui/settings"): Operation("The page's settings: languages, names, file formats"),
    ("GET", "/ui/app.js"): Operation("The page's script", answer=_string(), answer_type="text/javascript"),
    ("GET", "/ui/style.css"): Operation("The page's style", answer=_string(), answer_type="text/css"),
    ("GET", "/ui/docs.js"): Operation(
        "The documentation page's script", answer=_string(), answer_type="text/javascript"
    ),
}
OPERATIONS.update(MEMORY_OPERATIONS)
# DeepL's LLM features: any method of these paths is DeepL's 403 for a plan without them.
NOT_OFFERED_PATHS = (
    "/v2/write/rephrase",
    "/v2/write/correct",
    "/v3/style_rules",
    "/v3/style_rules/{rest}",
)


def operation(method: str, path: str) -> Operation | None:
    """The declaration of a route's method; DeepL's paths under /deepl as at the root."""
    if path.startswith("/deepl/v"):
        path = path[len("/deepl") :]
    if path in NOT_OFFERED_PATHS:
        return _NOT_OFFERED
    return OPERATIONS.get((method, path))
