"""HTML files.

HTML is cut into fragments at block boundaries (translator/text/markup.py's BREAK tokens, which
no sentence crosses), each a unit of the HTML path within the native API's per-record limit: the
tokens are lossless, so the fragments rejoined are the file, with only text changed. (EPUB's XHTML
chapters go through fragments_of too: translator/documents/epub.py. Markdown files:
translator/documents/markdown.py.)
"""

from __future__ import annotations

import re

from translator.contract import limits
from translator.documents.encoding import (
    Declaration,
    TextEncoding,
    decode_declared,
    decode_legacy_text,
    marked,
    text_codec,
)
from translator.documents.model import NO_OPTIONS, BadDocument, Document, ReadOptions, Unit
from translator.text.markup import BREAK, TEXT, html_tokens

# Well under the per-record limit: a fragment is one record.
FRAGMENT_CHARS = limits.MAX_CHARS_PER_RECORD // 2


def fragments_of(source: str) -> list[str]:
    """The source cut at block boundaries into fragments of about FRAGMENT_CHARS, rejoined the source."""
    fragments: list[str] = []
    current: list[str] = []
    size = 0
    for token in html_tokens(source):
        if token.kind == BREAK and size >= FRAGMENT_CHARS:
            fragments.append("".join(current))
            current, size = [], 0
        current.append(token.raw)
        size += len(token.raw)
    fragments.append("".join(current))
    return fragments


# The charset a page names in a <meta> within its first 1,024 bytes (the HTML standard's prescan),
# `<meta charset=...>` or `<meta http-equiv="Content-Type" content="...; charset=...">`.
_META_CHARSET = re.compile(rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
PRESCAN_BYTES = 1024
# A <meta> naming no text encoding is taken as no <meta> (`decode_html`): `unsupported` is not said.
META_CHARSET = Declaration(
    unsupported="the HTML file declares charset={label} in a <meta>, which is not a text encoding",
    mismatch="the HTML file declares charset={label} in a <meta> but is not {label} text",
)


def decode_html(data: bytes, declared: TextEncoding | None = None) -> tuple[str, TextEncoding]:
    """A page's text and encoding as a browser finds them: a byte-order mark, else the encoding the
    client declared (as a Content-Type's charset is taken before the page's own), else the charset
    its <meta> names, else (nothing said) UTF-8 or the legacy encoding detection finds with confidence."""
    match = None if marked(data) is not None or declared else _META_CHARSET.search(data[:PRESCAN_BYTES])
    if match is not None:
        label = match.group(1).decode("ascii").lower()
        codec = text_codec(label) or ""  # a name no text codec has: as if none were given
        # The standard reads a <meta> naming UTF-16 as UTF-8: the bytes of a page it could be read in
        # are ASCII-compatible.
        if codec and not codec.startswith("utf-16") and codec != "utf-8":
            return decode_declared(data, label, META_CHARSET)
    return decode_legacy_text(data, "HTML", declared)


def read_html(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    source, encoding = decode_html(data, options.encoding)
    fragments = fragments_of(source)
    slots = [i for i, f in enumerate(fragments) if any(t.kind == TEXT and t.text.strip() for t in html_tokens(f))]

    def write(translations: list[str]) -> bytes:
        out = list(fragments)
        for index, translation in zip(slots, translations, strict=True):
            out[index] = translation
        # In the page's own encoding, whatever the translation's language: a character it cannot
        # hold is written as a character reference, which HTML reads as the character (its <meta>
        # stays true, where a page turned to UTF-8 would still name the old charset).
        return encoding.bom + "".join(out).encode(encoding.codec, errors="xmlcharrefreplace")

    return Document([Unit(fragments[i], "html") for i in slots], write, f"text/html; charset={encoding.charset}")


def read_xhtml(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    """An XHTML page (.xhtml): XML, so read as XML declares it (its encoding from the declaration
    or a byte-order mark, a file that is not well-formed refused), and translated as HTML is, as
    EPUB's chapters are: only text changes, every tag and declaration comes back as it was."""
    from translator.documents import xmltext
    from translator.documents.ooxml import parse_xml

    try:
        root = parse_xml(data, "page")
    except BadDocument as exc:  # named as a page, not as a part of a package
        raise BadDocument(str(exc).replace("part 'page'", "this .xhtml page")) from exc
    text, codec = xmltext.decode(data, root)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    fragments = fragments_of(text[len(bom) :])
    slots = [i for i, f in enumerate(fragments) if any(t.kind == TEXT and t.text.strip() for t in html_tokens(f))]

    def write(translations: list[str]) -> bytes:
        out = list(fragments)
        for index, translation in zip(slots, translations, strict=True):
            out[index] = translation
        return xmltext.encode(bom + "".join(out), codec)

    return Document([Unit(fragments[i], "html") for i in slots], write, f"application/xhtml+xml; charset={codec}")
