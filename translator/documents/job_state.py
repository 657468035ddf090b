"""A document job's state, typed (#50: an untyped dict that three modules wrote keys into).

Stored as `state.json` in the job's folder (translator/documents/jobs.py), with the same keys as
before it was typed, so that a job a worker of the previous release left is read and resumed; the
API answers `public()`, the part a client may see.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["queued", "running", "done", "failed"]


@dataclass
class Progress:
    done: int = 0
    total: int = 0


@dataclass
class JobState:
    id: str
    filename: str
    from_lang: str
    to_lang: str
    created: float
    pid: int
    worker: str | None = None  # the process's pid@start-time (jobs._worker): a reused pid is not it
    owner: str = ""  # a digest of the API key it counts against, never the key
    status: Status = "queued"
    progress: Progress = field(default_factory=Progress)
    warning: str | None = None
    error: str | None = None  # why it failed
    ended: float | None = None
    content_type: str | None = None  # the result's, as its writer settled it
    detected_language: str | None = None  # with "auto": the language of most of the text
    glossary_id: str | None = None
    encoding: str | None = None  # a text file's, as the client named it: read so again on resuming
    untranslated: dict[str, Any] | None = None  # texts the writer kept as they were, and why
    characters: int = 0  # billed, as DeepL's document status answers them
    # A translation memory (#51): the job's texts it holds come back as people wrote them.
    memory_id: str | None = None
    memory_hits: int | None = None  # texts the memory answered (set when the job is done)
    learned: int | None = None  # people's translations the file held, added to the memory (opt-in)
    # DeepL's job (translator/api/deepl_documents.py): the digest of its document key, with which
    # alone it is read; the native routes do not show it.
    deepl: dict[str, Any] | None = None
    orphaned: bool = False  # set when loaded: its worker is gone (never stored)

    @property
    def result_url(self) -> str:
        return f"/documents/{self.id}/result"

    def to_json(self) -> dict[str, Any]:
        """As stored (and as it was stored before it was typed)."""
        out: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "filename": self.filename,
            "fromLang": self.from_lang,
            "toLang": self.to_lang,
            "progress": {"done": self.progress.done, "total": self.progress.total},
            "resultUrl": self.result_url,
            "created": self.created,
            "pid": self.pid,
            "worker": self.worker,
            "owner": self.owner,
        }
        for name, key in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                out[key] = value
        if self.characters:
            out["characters"] = self.characters
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobState:
        progress = data.get("progress") or {}
        return cls(
            id=data["id"],
            filename=data["filename"],
            from_lang=data["fromLang"],
            to_lang=data["toLang"],
            created=data["created"],
            pid=data["pid"],
            worker=data.get("worker"),
            owner=data.get("owner", ""),
            status=data["status"],
            progress=Progress(progress.get("done", 0), progress.get("total", 0)),
            characters=data.get("characters", 0),
            warning=data.get("warning"),
            error=data.get("error"),
            ended=data.get("ended"),
            content_type=data.get("contentType"),
            detected_language=data.get("detectedLanguage"),
            glossary_id=data.get("glossaryId"),
            encoding=data.get("encoding"),
            untranslated=data.get("untranslated"),
            deepl=data.get("deepl"),
            memory_id=data.get("translationMemory"),
            memory_hits=data.get("memoryHits"),
            learned=data.get("learned"),
        )

    def public(self) -> dict[str, Any]:
        """What the API answers of it."""
        out: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "filename": self.filename,
            "progress": {"done": self.progress.done, "total": self.progress.total},
            "resultUrl": self.result_url,
        }
        for name, key in _PUBLIC:
            value = getattr(self, name)
            if value is not None:
                out[key] = value
        return out


# Optional fields, as stored: (attribute, key).
_OPTIONAL = (
    ("warning", "warning"),
    ("error", "error"),
    ("ended", "ended"),
    ("content_type", "contentType"),
    ("detected_language", "detectedLanguage"),
    ("glossary_id", "glossaryId"),
    ("encoding", "encoding"),
    ("untranslated", "untranslated"),
    ("deepl", "deepl"),
    ("memory_id", "translationMemory"),
    ("memory_hits", "memoryHits"),
    ("learned", "learned"),
)
_PUBLIC = (
    ("detected_language", "detectedLanguage"),
    ("glossary_id", "glossaryId"),
    ("encoding", "encoding"),
    ("error", "error"),
    ("warning", "warning"),
    ("untranslated", "untranslated"),
    ("memory_id", "translationMemory"),
    ("memory_hits", "memoryHits"),
    ("learned", "learned"),
)
