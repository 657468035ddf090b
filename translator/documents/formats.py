"""Which reader takes a file, from its name's extension."""

from __future__ import annotations

import os
from collections.abc import Callable

from translator.contract.errors import TranslationError
from translator.documents import i18n, markdown, ooxml, packages, plaintext, po, web, xliff
from translator.documents.model import BadDocument, Document, UnsupportedDocument

READERS: dict[str, Callable[[bytes], Document]] = {
    ".txt": plaintext.read_text,
    ".srt": lambda data: plaintext.read_subtitles(data, webvtt=False),
    ".vtt": lambda data: plaintext.read_subtitles(data, webvtt=True),
    ".docx": ooxml.read_docx,
    ".pptx": ooxml.read_pptx,
    ".html": web.read_html,
    ".htm": web.read_html,
    ".md": markdown.read_markdown,
    ".json": i18n.read_json,
    ".yaml": i18n.read_yaml,
    ".yml": i18n.read_yaml,
    ".xlsx": packages.read_xlsx,
    ".odt": lambda data: packages.read_odf(data, "odt"),
    ".odp": lambda data: packages.read_odf(data, "odp"),
    ".ods": lambda data: packages.read_odf(data, "ods"),
    ".epub": packages.read_epub,
}
# Readers that need the target language (written into the file; a PO file's plural forms).
TARGETED: dict[str, Callable[[bytes, str], Document]] = {
    ".xlf": xliff.read_xliff,
    ".xliff": xliff.read_xliff,
    ".po": po.read_po,
    ".pot": po.read_po,
}
# Named in the refusal, so that a client knows it is the format, not the file.
NOT_TRANSLATED = {".pdf": "PDF is not translated (out of scope): convert it to .docx or .txt first"}


def extension(filename: str) -> str:
    return os.path.splitext(filename)[1].lower()


def supported() -> list[str]:
    return sorted([*READERS, *TARGETED])


def read_document(filename: str, data: bytes, target: str = "") -> Document:
    ext = extension(filename)
    if ext in TARGETED:
        return TARGETED[ext](data, target)
    if ext in NOT_TRANSLATED:
        raise UnsupportedDocument(f"file: {NOT_TRANSLATED[ext]}", field="file")
    reader = READERS.get(ext)
    if reader is None:
        raise UnsupportedDocument(
            f"file: {ext or 'a file without an extension'} is not a supported format; "
            f"supported: {', '.join(supported())}",
            field="file",
        )
    return reader(data)


def read_document_safely(filename: str, data: bytes, target: str = "") -> Document:
    """`read_document`, with any other failure of a parser on a malformed file a 400 naming the
    format: a file is untrusted input, and no file may get a 500."""
    try:
        return read_document(filename, data, target)
    except TranslationError:
        raise
    except RecursionError as exc:
        raise BadDocument(f"file: this {extension(filename)} file is nested too deeply to read") from exc
    except Exception as exc:
        raise BadDocument(
            f"file: this {extension(filename)} file cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc
