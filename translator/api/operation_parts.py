"""The pieces operation declarations are made of (translator/api/operations.py, and each API's own
table beside it): an operation's shape, the model's codes, and small JSON Schema builders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from translator.contract import limits

Schema = dict[str, Any]


@dataclass(frozen=True)
class Operation:
    summary: str
    # The body's fields (a JSON object, or a form with the same names); None: no body.
    body: Callable[[Codes], Schema] | None = None
    # A multipart upload (a `file` part beside the fields) rather than JSON or a URL-encoded form.
    upload: bool = False
    # The query string's parameters (GET), each a schema, by name; those it cannot go without.
    query: Callable[[Codes], dict[str, Schema]] | None = None
    query_required: tuple[str, ...] = ()
    status: int = 200
    answer: Schema | None = field(default_factory=lambda: {"type": "object"})
    answer_type: str = "application/json"
    errors: tuple[int, ...] = ()


@dataclass(frozen=True)
class Codes:
    """The codes a request may name: the model's, and DeepL's for it."""

    languages: list[str]
    deepl_sources: list[str]
    deepl_targets: list[str]


def string(**extra: Any) -> Schema:
    return {"type": "string", **extra}


def texts(max_length: int = limits.MAX_CHARS_PER_RECORD, min_length: int = 1) -> Schema:
    """One text (not empty), or a list of them (where an empty one is answered empty)."""
    text = string(minLength=min_length, maxLength=max_length)
    item = string(maxLength=max_length)
    return {
        "oneOf": [text, {"type": "array", "items": item, "minItems": 1, "maxItems": limits.MAX_RECORDS_PER_REQUEST}]
    }


def optional(schema: Schema) -> Schema:
    """An optional parameter that may also be sent as null or empty (auto-detection, for a source
    language)."""
    return {"anyOf": [schema, {"type": "null"}, {"const": ""}]}


# The API key in the body or the query string (LibreTranslate's `api_key`, DeepL's `auth_key`):
# checked by the edge where keys are on, not read where they are off, whatever its type.
KEY: Schema = {"description": "the API key, where the server asks for one"}


def object_(required: list[str], **properties: Schema) -> Schema:
    return {"type": "object", "required": required, "properties": properties}


FILE = {"type": "string", "format": "binary"}
