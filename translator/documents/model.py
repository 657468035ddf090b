"""What every format gives the job runner: the file's text as units, and a writer that puts the
translations back.

A unit is a record of the native API: its text, in "text" or "html" format. Inline formatting (a
bold run in a .docx) is expressed as HTML inline tags around its words, so that the HTML path's
placement (translator/text/placement.py) keeps each run around the words it covered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from translator.contract.errors import InvalidRequest, PayloadTooLarge, TranslationError

# An uploaded file: what the API workers read into memory in one piece (the edge's body limit is
# the bound of the upload itself; this bounds what a zip may expand to).
MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
MAX_ZIP_ENTRIES = 2_000
# Units of one document (each one record): a bound on the job's work, far past a book.
MAX_UNITS = 200_000


class UnsupportedDocument(TranslationError):
    """A file of a format not translated (PDF, images) or not recognised from its name."""

    status = 415


class BadDocument(InvalidRequest):
    """A file of a supported format that cannot be read: not a zip, encrypted, malformed."""


@dataclass(frozen=True)
class Unit:
    text: str
    fmt: str = "text"  # "text" or "html", as the native API's `format`


@dataclass
class Document:
    units: list[Unit]
    # The translations of `units`, in order, to the translated file's bytes.
    write: Callable[[list[str]], bytes]
    content_type: str


def too_large(what: str, limit: int, got: int | None = None) -> PayloadTooLarge:
    return PayloadTooLarge(f"file: {what}", limit, got)


def decode_text(data: bytes, what: str) -> tuple[str, str]:
    """The text of a text file and its encoding (UTF-8 with or without BOM, or UTF-16 with BOM)."""
    boms = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
    encoding = next((name for bom, name in boms if data.startswith(bom)), "utf-8")
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        raise BadDocument(
            f"file: the {what} file is not UTF-8 or UTF-16 text ({exc.reason} at byte {exc.start})"
        ) from exc
