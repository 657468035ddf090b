"""What a translation memory is (#51): a name, one source language, the target languages its
segments are in, and segments: a source text and its translation into one target language, as a
person wrote it.

Segments come from files people already have (translator/memory/files.py: TMX, PO, XLIFF, CSV)
and from document jobs that learn; they are stored in chunks, appended and never rewritten
(translator/memory/store.py), and matched in each API worker by an index built from them
(translator/memory/index.py).
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field
from typing import Any

# Bounds of the store and of one memory, so that a memory can neither fill a worker's RAM nor make
# lookups slow: 2,000,000 segments a memory (the index of 1,000,000 is measured in the benchmark:
# bench/results/memory.md), 100 memories, and a segment's text as long as a record's.
MAX_MEMORIES = 100
MAX_SEGMENTS = 2_000_000
MAX_SEGMENT_CHARS = 20_000
MAX_NAME_CHARS = 200
# Segments a single import or learning step adds (a chunk of the store).
MAX_SEGMENTS_PER_IMPORT = 500_000


@dataclass(frozen=True, slots=True)
class Segment:
    """`source` in the memory's source language, `target` in `target_lang`, both as written (inline
    markup and placeholders included, as the file held them)."""

    source: str
    target_lang: str
    target: str


@dataclass
class Imported:
    """What a memory file held: its segments and what was left out, with why (an untranslated or
    fuzzy entry, a unit without the source language)."""

    source_lang: str
    segments: list[Segment] = field(default_factory=list)
    skipped: int = 0
    # One line each, the first few: what a client is told about what was left out.
    notes: list[str] = field(default_factory=list)

    def skip(self, why: str) -> None:
        self.skipped += 1
        if len(self.notes) < 20:
            self.notes.append(why)


@dataclass(frozen=True)
class MemoryInfo:
    memory_id: str
    name: str
    source_lang: str
    target_langs: tuple[str, ...]
    # Segments stored (a later segment of the same source and target language replaces an earlier one
    # in matching; both are counted until an export writes the memory anew).
    segment_count: int
    created: str
    updated: str
    # Chunks stored: a worker's index is current when it has read this many.
    chunks: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "memory_id": self.memory_id,
            "name": self.name,
            "source_lang": self.source_lang,
            "target_langs": list(self.target_langs),
            "segment_count": self.segment_count,
            "created": self.created,
            "updated": self.updated,
            "chunks": self.chunks,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> MemoryInfo:
        return MemoryInfo(
            memory_id=str(data["memory_id"]),
            name=str(data["name"]),
            source_lang=str(data["source_lang"]),
            target_langs=tuple(str(code) for code in data.get("target_langs", ()) or ()),
            segment_count=int(data.get("segment_count", 0) or 0),
            created=str(data["created"]),
            updated=str(data.get("updated", data["created"])),
            chunks=int(data.get("chunks", 0) or 0),
        )


def now() -> str:
    """A timestamp as DeepL writes them (ISO 8601, UTC, milliseconds)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_memory(name: str, source_lang: str) -> MemoryInfo:
    stamp = now()
    return MemoryInfo(str(uuid.uuid4()), name, source_lang, (), 0, stamp, stamp, 0)
