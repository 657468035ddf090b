"""The public HTTP contract's request and response models (`POST /translation`).

The API-to-engine protocol is in `translator.contract.protocol`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict

from translator.contract import limits
from translator.contract.glossary import GlossaryEntry, InlineGlossary
from translator.contract.memory import Origin

EXAMPLE_TEXT = "Life is like a box of chocolates."


def _whole_number(value: object) -> object:
    # JSON has one number type: JSON Schema's (and so OpenAPI 3.1's) `integer` is any number
    # without a fraction, 2.0 included (a client generated from /docs.json may send it).
    return int(value) if isinstance(value, float) and value.is_integer() else value


# A number without a fraction: not `false`, not "2", not 2.5.
JsonInteger = Annotated[int, BeforeValidator(_whole_number), Strict()]
# 0 to 100, bounds in the same annotation: put on an optional field's Field (or around JsonInteger),
# they were written as `ge`/`le` in the JSON schema, not `minimum`/`maximum`, and schemathesis sent
# -1 as a valid memoryThreshold.
Percent = Annotated[int, Field(ge=0, le=100), BeforeValidator(_whole_number), Strict()]
# An element's name; one that names no element keeps nothing, so any string up to this is accepted.
TagName = Annotated[str, Field(max_length=64)]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Opaque identifier, echoed back with the translation.")
    text: str = Field(
        description=f"Text to translate: any length up to {limits.MAX_CHARS_PER_RECORD} characters, "
        "several sentences and paragraphs; whitespace and line breaks are kept."
    )


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_lang: str = Field(
        alias="fromLang",
        description="Source language code, e.g. 'en' (GET /languages), or 'auto': each record's language is "
        "detected and answered as its `detectedLang`.",
    )
    to_lang: str = Field(alias="toLang", description="Target language code, e.g. 'ja'.")
    records: list[Record] = Field(
        description=f"Records to translate, at most {limits.MAX_RECORDS_PER_REQUEST} per request."
    )
    fallback_lang: str | None = Field(
        default=None,
        alias="fallbackLang",
        description="With fromLang 'auto': the language of records whose language cannot be detected with "
        "confidence (a single word, an ambiguous greeting, a language the model lacks); they are translated "
        "from it and answered with detectedLang 'und'. Without it such a record takes the language detected "
        "with confidence for the other records of the request, or else the detector's best guess.",
    )
    alternatives: JsonInteger = Field(
        default=0,
        ge=0,
        le=limits.MAX_ALTERNATIVES,
        description=f"Other translations wanted for each record beside the best, 0 to {limits.MAX_ALTERNATIVES} "
        "(from the beam search; answered as each record's `alternatives`, possibly fewer).",
    )
    format: Literal["text", "html"] = Field(
        default="text",
        description="'text' (default) or 'html': text nodes are translated and the markup, entities, "
        'comments, <script>, <style>, <code>, <pre> and translate="no" elements come back as they were.',
    )
    # Glossaries (#33): optional, so the contract without them is unchanged.
    glossary: InlineGlossary | None = Field(
        default=None,
        description="Terms to translate a fixed way in this request, from fromLang (not 'auto') to toLang: each "
        "source term, as a whole word, becomes its target term, or stays as it is when the entry has no target.",
    )
    glossary_id: str | None = Field(
        default=None,
        alias="glossaryId",
        max_length=100,
        description="A stored glossary (POST /glossaries) applied to records in its source language, when toLang "
        "is its target language.",
    )
    glossary_report: bool = Field(
        default=False,
        alias="glossaryReport",
        strict=True,
        description="Answer each record's `glossary`: the entries applied to it.",
    )
    # DeepL's `ignore_tags` (translator/api/deepl.py), open to the native API too.
    keep_tags: list[TagName] = Field(
        default_factory=list,
        alias="keepTags",
        max_length=limits.MAX_KEEP_TAGS,
        exclude_if=lambda value: not value,
        description="With format 'html': names of elements kept as they are inside the sentence around them "
        "(their content is not translated), as placeholders are, e.g. ['x'] for <x id=\"1\"></x>; "
        "without it an element the HTML path does not know separates sentences.",
    )

    # Translation memories (#51): optional, so the contract without them is unchanged.
    translation_memory: str | None = Field(
        default=None,
        alias="translationMemory",
        max_length=100,
        description="A stored translation memory (POST /memories): a record it holds (white space aside), or "
        "holds with other numbers, placeholders or inline tags, is answered with the person's translation "
        "and the model never sees it; every record then says its `origin`.",
    )
    memory_threshold: Percent | None = Field(
        default=None,
        alias="memoryThreshold",
        description="With translationMemory: below 100, each record the model translates also reports the "
        "memory's segments at least this similar (0-100) as `origin.fuzzy`. Default 100: none.",
    )

    def kept_tags(self) -> frozenset[str]:
        """`keepTags` as the HTML parser names elements: in lower case."""
        return frozenset(name.lower() for name in self.keep_tags)


class TranslatedRecord(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    id: str
    text: str
    # Only in answers to fromLang 'auto': absent otherwise, so the contract is unchanged.
    detected_lang: str | None = Field(
        default=None,
        alias="detectedLang",
        exclude_if=lambda value: value is None,
        description="With fromLang 'auto': the language detected for this record, or 'und' when it was not "
        "determined and the record was translated from fallbackLang, or has no letters.",
    )
    detected_confidence: float | None = Field(
        default=None,
        alias="detectedConfidence",
        exclude_if=lambda value: value is None,
        description="With fromLang 'auto': how likely detectedLang is, 0 to 1 (the detector's probability "
        "for it among the model's languages).",
    )

    alternatives: list[str] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With `alternatives` asked for: other translations of the record, best first.",
    )
    glossary: list[GlossaryEntry] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With glossaryReport: the glossary entries applied to this record, in order of first use.",
    )
    origin: Origin | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With translationMemory: whether the text is the memory's translation or the model's.",
    )


class TranslationResult(BaseModel):
    result: list[TranslatedRecord]


EXAMPLE_PAYLOAD = Payload(fromLang="en", toLang="ja", records=[Record(id="123", text=EXAMPLE_TEXT)])
