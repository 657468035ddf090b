"""DeepL's parameters, checked as DeepL checks them (#33, #44): the values it documents for each,
the languages and options of a translation of text or of a document, the features it offers that
this server does not (a 403 that names them), and glossary entries in DeepL's TSV and CSV.

Apart from translator/api/deepl.py, which serves the routes: these are pure functions of a request's
parameters, shared by its translate, glossary (deepl_glossaries.py) and document
(deepl_documents.py) routes, and tested without a server.
"""

from __future__ import annotations

import csv
from typing import Any

from pydantic import ValidationError

from translator.api.deepl_codes import to_iso
from translator.contract.errors import Forbidden, InvalidRequest, validation_message
from translator.contract.glossary import MAX_TERM_CHARS, GlossaryEntry, entries_map
from translator.text.langdetect import AUTO

TAG_HANDLING = ("html", "xml")
TAG_HANDLING_VERSIONS = ("v1", "v2")
FORMALITY = ("default", "more", "less", "prefer_more", "prefer_less")
# What DeepL takes for a target without formality, which every target here is (the model has none).
FORMALITY_WITHOUT = ("default", "prefer_more", "prefer_less")
SPLIT_SENTENCES = ("0", "1", "nonewlines")
# DeepL's model types, and the one answered as used: one model serves them all here.
MODEL_TYPES = {
    "quality_optimized": "quality_optimized",
    "prefer_quality_optimized": "quality_optimized",
    "latency_optimized": "latency_optimized",
}

# A CSV line of two terms and two language codes, quoted, with room to spare.
_MAX_LINE_CHARS = 4 * MAX_TERM_CHARS + 64


class NotOffered(Forbidden):
    """A DeepL feature this server does not offer: DeepL's answer to a plan without it is a 403,
    which deepl-python raises with this message."""

    def __init__(self, feature: str, why: str = "") -> None:
        super().__init__(
            f"{feature} is not offered by this server: "
            + (
                why
                or "it translates with its own model, without DeepL's LLM features (Write's rephrase and "
                "correct, style rules, custom instructions)"
            )
        )


def texts_of(params: dict[str, Any]) -> list[str]:
    """The texts; none, or one empty (`text=`), is DeepL's 400, as deepl-python refuses an empty
    string before sending it. In a list of several, an empty text is answered empty."""
    value = params.get("text")
    texts = [value] if isinstance(value, str) else value
    if not texts or texts == [""]:
        raise InvalidRequest("Parameter 'text' not specified.")
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise InvalidRequest("Parameter 'text' must be strings.")
    return texts


def tag_names(params: dict[str, Any], name: str) -> list[str]:
    """A list of element names: DeepL takes them comma-separated, or as a JSON list."""
    value = params.get(name)
    if value is None:
        return []
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidRequest(f"Value for '{name}' not supported.")
    return [tag.strip() for v in values for tag in v.split(",") if tag.strip()]


def one(params: dict[str, Any], name: str) -> str | None:
    """A parameter of one value, as text (JSON's numbers and booleans as a form would send them)."""
    value = params.get(name)
    if isinstance(value, bool):
        value = "1" if value else "0"
    elif isinstance(value, int):
        value = str(value)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"Value for '{name}' not supported.")
    return value


def choice(params: dict[str, Any], name: str, allowed: tuple[str, ...] | dict[str, str]) -> str | None:
    """A parameter DeepL takes from a fixed list (any case): the value, or its 400."""
    value = one(params, name)
    if value is not None and value.lower() not in allowed:
        raise InvalidRequest(f"Value for '{name}' not supported.")
    return value.lower() if value is not None else None


def source_language(
    params: dict[str, Any], supported: frozenset[str], name: str = "source_lang", shown: str | None = None
) -> str | None:
    """The model's code for a DeepL base code (`EN`), None when absent (detected); `shown`: how a
    message names the parameter (where it is in the request), if not by `name`."""
    code = one(params, name)
    if code is None:
        return None
    iso = to_iso(code, supported)
    if iso is None:
        raise InvalidRequest(f"Value for '{shown or name}' not supported.")
    return iso


def target_language(params: dict[str, Any], supported: frozenset[str]) -> tuple[str, str]:
    """The model's code for DeepL's target, and the target as sent (for messages)."""
    code = one(params, "target_lang")
    if code is None:
        raise InvalidRequest("Parameter 'target_lang' not specified.")
    iso = to_iso(code, supported, target=True)
    if iso is None:
        raise InvalidRequest("Value for 'target_lang' not supported.")
    return iso, code.upper()


def languages_and_options(params: dict[str, Any], supported: frozenset[str]) -> tuple[str, str, str | None]:
    """What a translation of text or of a document asks for, checked as DeepL checks it: the source
    (or auto), the target, the glossary; formality and DeepL's LLM features. Raises DeepL's 400
    (403 for a feature not offered)."""
    target, target_code = target_language(params, supported)
    source = source_language(params, supported) or AUTO
    formality = choice(params, "formality", FORMALITY)
    if formality is not None and formality not in FORMALITY_WITHOUT:
        raise InvalidRequest(
            f"Target language '{target_code}' doesn't support formality: this server's model has none "
            f"('default', 'prefer_more' and 'prefer_less' are taken)."
        )
    glossary_id = one(params, "glossary_id")
    ids = tag_names(params, "glossary_ids")  # deepl-python 1.32's list (comma-separated in a form)
    if ids and (glossary_id is not None or len(ids) > 1):
        raise InvalidRequest(
            "Value for 'glossary_ids' not supported: this server applies one glossary a request "
            "(in 'glossary_id', or alone in 'glossary_ids')."
        )
    glossary_id = ids[0] if ids else glossary_id
    if glossary_id is not None and source == AUTO:
        raise InvalidRequest("Use of a glossary requires the 'source_lang' parameter to be specified.")
    for name, feature in (
        ("custom_instructions", "Custom instructions ('custom_instructions')"),
        ("style_id", "Style rules ('style_id')"),
    ):
        if params.get(name) not in (None, "", []):
            raise NotOffered(feature)
    return source, target, glossary_id


def memory_options(params: dict[str, Any]) -> tuple[str | None, int | None]:
    """`translation_memory_id` and `translation_memory_threshold` (#51), checked as deepl-python
    checks them before sending: a threshold is a whole number from 0 to 100, and needs a memory."""
    memory_id = one(params, "translation_memory_id") or None
    raw = params.get("translation_memory_threshold")
    if raw in (None, ""):
        return memory_id, None
    if isinstance(raw, bool) or not isinstance(raw, (int, str)) or not str(raw).strip().isdigit():
        raise InvalidRequest("Value for 'translation_memory_threshold' not supported: a whole number from 0 to 100.")
    threshold = int(str(raw))
    if threshold > 100:
        raise InvalidRequest("Value for 'translation_memory_threshold' not supported: a whole number from 0 to 100.")
    if memory_id is None:
        raise InvalidRequest("Parameter 'translation_memory_threshold' requires 'translation_memory_id'.")
    return memory_id, threshold


def parse_entries(text: str, entries_format: str, field: str = "entries") -> dict[str, str]:
    """DeepL's TSV (`source<TAB>target` a line) or CSV (`source,target[,source_lang,target_lang]`);
    `field`: how the request names them, in messages."""
    if entries_format not in ("tsv", "csv"):
        raise InvalidRequest("Value for 'entries_format' not supported.")
    lines = text.splitlines()
    too_long = next((n for n, line in enumerate(lines, 1) if len(line) > _MAX_LINE_CHARS), None)
    if too_long is not None:  # a term is at most MAX_TERM_CHARS: no need to parse such a line
        raise InvalidRequest(f"Invalid glossary entries provided: line {too_long} is too long")
    try:
        rows = [line.split("\t") for line in lines] if entries_format == "tsv" else list(csv.reader(lines))
    except csv.Error as exc:
        raise InvalidRequest(f"Invalid glossary entries provided: {exc}") from None
    entries = []
    try:
        for number, row in enumerate(rows, 1):
            if not row or not any(cell.strip() for cell in row):
                continue
            if len(row) not in (2, 4) or (entries_format == "tsv" and len(row) != 2):
                raise InvalidRequest(f"Invalid glossary entries provided: line {number} is not source and target")
            entries.append(GlossaryEntry(source=row[0].strip(), target=row[1].strip()))
    except ValidationError as exc:
        raise InvalidRequest(f"Invalid glossary entries provided: {validation_message(exc.errors())}") from None
    if not entries:
        raise InvalidRequest("Invalid glossary entries provided: none")
    return entries_map(entries, field)
