"""A PO file's charset, at the byte level: the charset its header declares (found in its bytes as
gettext finds it, the header being ASCII in every charset gettext takes), its lines decoded in it
(a legacy charset's lines kept as bytes too, so that lines not edited are written back byte for
byte), and the lines written back encoded.

Apart from translator/documents/po.py because it is about bytes and codecs, not entries: the reader
gets text lines from here and hands its edits back here to be encoded.
"""

from __future__ import annotations

import codecs
import re

from translator.documents.encoding import (
    UTF8,
    Declaration,
    TextEncoding,
    decode_declared,
    decode_text,
    marked,
    text_codec,
)
from translator.documents.model import BadDocument

_LINES = re.compile(r"[^\n]*\n|[^\n]+")
_BYTE_LINES = re.compile(rb"[^\n]*\n|[^\n]+")
# The header entry at the top of the file (comments and blank lines before it), its msgstr's
# string lines captured; and the charset its Content-Type names. Bytes, read as ASCII: the header
# is ASCII in every charset gettext takes, and the charset must be known before the rest is read.
_HEADER_BYTES = re.compile(
    rb'(?:[ \t]*(?:#[^\n]*)?\r?\n)*?[ \t]*msgid[ \t]+""[ \t]*\r?\n[ \t]*msgstr[ \t]+((?:"[^\n]*(?:\n|$)[ \t]*)+)'
)
_CHARSET = re.compile(rb"Content-Type:[^\n]*?charset=([A-Za-z0-9_.:+-]+)", re.IGNORECASE)
HEADER_CHARSET = Declaration(
    unsupported=(
        "this PO file's charset {label!r} (its header's Content-Type) is not one this service reads; "
        "convert it to UTF-8 (msgconv -t UTF-8)"
    ),
    mismatch="this PO file is not {label} text as its header declares",
)
# Charsets Python reads whose ASCII bytes mean other characters after an escape sequence: a PO
# file in them cannot be read line by line (nor does gettext take them).
_STATEFUL = ("iso2022", "hz")


def declared_charset(data: bytes) -> tuple[str, int, int] | None:
    """The charset the header's Content-Type names, as written, and where: its line and column."""
    start = len(mark.bom) if (mark := marked(data)) is not None else 0
    header = _HEADER_BYTES.match(data, start)
    if header is None:
        return None
    charset = _CHARSET.search(data, header.start(1), header.end(1))
    if charset is None:
        return None
    line_start = data.rfind(b"\n", 0, charset.start(1)) + 1
    return charset.group(1).decode("ascii"), data.count(b"\n", 0, line_start), charset.start(1) - line_start


def decode_lines(data: bytes, charset: str | None) -> tuple[list[str], list[bytes] | None, TextEncoding]:
    """The file's lines, its lines' bytes where it is in a legacy charset (written back as they
    were where not edited), and the encoding to write it in (a byte-order mark and its byte order kept)."""
    codec = None
    if charset is not None and marked(data) is None:
        codec = text_codec(charset)
    if codec is None or codec.startswith("utf"):
        # UTF-8, or UTF-16 with its BOM; also where the header names a charset Python does not know
        # (a template's `CHARSET`)
        try:
            text, encoding = decode_text(data, "PO")
        except BadDocument:
            if charset is None or codec is not None or charset.upper() == "CHARSET":
                raise
            raise BadDocument(HEADER_CHARSET.unsupported.format(label=charset)) from None
        return _LINES.findall(text), None, encoding
    if codec.startswith(_STATEFUL):
        raise BadDocument(
            f"this PO file's charset {charset!r} (its header's Content-Type) switches state with escape "
            "sequences, which gettext does not take either; convert it to UTF-8 (msgconv -t UTF-8)"
        )
    _, encoding = decode_declared(data, charset or codec, HEADER_CHARSET)
    # Line by line as well, each line's bytes kept: the file decoded whole, each of its lines does
    # (no byte of a line break is inside a character in the ASCII-compatible charsets gettext takes).
    raw = _BYTE_LINES.findall(data)
    return [line.decode(codec) for line in raw], raw, encoding


def names_utf8(charset: str | None) -> bool:
    try:
        return charset is None or codecs.lookup(charset).name in ("utf-8", "utf-16")
    except LookupError:
        return False


def po_content_type(charset: str | None) -> str:
    return f"text/x-gettext-translation; charset={charset or UTF8.charset}"


def encoded_lines(
    lines: list[str], raw: list[bytes] | None, edits: list[tuple[int, int, list[str]]], encoding: TextEncoding
) -> bytes:
    """The lines with the edits made, in `encoding`; the lines not edited as `raw` has them, where given."""
    out: list[str | bytes] = list(raw) if raw is not None else list(lines)
    for start, end, replacement in sorted(edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
        out[start:end] = replacement
    if raw is None:  # whole, after its byte-order mark (UTF-16's, UTF-8's), if it had one
        return encoding.bom + "".join(out).encode(encoding.codec)  # type: ignore[arg-type]
    return b"".join(piece if isinstance(piece, bytes) else piece.encode(encoding.codec) for piece in out)
