"""Which reader takes a file, from its name's extension."""

from __future__ import annotations

import os
from collections.abc import Callable

from translator.contract.errors import InvalidRequest, TranslationError
from translator.documents import i18n, markdown, ooxml, packages, plaintext, po, web, xliff
from translator.documents.model import BadDocument, Document, TextEncoding, UnsupportedDocument, named_encoding

READERS: dict[str, Callable[[bytes], Document]] = {
    ".docx": ooxml.read_docx,
    ".pptx": ooxml.read_pptx,
    ".json": i18n.read_json,
    ".yaml": i18n.read_yaml,
    ".yml": i18n.read_yaml,
    ".xlsx": packages.read_xlsx,
    ".odt": lambda data: packages.read_odf(data, "odt"),
    ".odp": lambda data: packages.read_odf(data, "odp"),
    ".ods": lambda data: packages.read_odf(data, "ods"),
    ".epub": packages.read_epub,
    ".xhtml": web.read_xhtml,
}
# Text formats that say nothing of their encoding (an HTML page's <meta> aside): read in the one a
# client names (the `encoding` field), else in UTF-8 or the one detection finds. Every other format
# declares its own (XML's declaration, a PO header's charset, JSON's and YAML's Unicode, zips of XML).
TEXT_READERS: dict[str, Callable[[bytes, TextEncoding | None], Document]] = {
    ".txt": plaintext.read_text,
    ".srt": lambda data, encoding: plaintext.read_subtitles(data, False, encoding),
    ".vtt": lambda data, encoding: plaintext.read_subtitles(data, True, encoding),
    ".html": web.read_html,
    ".htm": web.read_html,
    ".md": markdown.read_markdown,
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
    return sorted([*TEXT_READERS, *READERS, *TARGETED])


def read_document(filename: str, data: bytes, target: str = "", encoding: str | None = None) -> Document:
    """`encoding`: the file's encoding as the client named it, for a text format (TEXT_READERS)."""
    ext = extension(filename)
    if encoding:
        if ext not in TEXT_READERS:
            raise InvalidRequest(
                f"encoding: a {ext or 'file without an extension'} file is read in the encoding it declares "
                f"itself; the field is for {', '.join(TEXT_READERS)}",
                field="encoding",
            )
        return TEXT_READERS[ext](data, named_encoding(encoding))
    if ext in TEXT_READERS:
        return TEXT_READERS[ext](data, None)
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


def read_document_safely(filename: str, data: bytes, target: str = "", encoding: str | None = None) -> Document:
    """`read_document`, with any other failure of a parser on a malformed file a 400 naming the
    format: a file is untrusted input, and no file may get a 500."""
    try:
        return read_document(filename, data, target, encoding)
    except TranslationError:
        raise
    except RecursionError as exc:
        raise BadDocument(f"file: this {extension(filename)} file is nested too deeply to read") from exc
    except Exception as exc:
        raise BadDocument(
            f"file: this {extension(filename)} file cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc
