"""The files a memory is imported from and exported as: TMX, PO/POT, XLIFF, CSV/TSV in, TMX out.

`read_memory_file` picks the reader by the file's extension; each gives the segments people
translated and counts what it left out (untranslated, fuzzy, machine-made...), with a note for
the first few. TMX is read and written by translator/memory/tmx.py, XLIFF read by
translator/memory/xliff.py; PO and CSV are read here.

PO: the translated entries that are not fuzzy, obsolete (`#~`) or the header, with gettext's own
grammar (translator/documents/po_syntax.py) in the file's charset. A plural entry gives its
msgid with msgstr[0] and its msgid_plural with its last form: English has two forms and most
languages more, and no form of theirs is "the plural" for every number, so the last (`other` or
`many` in CLDR's order: 2 in German, 5 in Russian) stands for it, as it does when a memory made by
translate-toolkit's po2tmx (a segment per form, the later replacing the earlier) is matched.
The source language is the client's (a PO file does not say it), the target the header's
`Language`, else the client's.

CSV (comma, or semicolon where the first line has only those, as spreadsheets in many locales
write it) and TSV, in UTF-8 (a byte-order mark allowed): either two columns, source and target,
the languages the client's; or a first row of language codes (`en,de,fr`), the first column the
source and each other a target.
"""

from __future__ import annotations

import csv
import io
import os
import re

from translator.contract.errors import InvalidRequest, PayloadTooLarge
from translator.documents.model import BadDocument
from translator.documents.po_charset import declared_charset, decode_lines
from translator.documents.po_syntax import header_entry, header_field, parse_entries
from translator.memory.model import MAX_SEGMENT_CHARS, Imported
from translator.memory.reading import Collector, base_language, refused, same_language
from translator.memory.tmx import read_tmx, write_tmx
from translator.memory.xliff import read_xliff

__all__ = ["ACCEPTED", "base_language", "read_memory_file", "write_tmx"]

ACCEPTED = (".tmx", ".po", ".pot", ".xlf", ".xliff", ".csv", ".tsv")
# A cell of a header row that names a language: `en`, `pt-BR`, `zh_Hant`, `sr@latin`.
_CODE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*(?:@[a-z]+)?")


def read_memory_file(filename: str, data: bytes, source_lang: str | None, target_lang: str | None) -> Imported:
    """The segments of a memory file, read by its extension; `source_lang` and `target_lang` are
    the client's, where it named them (a TMX keeps only units of `target_lang`)."""
    extension = os.path.splitext(filename)[1].lower()
    if extension == ".tmx":
        return read_tmx(data, source_lang, target_lang)
    if extension in (".xlf", ".xliff"):
        return read_xliff(data, source_lang, target_lang)
    if extension in (".po", ".pot"):
        return _read_po(data, source_lang, target_lang)
    if extension in (".csv", ".tsv"):
        return _read_table(data, source_lang, target_lang, "\t" if extension == ".tsv" else None)
    named = f"{filename!r}" if filename else "a file without a name"
    raise refused(f"{named} is not a memory file this service reads; accepted: {', '.join(ACCEPTED)}")


def _read_po(data: bytes, source_lang: str | None, target_lang: str | None) -> Imported:
    if not source_lang:
        raise InvalidRequest("sourceLang: required for a PO file (the language of its msgids)")
    try:
        declared = declared_charset(data)
        lines, _, _ = decode_lines(data, declared[0] if declared else None)
        entries = parse_entries(lines)
    except BadDocument as exc:
        raise refused(exc.message) from None
    header = header_entry(entries)
    language = (header_field(header, "Language") or "").strip() or target_lang
    if not language:
        raise InvalidRequest("targetLang: required: this PO file's header names no Language")
    collected = Collector(source_lang, "PO")
    for entry in entries:
        if entry.obsolete and "msgid" not in entry.fields:  # its lines are comments, `#~ msgid ...`
            collected.skip("an obsolete entry (#~)")
        if entry is header or "msgid" not in entry.fields:
            continue
        where = f"line {entry.first + 1}"
        forms = [entry.fields[name].value for name in entry.forms()]
        if entry.obsolete:
            collected.skip(f"{where}: an obsolete entry (#~)")
        elif entry.fuzzy(lines):
            collected.skip(f"{where}: a fuzzy entry")
        elif not all(forms):
            collected.skip(f"{where}: untranslated")
        else:
            msgid = entry.fields["msgid"].value
            collected.add(where, msgid, language, forms[0])
            plural = entry.fields.get("msgid_plural")
            if plural is not None and plural.value != msgid:
                collected.add(where, plural.value, language, forms[-1])
    return collected.imported


def _read_table(data: bytes, source_lang: str | None, target_lang: str | None, delimiter: str | None) -> Imported:
    kind = "TSV" if delimiter else "CSV"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise refused(
            f"this {kind} file is not UTF-8 text ({exc.reason} at byte {exc.start}, line {line}); save it as UTF-8"
        ) from None
    if delimiter is None:
        first = text.split("\n", 1)[0]
        delimiter = ";" if ";" in first and "," not in first else ","
    rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    collected: Collector | None = None
    languages: list[str] = []
    last = 0
    try:
        for row in rows:
            line, last = last + 1, rows.line_num
            if not any(cell.strip() for cell in row):
                continue
            if collected is None:
                languages = _header(row, source_lang, target_lang)
                if not languages and not (source_lang and target_lang):
                    raise InvalidRequest(
                        f"sourceLang, targetLang: required: this {kind} file's first row is not a row of "
                        "language codes (en,de,...), so the client names its two columns' languages"
                    )
                collected = Collector(source_lang or languages[0], kind)
                if languages:
                    continue
            _read_row(
                row, line, languages or [collected.imported.source_lang, target_lang or ""], collected, target_lang
            )
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise PayloadTooLarge(
                f"file: a cell at line {rows.line_num} of this {kind} file", MAX_SEGMENT_CHARS
            ) from None
        raise refused(f"line {rows.line_num} of this {kind} file cannot be read: {exc}") from None
    if collected is None:
        raise refused(f"this {kind} file has no rows")
    return collected.imported


def _header(row: list[str], source_lang: str | None, target_lang: str | None) -> list[str]:
    """The languages a first row names, or none where it is a row of text: where the client named
    languages, the row names them too (a two-column `yes,ja` is text when the client says en, de)."""
    cells = [cell.strip() for cell in row]
    if len(cells) < 2 or not all(_CODE.fullmatch(cell) for cell in cells):
        return []
    if source_lang and not same_language(cells[0], source_lang):
        return []
    if target_lang and not any(same_language(cell, target_lang) for cell in cells[1:]):
        return []
    return cells


def _read_row(row: list[str], line: int, languages: list[str], collected: Collector, target_lang: str | None) -> None:
    kind = collected.kind
    if len(row) > len(languages):
        raise refused(
            f"line {line} of this {kind} file has {len(row)} columns, {len(languages)} expected "
            "(the source, then a translation a column)"
        )
    for column, lang in enumerate(languages[1:], start=1):
        if target_lang and not same_language(lang, target_lang):
            continue
        collected.add(f"line {line}", row[0], lang, row[column] if column < len(row) else "")
