"""Documents for `m2m-translate`: a .docx, .srt, .html, .po... (any format the service's
`POST /documents` reads) translated by the service's own reader and writer (translator/documents).

A document is one unit of the job, its text units the records: they are checkpointed by chunks
as a corpus's lines are, so a killed job resumes within a document, and a finished document is
not translated again. The output is written, atomically, once all its units are in. A unit that
cannot be translated (over the per-record limit, a language the model lacks) keeps its source
text in the output and goes to the rejects file with its reason: the file is still whole.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m2m_tools.jobs.checkpoint import ChunkLog, Done, atomic_write_bytes, permissions
from m2m_tools.jobs.job import Entry, Item
from translator.contract.errors import TranslationError
from translator.documents.formats import NOT_TRANSLATED, extension, read_document_safely, supported
from translator.documents.model import Document

DOCUMENT = "document"
# Read as documents in a folder by their extension (a PDF to be refused by name, as the service
# does). A .txt stays a line-aligned corpus (one record a line, as it always was); `--format
# document` reads it as the service does.
DOCUMENT_SUFFIXES = frozenset([*supported(), *NOT_TRANSLATED]) - {".txt"}


class DocumentError(ValueError):
    """The file cannot be read as a document of its format (the service's 4xx reason)."""


@dataclass
class DocumentUnit:
    path: Path
    output: Path
    name: str  # relative path for a folder's files, the file name otherwise
    source: str | None
    target: str | None
    format: str = DOCUMENT
    size: int = 0
    key: str = ""
    rejected: list[dict[str, Any]] = field(default_factory=list)
    _texts: list[tuple[str, str]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # Read whatever the languages (plan_units names a document without --from and --to): every
        # unreadable file is listed with the other problems.
        data = self._data()
        # Only the units' texts are kept between reads: the writer is made again at the end.
        self._texts = [(unit.text, unit.fmt) for unit in self._read(data).units]
        self.size = len(self._texts)
        settings = {"format": DOCUMENT, "reader": extension(self.path.name), "from": self.source, "to": self.target}
        self.key = hashlib.sha256(
            json.dumps([hashlib.sha256(data).hexdigest(), settings], sort_keys=True).encode()
        ).hexdigest()

    def _data(self) -> bytes:
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise DocumentError(f"cannot read {self.path}: {exc.strerror or exc}") from exc

    def _read(self, data: bytes) -> Document:
        try:
            # The target language: XLIFF writes it into the file.
            return read_document_safely(self.path.name, data, self.target or "")
        except TranslationError as exc:
            raise DocumentError(f"{self.path}: {exc.message}") from exc

    def entries(self) -> Iterator[Entry]:
        for text, fmt in self._texts:
            yield Item(text, self.source, self.target, fmt)

    def write_output(self, log: ChunkLog, done: Done) -> None:
        """The translated document, written atomically, and this file's rejects collected."""
        translations: list[str] = []
        rejected: list[dict[str, Any]] = []
        results = log.results(done, f"{self.name}: unit")
        for index, ((text, _), (translated, reason)) in enumerate(
            zip(self._texts, results, strict=False)
        ):  # results: endless
            if reason is not None or translated is None:
                rejected.append({"file": self.name, "unit": index + 1, "text": text[:200], "reason": reason})
                translated = text  # kept as it was: the file stays whole
            translations.append(translated)
        document = self._read(self._data())
        if len(document.units) != self.size:
            raise DocumentError(f"{self.path} changed while it was translated; run the same command again")
        atomic_write_bytes(self.output, document.write(translations), permissions(self.path))
        self.rejected = rejected
