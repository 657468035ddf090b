"""What `m2m-translate` reads and writes: JSONL, plain text, documents, or a folder of them.

* **JSONL** (``.jsonl``, ``.ndjson``): one JSON object a line, ``{"id", "text"}`` plus optional
  ``fromLang`` / ``toLang`` that override ``--from`` / ``--to`` for that line. Written back as
  ``{"id", "text"}`` in the same order; a rejected line as ``{"id", "text": null, "error"}``.
  Blank lines are not records and are not written back.
* **plain text** (anything else): one segment a line; a record's id is its line number (from 1).
  Written back line for line; a rejected line as an empty line (its reason is in the rejects file).
* **documents** (.docx, .srt, .html, .po...: every format but .txt that the service's
  `POST /documents` reads): by the service's reader and writer, m2m_tools/documents.py.
* **a folder**: every file in it and below (hidden ones excepted), each in its own format, written
  to the same relative path under the output folder.

Lines are split on ``\\n`` only (``\\r\\n`` endings are accepted): a U+2028 or form feed inside a
segment must not shift every later line. Each output line ends as its input line did (``\\r\\n``,
``\\n``, or nothing on a last line), by the service's own rule for .txt documents, so a
Windows-edited file comes back CRLF.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m2m_tools.documents import DOCUMENT, DOCUMENT_SUFFIXES, DocumentError, DocumentUnit
from m2m_tools.jobs.checkpoint import ChunkLog, Done, atomic_writer, permissions
from m2m_tools.jobs.job import Entry, Invalid, Item
from translator.documents.text import split_line_end

JSONL = "jsonl"
TEXT = "text"
JSONL_SUFFIXES = (".jsonl", ".ndjson")
_READ_BLOCK = 1024 * 1024


class CorpusError(ValueError):
    """The input cannot be read as asked (missing, not UTF-8, output in the way)."""


def detect_format(path: Path, forced: str | None = None) -> str:
    if forced:
        return forced
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return JSONL
    return DOCUMENT if suffix in DOCUMENT_SUFFIXES else TEXT


@dataclass
class FileUnit:
    """One input file: a unit of the job, and where its translation goes."""

    path: Path
    output: Path
    format: str
    name: str  # relative path for a folder's files, the file name otherwise
    source: str | None
    target: str | None
    size: int = 0
    key: str = ""
    bom: bool = False
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # One pass over the bytes: the content hash for the checkpoint key, and the record count.
        hasher = hashlib.sha256()
        size = 0
        for _, line, _ in self._lines():
            hasher.update(line.encode("utf-8"))
            hasher.update(b"\n")
            if self.format == TEXT or line.strip():
                size += 1
        self.size = size
        # A UTF-8 byte order mark is read past (utf-8-sig) and written back: a tool that put it
        # there may want it (Windows editors, Excel's CSV-like imports).
        self.bom = self._starts_with_bom()
        settings = {"format": self.format, "from": self.source, "to": self.target}
        self.key = hashlib.sha256(json.dumps([hasher.hexdigest(), settings], sort_keys=True).encode()).hexdigest()

    def _starts_with_bom(self) -> bool:
        try:
            with self.path.open("rb") as handle:
                return handle.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8
        except OSError as exc:
            raise CorpusError(f"cannot read {self.path}: {exc.strerror or exc}") from exc

    def _lines(self) -> Iterator[tuple[int, str, str]]:
        """(line number, text, its line end), lazily."""
        try:
            with self.path.open(encoding="utf-8-sig", newline="") as handle:
                number, pending = 0, ""
                for block in iter(lambda: handle.read(_READ_BLOCK), ""):
                    parts = (pending + block).split("\n")
                    pending = parts.pop()
                    for part in parts:
                        number += 1
                        yield number, *split_line_end(part + "\n")
                if pending:
                    yield number + 1, *split_line_end(pending)
        except UnicodeDecodeError as exc:
            raise CorpusError(f"{self.path}: not UTF-8 ({exc})") from exc
        except OSError as exc:
            raise CorpusError(f"cannot read {self.path}: {exc.strerror or exc}") from exc

    def records(self) -> Iterator[tuple[int, Any, Entry, str]]:
        """(line number, id, entry, its line's end) for every record, in order."""
        for number, line, end in self._lines():
            if self.format == TEXT:
                yield number, number, Item(line, self.source, self.target), end
            elif line.strip():
                record_id, entry = self._parse(line, number)
                yield number, record_id, entry, end

    def entries(self) -> Iterator[Entry]:
        for _, _, entry, _ in self.records():
            yield entry

    def _parse(self, line: str, number: int) -> tuple[Any, Entry]:
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            return None, Invalid(f"line {number}: not valid JSON ({exc.msg} at column {exc.colno})")
        if not isinstance(row, dict):
            return None, Invalid(f"line {number}: expected a JSON object with 'id' and 'text'")
        record_id = row.get("id")
        if "id" not in row:
            return None, Invalid(f"line {number}: missing field 'id'")
        if not isinstance(row.get("text"), str):
            return record_id, Invalid(f"line {number}: field 'text' must be a string")
        languages = []
        for name, default in (("fromLang", self.source), ("toLang", self.target)):
            value = row.get(name, default)
            if value is not None and not isinstance(value, str):
                return record_id, Invalid(f"line {number}: field {name!r} must be a string")
            languages.append(value)
        return record_id, Item(row["text"], languages[0], languages[1])

    # ------------------------------------------------------------------ output

    def write_output(self, log: ChunkLog, done: Done) -> None:
        """The translated file, written atomically, and this file's rejects collected."""
        rejected: list[dict[str, Any]] = []
        results = log.results(done, f"{self.name}: record")
        with atomic_writer(self.output, permissions(self.path)) as out:
            if self.bom:
                out.write("\ufeff")
            # The records drive: results are read only as far as there are records.
            for (number, record_id, _, end), (text, reason) in zip(self.records(), results, strict=False):
                if reason is not None:
                    rejected.append({"file": self.name, "line": number, "id": record_id, "reason": reason})
                out.write(self._line(record_id, text, reason) + end)
        self.rejected = rejected

    def _line(self, record_id: Any, text: str | None, reason: str | None) -> str:
        if self.format == TEXT:
            # A line-aligned file cannot hold a line break; translations of one line have none,
            # but a model could emit one, and it would shift every later line.
            return (text or "").replace("\r", " ").replace("\n", " ")
        if reason is not None:
            return json.dumps({"id": record_id, "text": None, "error": reason}, ensure_ascii=False)
        return json.dumps({"id": record_id, "text": text}, ensure_ascii=False)


OutputUnit = FileUnit | DocumentUnit


@dataclass(frozen=True)
class Unreadable:
    """An input file that cannot be read as the format it would be translated as."""

    name: str
    reason: str  # names the file: "in/a.pdf: PDF is not translated..."
    output: Path | None = None  # where its translation would go

    @property
    def rejected(self) -> list[dict[str, Any]]:
        return [{"file": self.name, "reason": self.reason}]

    @property
    def stale_output(self) -> Path | None:
        """An output an earlier run left for this file (from what it held then): kept, as the
        tool deletes nothing of the user's, and said, as it is no translation of the file now."""
        return self.output if self.output is not None and self.output.is_file() else None


@dataclass
class Plan:
    """The job's files in input order, each read whole (a unit) or not readable (why), and the
    problems no skipping of files fixes."""

    files: list[OutputUnit | Unreadable]
    problems: list[str] = field(default_factory=list)

    @property
    def units(self) -> list[OutputUnit]:
        return [file for file in self.files if not isinstance(file, Unreadable)]

    @property
    def unreadable(self) -> list[Unreadable]:
        return [file for file in self.files if isinstance(file, Unreadable)]


def plan_units(
    input_path: Path, output: Path, *, source: str | None, target: str | None, forced_format: str | None
) -> Plan:
    """The job's files: the input file, or every file under the input folder. Every file is read
    (and a document parsed) now, so that all the unreadable ones are known before any work."""
    if input_path.is_file():
        if output.is_dir():
            raise CorpusError(f"--output {output} is a folder; the input {input_path} is a file")
        files = [(input_path, output, input_path.name)]
    elif input_path.is_dir():
        if output.exists() and not output.is_dir():
            raise CorpusError(f"--output {output} is a file; the input {input_path} is a folder")
        found = sorted(
            p
            for p in input_path.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(input_path).parts)
        )
        if not found:
            raise CorpusError(f"{input_path}: the folder holds no file to translate")
        files = [(p, output / p.relative_to(input_path), p.relative_to(input_path).as_posix()) for p in found]
    else:
        raise CorpusError(f"{input_path}: no such file or folder")
    if any(path.resolve() == out.resolve() for path, out, _ in files):
        raise CorpusError(f"--output {output} would overwrite the input")
    plan = Plan(
        [_unit(path, out, detect_format(path, forced_format), name, source, target) for path, out, name in files]
    )
    documents = [unit.path.as_posix() for unit in plan.units if isinstance(unit, DocumentUnit)]
    if documents and not (source and target):
        # A corpus line may name its languages; a document's units cannot. One line for all of
        # them: it is one flag missing, not a problem of each file.
        more = f" and {len(documents) - 3} more" if len(documents) > 3 else ""
        plan.problems.append(f"{', '.join(documents[:3])}{more}: a document needs --from and --to")
    return plan


def _unit(
    path: Path, output: Path, fmt: str, name: str, source: str | None, target: str | None
) -> OutputUnit | Unreadable:
    try:
        if fmt == DOCUMENT:
            return DocumentUnit(path, output, name, source, target)
        return FileUnit(path, output, fmt, name, source, target)
    except (CorpusError, DocumentError) as exc:
        return Unreadable(name, str(exc), output)


def write_rejects(path: Path, files: Sequence[OutputUnit | Unreadable]) -> int:
    """All rejected records (and files skipped as unreadable), in input order, atomically; no file
    (and no stale one) when there are none."""
    rejected = [row for file in files for row in file.rejected]
    if not rejected:
        path.unlink(missing_ok=True)
        return 0
    with atomic_writer(path) as out:
        for row in rejected:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rejected)
