"""Parallel test sets for `m2m-eval`: loading, checking, selecting directions.

Two formats are read:

* a FLORES-style folder of line-aligned text files, one per language. A file is either
  ``<lang>.txt``, ``<name>.<lang>``, or Flores-200's ``<lang>.<split>`` (``eng_Latn.devtest``, a
  set named after the split); a folder holding only Flores-200's split folders is read from its
  ``devtest/`` (else ``dev/``). Directions keep the data's codes. Files sharing a name
  (``<lang>.txt`` files share the empty name) form a *set* and must have the same number of lines.
  A direction ``a-b`` is scored on every set that holds both ``a`` and ``b``, concatenated in name
  order (so a folder can hold several bilingual sets that are not multi-way parallel). An optional
  ``directions.txt`` lists the directions to score, one ``src-tgt`` a line (``#`` starts a
  comment); without it, every ordered pair of languages that share a set is scored.
* a folder of parallel documents: one subfolder per language holding documents of the same names
  (``en/manual.docx``, ``fr/manual.docx``), their text units the segments; a name is a set
  (m2m_tools/evaluation/documents.py).
* JSONL, one segment a line: ``{"src_lang", "tgt_lang", "source", "reference"}`` (other keys, such
  as ``id``, are ignored). Directions are those present, in first-seen order.

Every problem raises :class:`DataError` with a message naming the file, line and fix.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import permutations
from pathlib import Path

logger = logging.getLogger(__name__)

DIRECTIONS_FILE = "directions.txt"

# A language code as used in file names: ISO 639-1/3, optionally with a FLORES-200 script suffix.
_LANG_RE = re.compile(r"[A-Za-z]{2,3}(?:_[A-Za-z]{4})?")
# Suffixes that match the pattern above but are documentation or data, never a language.
_NOT_LANGUAGES = frozenset({"md", "rst", "csv", "tsv", "py", "sh", "gz", "bz2", "xz", "zip", "xml", "yml", "log"})
_JSONL_FIELDS = ("src_lang", "tgt_lang", "source", "reference")
# Flores-200's own layout: `devtest/eng_Latn.devtest` (the test split first: what is reported).
_FLORES200_CODE = re.compile(r"[a-z]{3}_[A-Z][a-z]{3}")
FLORES200_SPLITS = ("devtest", "dev")


class DataError(ValueError):
    """The test set is malformed or does not hold what was asked for."""


@dataclass(frozen=True, order=True)
class Direction:
    source: str
    target: str

    @property
    def name(self) -> str:
        return f"{self.source}-{self.target}"

    @classmethod
    def parse(cls, text: str, where: str = "direction") -> Direction:
        parts = text.strip().split("-")
        if len(parts) != 2 or not all(_LANG_RE.fullmatch(p) for p in parts):
            raise DataError(f"{where}: {text.strip()!r} is not a direction; write it as SRC-TGT, e.g. 'en-fr'")
        if parts[0] == parts[1]:
            raise DataError(f"{where}: {text.strip()!r} translates a language into itself")
        return cls(parts[0], parts[1])

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class DirectionData:
    direction: Direction
    sources: tuple[str, ...]
    references: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.sources) != len(self.references):
            raise DataError(f"{self.direction}: {len(self.sources)} sources but {len(self.references)} references")

    def __len__(self) -> int:
        return len(self.sources)


@dataclass(frozen=True)
class EvalData:
    path: Path
    format: str  # "flores" | "documents" | "jsonl"
    directions: dict[str, DirectionData] = field(default_factory=dict)

    @property
    def segments(self) -> int:
        return sum(len(d) for d in self.directions.values())

    def select(self, wanted: Sequence[str] | None) -> EvalData:
        """Keep only the named directions, in the order given; unknown names are an error."""
        if not wanted:
            return self
        chosen: dict[str, DirectionData] = {}
        for text in wanted:
            name = Direction.parse(text, "--directions").name
            if name not in self.directions:
                raise DataError(
                    f"direction {name!r} is not in the test set {self.path}; it has: {', '.join(self.directions)}"
                )
            chosen[name] = self.directions[name]
        return EvalData(self.path, self.format, chosen)


def load_eval_data(path: str | Path, directions: Sequence[str] | None = None) -> EvalData:
    """Read a FLORES-style folder or a JSONL file, optionally keeping only some directions."""
    path = Path(path)
    if path.is_dir():
        data = load_flores(path)
    elif path.is_file():
        data = load_jsonl(path)
    else:
        raise DataError(f"{path}: no such file or folder")
    data = data.select(directions)
    if not data.directions:
        raise DataError(f"{path}: the test set holds no direction to score")
    return data


# --------------------------------------------------------------------------- FLORES-style folder


def load_flores(folder: Path) -> EvalData:
    sets = _read_sets(folder)
    kind = "flores"
    if not sets:
        split = next((folder / name for name in FLORES200_SPLITS if (folder / name).is_dir()), None)
        if split is not None:
            logger.info("%s: reading Flores-200's %s split", folder, split.name)
            return load_flores(split)
        from m2m_tools.evaluation.documents import document_sets

        sets, kind = document_sets(folder, DataError), "documents"
    if not sets:
        raise DataError(
            f"{folder}: no language files; expected '<lang>.txt' or '<name>.<lang>' files with one segment a line, "
            "or one folder per language of documents with the same names"
        )
    listed = folder / DIRECTIONS_FILE
    if listed.is_file():
        wanted = parse_directions(listed.read_text(encoding="utf-8-sig").split("\n"), str(listed))
    else:
        wanted = _all_pairs(sets)
        logger.info("%s: no %s, scoring every pair of languages that share a set", folder, DIRECTIONS_FILE)
    directions = {}
    for direction in wanted:
        directions[direction.name] = _direction_from_sets(folder, sets, direction)
    return EvalData(folder, kind, directions)


def parse_directions(lines: Iterable[str], where: str) -> list[Direction]:
    out: list[Direction] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        direction = Direction.parse(text, f"{where}:{number}")
        if direction in out:
            raise DataError(f"{where}:{number}: direction {direction} is listed twice")
        out.append(direction)
    if not out:
        raise DataError(f"{where}: lists no direction")
    return out


def _read_sets(folder: Path) -> dict[str, dict[str, list[str]]]:
    """{set name: {lang: lines}}, with every set checked to be line-aligned."""
    sets: dict[str, dict[str, list[str]]] = {}
    origin: dict[tuple[str, str], Path] = {}
    for file in sorted(folder.iterdir()):
        split = _split_name(file)
        if split is None:
            continue
        name, lang = split
        sets.setdefault(name, {})[lang] = _read_lines(file)
        origin[name, lang] = file
    for name, languages in sets.items():
        counts = {lang: len(lines) for lang, lines in languages.items()}
        if len(set(counts.values())) > 1:
            described = ", ".join(f"{origin[name, lang].name}: {n}" for lang, n in sorted(counts.items()))
            raise DataError(
                f"{folder}: files of one set must be line-aligned, but their line counts differ ({described})"
            )
    return sets


def _split_name(file: Path) -> tuple[str, str] | None:
    if not file.is_file() or file.name.startswith(".") or file.name == DIRECTIONS_FILE:
        return None
    stem, dot, suffix = file.name.rpartition(".")
    if not dot:
        return None
    if suffix == "txt":
        # `<lang>.txt`: all such files form the unnamed set.
        return ("", stem) if _LANG_RE.fullmatch(stem) else None
    if suffix in FLORES200_SPLITS and _FLORES200_CODE.fullmatch(stem):
        return suffix, stem  # `eng_Latn.devtest`: the split is the set
    if suffix.lower() in _NOT_LANGUAGES or not _LANG_RE.fullmatch(suffix):
        return None
    return stem, suffix


def _read_lines(file: Path) -> list[str]:
    try:
        text = file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{file}: not UTF-8 ({exc})") from exc
    # Split on "\n" only: str.splitlines would also split on U+2028, form feeds, etc., which can
    # occur inside a segment and would silently shift every later line.
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line, it does not start another
    return lines


def _all_pairs(sets: dict[str, dict[str, list[str]]]) -> list[Direction]:
    pairs = {Direction(a, b) for languages in sets.values() for a, b in permutations(languages, 2)}
    return sorted(pairs)


def _direction_from_sets(folder: Path, sets: dict[str, dict[str, list[str]]], direction: Direction) -> DirectionData:
    sources: list[str] = []
    references: list[str] = []
    for name in sorted(sets):
        languages = sets[name]
        if direction.source in languages and direction.target in languages:
            sources += languages[direction.source]
            references += languages[direction.target]
    if not sources:
        known = sorted({lang for languages in sets.values() for lang in languages})
        raise DataError(
            f"{folder}: direction {direction} is unknown: no set has files for both {direction.source!r} and "
            f"{direction.target!r} (languages present: {', '.join(known)})"
        )
    return DirectionData(direction, tuple(sources), tuple(references))


# --------------------------------------------------------------------------- JSONL


def load_jsonl(path: Path) -> EvalData:
    collected: dict[Direction, tuple[list[str], list[str]]] = {}
    with path.open(encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            direction, source, reference = _parse_jsonl_line(line, where)
            sources, references = collected.setdefault(direction, ([], []))
            sources.append(source)
            references.append(reference)
    if not collected:
        raise DataError(f"{path}: no segments; expected one JSON object a line with {', '.join(_JSONL_FIELDS)}")
    directions = {d.name: DirectionData(d, tuple(s), tuple(r)) for d, (s, r) in collected.items()}
    return EvalData(path, "jsonl", directions)


def _parse_jsonl_line(line: str, where: str) -> tuple[Direction, str, str]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object with {', '.join(_JSONL_FIELDS)}")
    missing = [name for name in _JSONL_FIELDS if name not in row]
    if missing:
        raise DataError(f"{where}: missing field(s) {', '.join(missing)}")
    wrong = [name for name in _JSONL_FIELDS if not isinstance(row[name], str)]
    if wrong:
        raise DataError(f"{where}: field(s) {', '.join(wrong)} must be strings")
    for name in ("src_lang", "tgt_lang"):
        if not _LANG_RE.fullmatch(row[name]):
            raise DataError(f"{where}: {name} {row[name]!r} is not a language code such as 'en' or 'eng_Latn'")
    direction = Direction.parse(f"{row['src_lang']}-{row['tgt_lang']}", where)
    return direction, row["source"], row["reference"]
