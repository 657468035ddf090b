"""A translation request with a memory named (#51): the records the memory answers, and the rest, which
go to the model as a request of their own; then one answer in the request's order.

The memory comes before the sentence cache and the model: what a person translated wins over what
the model would say. A glossary applies to the model's translations only: a memory's text is a
person's and is answered as it was written (docs/api.md says so).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass

from translator.contract import limits
from translator.contract.errors import InvalidRequest, TranslationError
from translator.contract.glossary import GlossaryEntry
from translator.contract.memory import MemoryMatch, Origin
from translator.contract.schemas import Payload, TranslatedRecord, TranslationResult
from translator.memory.index import Match, MemoryIndex, base_language
from translator.memory.memories import Memories
from translator.text.segment import UNSPACED_LANGUAGES, split_text

AUTO = "auto"
# Above this many records a request's lookups leave the event loop (each is microseconds; a fuzzy
# one up to a few milliseconds).
LOOKUPS_IN_THREAD = 200
FUZZY_LIMIT = 3


# A record that may hold more than one sentence: a sentence's end, then more text.
_SEVERAL = re.compile(r"[.!?;:\u3002\uff01\uff1f\u0964]['\"\u201d\u2019)\]]*\s+\S|\n\s*\S")


def whole_or_sentences(index: MemoryIndex, text: str, target: str) -> Match | None:
    """The record's match, whole; else, where it has several sentences and the memory holds each
    (CAT tools' memories are of sentences, a document's units are paragraphs), the sentences'
    translations joined by the record's own separators. A record of which the memory holds only some
    sentences is the model's, whole: a paragraph half a person's and half a model's would read as
    neither (the model takes no memory as context)."""
    match = index.lookup(text, target)
    if match is not None or not _SEVERAL.search(text):
        return match
    segmented = split_text(text, limits.MAX_CHARS_PER_RECORD, index.source_lang)
    pieces = segmented.pieces
    if len(pieces) < 2:
        return None
    found = [index.lookup(piece, target) for piece in pieces]
    if any(m is None for m in found):
        return None
    unspaced = base_language(target) in UNSPACED_LANGUAGES
    flags = segmented.translatable
    parts, translations = [], iter(found)
    for at, (part, translatable) in enumerate(zip(segmented.parts, flags, strict=True)):
        if translatable:
            parts.append(next(translations).text.strip())  # type: ignore[union-attr]
        elif unspaced and part.strip(" ") == "" and 0 < at < len(flags) - 1:
            parts.append("")  # between sentences of a language written without spaces; a line break stays
        else:
            parts.append(part)
    return Match("sentences", 100.0, text, "", "".join(parts))


class MemoryNotFound(TranslationError):
    status = 404

    def __init__(self, memory_id: str, field: str) -> None:
        super().__init__(f"{field}: no translation memory {memory_id[:100]!r}", field=field)


@dataclass
class Split:
    """Each record's memory match (None: the model's), the fuzzy matches of the others, and the
    request of the records the model translates (None when the memory answered every one)."""

    payload: Payload
    matches: list[Match | None]
    fuzzy: list[list[Match]]
    rest: Payload | None
    source_lang: str

    def merge(self, translated: TranslationResult | None) -> TranslationResult:
        """One answer, in the request's order: the memory's records and the model's."""
        others = iter(translated.result if translated is not None else [])
        report: list[GlossaryEntry] | None = [] if self.payload.glossary_report else None
        alternatives: list[str] | None = [] if self.payload.alternatives else None
        detected = self.payload.from_lang == AUTO
        out = []
        for record, match, fuzzy in zip(self.payload.records, self.matches, self.fuzzy, strict=True):
            if match is None:
                model = next(others)
                matches = [MemoryMatch(score=m.score, source=m.source, target=m.target) for m in fuzzy]
                origin = Origin(kind="model", fuzzy=matches or None)
                out.append(model.model_copy(update={"origin": origin}))
                continue
            out.append(
                TranslatedRecord(
                    id=record.id,
                    text=match.text,
                    # The language a memory's match is in is the memory's source language.
                    detectedLang=self.source_lang if detected else None,
                    detectedConfidence=1.0 if detected else None,
                    alternatives=alternatives,
                    glossary=report,
                    origin=Origin(
                        kind="memory",
                        match=match.kind,  # type: ignore[arg-type]
                        score=match.score,
                        source=match.source if match.kind != "sentences" else None,
                    ),
                )
            )
        return TranslationResult(result=out)


def check_memory_fields(payload: Payload, field_prefix: str = "payload.") -> None:
    if payload.memory_threshold is not None and payload.translation_memory is None:
        raise InvalidRequest(
            f"{field_prefix}memoryThreshold: given without translationMemory",
            field=f"{field_prefix}memoryThreshold",
        )


async def split_payload(
    payload: Payload,
    memories: Memories,
    canonical: Callable[[str], str],
    field: str = "payload.translationMemory",
) -> Split | None:
    """The request split by the memory it names; None when it names none."""
    check_memory_fields(payload)
    if payload.translation_memory is None:
        return None
    found = await memories.index(payload.translation_memory)
    if found is None:
        raise MemoryNotFound(payload.translation_memory, field)
    info, index = found
    if payload.from_lang != AUTO and base_language(canonical(payload.from_lang)) != index.source_lang:
        raise InvalidRequest(
            f"{field}: the memory {info.name!r} is from {info.source_lang!r}, the request from {payload.from_lang!r}",
            field=field,
        )
    texts = [record.text for record in payload.records]
    target = canonical(payload.to_lang)
    threshold = payload.memory_threshold if payload.memory_threshold is not None else 100
    if len(texts) > LOOKUPS_IN_THREAD or threshold < 100:
        matches, fuzzy = await asyncio.to_thread(_look_up, index, texts, target, threshold)
    else:
        matches, fuzzy = _look_up(index, texts, target, threshold)
    misses = [record for record, match in zip(payload.records, matches, strict=True) if match is None]
    rest = payload.model_copy(update={"records": misses, "translation_memory": None, "memory_threshold": None})
    return Split(payload, matches, fuzzy, rest if misses else None, index.source_lang)


def _look_up(
    index: MemoryIndex, texts: list[str], target: str, threshold: int
) -> tuple[list[Match | None], list[list[Match]]]:
    matches = [whole_or_sentences(index, text, target) for text in texts]
    fuzzy = [
        index.fuzzy(text, target, threshold, FUZZY_LIMIT) if match is None and threshold < 100 else []
        for text, match in zip(texts, matches, strict=True)
    ]
    return matches, fuzzy
