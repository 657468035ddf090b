"""A stored glossary (#33, #44): a name and dictionaries, each a language pair's entries (DeepL's v3
glossaries; a v2 or native glossary is a glossary of one dictionary), made new with an id and a
creation time, and its JSON as stored.

Apart from translator/api/glossary_store.py, which keeps glossaries (in files or in Valkey): the
model and its stored shape are what every store, the native API and DeepL's share, and the shape is
what replicas of two versions of this server must both read.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class Dictionary:
    """A glossary's entries for one language pair (source term -> target term)."""

    source_lang: str
    target_lang: str
    entries: dict[str, str]

    def info(self) -> dict[str, Any]:
        return {"sourceLang": self.source_lang, "targetLang": self.target_lang, "entryCount": len(self.entries)}


@dataclass(frozen=True)
class Glossary:
    glossary_id: str
    name: str
    creation_time: str
    dictionaries: tuple[Dictionary, ...]
    # Set by the store that read it, never stored: the version read (`GlossaryStore.revision`),
    # and its size as stored (what a cache of glossaries counts).
    revision: str = field(default="", compare=False)
    stored_bytes: int = field(default=0, compare=False)

    def info(self) -> dict[str, Any]:
        """What the native API answers about it (entries apart): a glossary of one dictionary keeps
        the fields it always had (`sourceLang`, `targetLang`), and every glossary lists its
        dictionaries."""
        out: dict[str, Any] = {
            "glossaryId": self.glossary_id,
            "name": self.name,
            "creationTime": self.creation_time,
            "entryCount": sum(len(d.entries) for d in self.dictionaries),
            "dictionaries": [d.info() for d in self.dictionaries],
        }
        if len(self.dictionaries) == 1:
            out.update(sourceLang=self.dictionaries[0].source_lang, targetLang=self.dictionaries[0].target_lang)
        return out

    def dictionary(self, source_lang: str, target_lang: str) -> Dictionary | None:
        return next(
            (d for d in self.dictionaries if (d.source_lang, d.target_lang) == (source_lang, target_lang)), None
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_glossary(name: str, source_lang: str, target_lang: str, entries: dict[str, str]) -> Glossary:
    """A glossary of one dictionary (the native API's, DeepL's v2)."""
    return new_multilingual(name, (Dictionary(source_lang, target_lang, entries),))


def new_multilingual(name: str, dictionaries: tuple[Dictionary, ...]) -> Glossary:
    """A glossary of several dictionaries (DeepL's v3)."""
    return Glossary(str(uuid.uuid4()), name, _now(), dictionaries)


def to_json(glossary: Glossary) -> str:
    """As stored. A glossary of one dictionary keeps the shape every version of this server reads
    (a replica of the previous version, during a rolling update, still uses it)."""
    if len(glossary.dictionaries) == 1:
        only = glossary.dictionaries[0]
        data: dict[str, Any] = {
            "glossary_id": glossary.glossary_id,
            "name": glossary.name,
            "source_lang": only.source_lang,
            "target_lang": only.target_lang,
            "creation_time": glossary.creation_time,
            "entries": only.entries,
        }
    else:
        data = {
            "glossary_id": glossary.glossary_id,
            "name": glossary.name,
            "creation_time": glossary.creation_time,
            "dictionaries": [
                {"source_lang": d.source_lang, "target_lang": d.target_lang, "entries": d.entries}
                for d in glossary.dictionaries
            ],
        }
    return json.dumps(data, ensure_ascii=False)


def from_json(raw: str | bytes, revision: str) -> Glossary:
    data = json.loads(raw)
    if "dictionaries" in data:
        dictionaries = tuple(Dictionary(d["source_lang"], d["target_lang"], d["entries"]) for d in data["dictionaries"])
    else:
        dictionaries = (Dictionary(data["source_lang"], data["target_lang"], data["entries"]),)
    size = len(raw.encode() if isinstance(raw, str) else raw)
    return Glossary(data["glossary_id"], data["name"], data["creation_time"], dictionaries, revision, size)
