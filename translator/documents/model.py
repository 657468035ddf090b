"""What every format gives the job runner: the file's text as units, and a writer that puts the
translations back.

A unit is a record of the native API: its text, in "text" or "html" format. Inline formatting (a
bold run in a .docx) is expressed as HTML inline tags around its words, so that the HTML path's
placement (translator/text/placement.py) keeps each run around the words it covered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from translator.contract.errors import InvalidRequest, PayloadTooLarge, TranslationError

if TYPE_CHECKING:
    from translator.documents.encoding import TextEncoding

# An uploaded file: what the API workers read into memory in one piece (the edge's body limit is
# the bound of the upload itself; this bounds what a zip may expand to).
MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
MAX_ZIP_ENTRIES = 2_000
# Units of one document (each one record): a bound on the job's work, far past a book.
MAX_UNITS = 200_000


class Part(Enum):
    """What of an upload a refusal is about; each API names it as its own field
    (translator/api/documents.py), the readers say only what is wrong with it."""

    CONTENT = "content"  # the file: its bytes, its format
    ENCODING = "encoding"  # the text encoding the client named for the file


class UnsupportedDocument(TranslationError):
    """A file of a format not translated (PDF, images) or not recognised from its name."""

    status = 415
    part = Part.CONTENT


class BadDocument(InvalidRequest):
    """A file of a supported format that cannot be read: not a zip, encrypted, malformed; or not
    in the encoding its client named (`part` ENCODING)."""

    def __init__(self, message: str, part: Part = Part.CONTENT, **detail: Any) -> None:
        super().__init__(message, **detail)
        self.part = part


class TooLarge(PayloadTooLarge):
    """A file past a bound on what a document may hold (its zip's expansion, its units)."""

    part = Part.CONTENT

    def __init__(self, what: str, limit: int, got: int | None = None) -> None:
        super().__init__(what, limit, got)
        self.what, self.limit, self.got = what, limit, got


@dataclass(frozen=True)
class Unit:
    text: str
    fmt: str = "text"  # "text" or "html", as the native API's `format`


@dataclass
class Document:
    units: list[Unit]
    # The translations of `units`, in order, to the translated file's bytes.
    write: Callable[[list[str]], bytes]
    # Of the file `write` wrote last: a text file's writer settles its charset then (`text_document`).
    content_type: str
    # What the last `write` left as it was, each with where and why (a message whose placeholders did
    # not come back): the job reports them, so that it never says `done` over text left silently.
    kept: list[str] = field(default_factory=list)

    def keep(self, where: str, why: str) -> None:
        self.kept.append(f"{where}: {why}")


# Why a catalog's ICU message is kept as it was (translator/text/icu.py's join gave None).
ICU_KEPT = "an ICU message whose arguments did not all come back in the translation, kept as it was"


@dataclass(frozen=True)
class ReadOptions:
    """What a reader is told besides the file's bytes (every reader takes `(data, options)`)."""

    # The language the file is translated into: written into it (XLIFF's target language), and
    # what its plural forms follow (a PO file's).
    target: str = ""
    # A text file's encoding as the client named it; None: declared by the file, or detected.
    encoding: TextEncoding | None = None


NO_OPTIONS = ReadOptions()
# Every format's reader: the file's bytes and the options to its Document.
Reader = Callable[[bytes, ReadOptions], Document]


def text_document(units: list[Unit], render: Callable[[list[str]], str], mime: str, encoding: TextEncoding) -> Document:
    """A text file's document: `render` makes the translated text from the units' translations;
    it is written in the file's encoding, or in UTF-8 where that cannot hold it, as the content
    type then says."""

    def write(translations: list[str]) -> bytes:
        data, charset = encoding.encode(render(translations))
        document.content_type = f"{mime}; charset={charset}"
        return data

    document = Document(units, write, f"{mime}; charset={encoding.charset}")
    return document
