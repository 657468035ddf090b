"""Which reader takes a file, from its name's extension."""

from __future__ import annotations

import os

from translator.contract.errors import TranslationError
from translator.documents import (
    epub,
    html,
    json_catalogs,
    markdown,
    odf,
    ooxml,
    po,
    subtitles,
    text,
    xliff,
    xlsx,
    yaml_catalogs,
)
from translator.documents.encoding import named_encoding
from translator.documents.model import BadDocument, Document, Part, Reader, ReadOptions, UnsupportedDocument

# Every reader takes the file's bytes and the same options (translator/documents/model.py).
READERS: dict[str, Reader] = {
    ".txt": text.read_text,
    ".srt": subtitles.read_srt,
    ".vtt": subtitles.read_vtt,
    ".html": html.read_html,
    ".htm": html.read_html,
    ".xhtml": html.read_xhtml,
    ".md": markdown.read_markdown,
    ".docx": ooxml.read_docx,
    ".pptx": ooxml.read_pptx,
    ".xlsx": xlsx.read_xlsx,
    ".odt": odf.read_odt,
    ".odp": odf.read_odp,
    ".ods": odf.read_ods,
    ".epub": epub.read_epub,
    ".json": json_catalogs.read_json,
    ".yaml": yaml_catalogs.read_yaml,
    ".yml": yaml_catalogs.read_yaml,
    ".xlf": xliff.read_xliff,
    ".xliff": xliff.read_xliff,
    ".po": po.read_po,
    ".pot": po.read_po,
}
# Text formats that say nothing of their encoding (an HTML page's <meta> aside): read in the one a
# client names with the file, else in UTF-8 or the one detection finds. Every other format
# declares its own (XML's declaration, a PO header's charset, JSON's and YAML's Unicode, zips of XML).
NAMED_ENCODING = (".txt", ".srt", ".vtt", ".html", ".htm", ".md")
# Named in the refusal, so that a client knows it is the format, not the file.
NOT_TRANSLATED = {".pdf": "PDF is not translated (out of scope): convert it to .docx or .txt first"}


def extension(filename: str) -> str:
    return os.path.splitext(filename)[1].lower()


def supported() -> list[str]:
    return sorted(READERS)


def read_document(filename: str, data: bytes, target: str = "", encoding: str | None = None) -> Document:
    """`encoding`: the file's encoding as the client named it, for a text format (NAMED_ENCODING)."""
    ext = extension(filename)
    if encoding and ext not in NAMED_ENCODING:
        raise BadDocument(
            f"a {ext or 'file without an extension'} file is read in the encoding it declares "
            f"itself; the field is for {', '.join(NAMED_ENCODING)}",
            Part.ENCODING,
        )
    if ext in NOT_TRANSLATED:
        raise UnsupportedDocument(NOT_TRANSLATED[ext])
    reader = READERS.get(ext)
    if reader is None:
        raise UnsupportedDocument(
            f"{ext or 'a file without an extension'} is not a supported format; supported: {', '.join(supported())}"
        )
    return reader(data, ReadOptions(target, named_encoding(encoding) if encoding else None))


def read_document_safely(filename: str, data: bytes, target: str = "", encoding: str | None = None) -> Document:
    """`read_document`, with any other failure of a parser on a malformed file a 400 naming the
    format: a file is untrusted input, and no file may get a 500."""
    try:
        return read_document(filename, data, target, encoding)
    except TranslationError:
        raise
    except RecursionError as exc:
        raise BadDocument(f"this {extension(filename)} file is nested too deeply to read") from exc
    except Exception as exc:
        raise BadDocument(
            f"this {extension(filename)} file cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc
