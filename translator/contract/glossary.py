"""Glossaries in the HTTP contract (#33): entries, their limits, and the request's optional fields.

A glossary is a language pair and entries: a source term and the target term that must stand for
it in every translation, or no target: the term is kept as it is (a product name). The matching is
translator/text/glossary.py; the stored glossaries are translator/api/glossary_store.py.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from translator.contract.errors import InvalidRequest, PayloadTooLarge

# A term: one line, no whitespace at its edges (stated in the schema; the validator says it in words).
TERM_PATTERN = r"^\S(?:[^\t\r\n]*\S)?$"
# Bounds of one glossary (inline or stored) and of the store, so a glossary can neither fill a
# worker's memory nor make matching slow. Entries a dictionary (a language pair's entries): 10,000,
# the size DeepL's own client tests (deepl-python's `test_glossary_create_large`); the matcher is a
# trie (translator/text/glossary.py): 10,000 terms compile once in about a second and match in
# linear time, a millisecond over 20,000 characters.
MAX_ENTRIES = 10_000
MAX_TERM_CHARS = 100
MAX_NAME_CHARS = 200
MAX_STORED_GLOSSARIES = 1_000
# A glossary's bytes as stored (JSON), whatever its dictionaries: DeepL's bound (10 MiB). A v3
# glossary grows by a dictionary or its entries at a time (PATCH), so its entries alone bound nothing.
MAX_GLOSSARY_BYTES = 10 * 1024 * 1024
# And the store's: the count alone let a store reach gigabytes. 64 MiB holds a thousand glossaries
# of a few hundred terms, and beside the document jobs' 128 MiB fits the Deployment's 256 MiB
# BentoML home.
MAX_STORED_GLOSSARY_BYTES = 64 * 1024 * 1024


class GlossaryEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(
        min_length=1,
        max_length=MAX_TERM_CHARS,
        json_schema_extra={"pattern": TERM_PATTERN},
        description="The term as written in the source.",
    )
    target: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TERM_CHARS,
        json_schema_extra={"pattern": TERM_PATTERN},
        description="What stands for it in every translation; absent: the term is kept as it is.",
    )

    @field_validator("source", "target")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and (value != value.strip() or any(c in value for c in "\t\r\n")):
            raise ValueError("a term is one line with no leading or trailing whitespace")
        return value


class InlineGlossary(BaseModel):
    """A glossary sent with the request, for its fromLang -> toLang."""

    model_config = ConfigDict(extra="forbid")

    # The bound is entries_map's 413 naming the field, as every API answers it (not pydantic's 400);
    # the schema still states it.
    entries: list[GlossaryEntry] = Field(
        description=f"The glossary's entries, at most {MAX_ENTRIES}.", json_schema_extra={"maxItems": MAX_ENTRIES}
    )


def entries_map(entries: list[GlossaryEntry], field: str) -> dict[str, str]:
    """Source term -> target term (itself when kept); a source term given twice is refused."""
    if len(entries) > MAX_ENTRIES:
        raise PayloadTooLarge(f"{field}: number of entries", MAX_ENTRIES, len(entries), field=field)
    out: dict[str, str] = {}
    for index, entry in enumerate(entries):
        if entry.source in out:
            raise InvalidRequest(f"{field}.{index}.source: {entry.source!r} is given twice", field=f"{field}.{index}")
        out[entry.source] = entry.target if entry.target is not None else entry.source
    return out


def entries_list(entries: dict[str, str]) -> list[dict[str, Any]]:
    return [{"source": s, "target": t} if s != t else {"source": s} for s, t in entries.items()]
