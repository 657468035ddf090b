"""Parallel documents for `m2m-eval`: a folder of one subfolder per language (`en/`, `fr/`), each
holding documents of the same names (`en/manual.docx`, `fr/manual.docx`), any format the
service's `POST /documents` reads, read by the service's own readers (translator/documents).

A document's text units are its segments, so the documents of one name must have as many units
in every language (a document as `m2m-translate` or `POST /documents` translates it has). A name
is a set, as a FLORES folder's `<name>.<lang>` files are (m2m_tools/evaluation/data.py). A unit
with inline formatting (a .docx's bold run, HTML's `<b>`) is scored and translated as its plain
text: the scores measure the words, not the placement of tags.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from translator.contract.errors import TranslationError
from translator.documents.formats import read_document_safely, supported

_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:_[A-Za-z]{4})?")
# Their reader's units are the source side in every language's copy (a .po's msgid): no use here.
_BILINGUAL = frozenset({".po", ".pot", ".xlf", ".xliff"})
_TAG = re.compile(r"<[^>]*>")


def document_sets(folder: Path, error: type[ValueError]) -> dict[str, dict[str, list[str]]]:
    """{document name: {lang: its units' plain texts}}, every name's languages checked to align;
    problems raise `error` (the evaluation's DataError) naming the file."""
    sets: dict[str, dict[str, list[str]]] = {}
    formats = set(supported()) - _BILINGUAL
    for language in sorted(p for p in folder.iterdir() if p.is_dir() and _LANGUAGE.fullmatch(p.name)):
        for file in sorted(language.rglob("*")):
            name = file.relative_to(language).as_posix()
            if not file.is_file() or any(part.startswith(".") for part in name.split("/")):
                continue
            if file.suffix.lower() in _BILINGUAL:
                raise error(f"{file}: holds source and translation in one file; give its pairs as JSONL instead")
            if file.suffix.lower() not in formats:
                raise error(f"{file}: not a document format m2m-eval reads ({', '.join(sorted(formats))})")
            sets.setdefault(name, {})[language.name] = _units(file, error)
    for name, languages in sets.items():
        counts = {lang: len(units) for lang, units in languages.items()}
        if len(set(counts.values())) > 1:
            described = ", ".join(f"{lang}: {n}" for lang, n in sorted(counts.items()))
            raise error(
                f"{folder}: the documents named {name} must have as many text units in every language, "
                f"but they differ ({described})"
            )
    return sets


def _units(file: Path, error: type[ValueError]) -> list[str]:
    try:
        document = read_document_safely(file.name, file.read_bytes())
    except TranslationError as exc:
        raise error(f"{file}: {exc.message}") from exc
    except OSError as exc:
        raise error(f"cannot read {file}: {exc.strerror or exc}") from exc
    return [html.unescape(_TAG.sub("", unit.text)) if unit.fmt == "html" else unit.text for unit in document.units]
