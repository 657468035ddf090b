"""Where each element of an XML file stands in its text, to edit the file where it stands.

lxml reads a file (what to translate), but writing its tree back re-serializes every byte: entity
and character references become characters, single quotes double, the root's namespace
declarations move ahead of its other attributes. A writer that changes a few elements edits the
file's own text instead, at the places this scanner finds; the scanner trusts a text lxml has
already parsed (well-formed), and its elements are lxml's in document order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from translator.documents.encoding import Declaration, decode_declared, marked
from translator.documents.model import BadDocument

# The markup of a well-formed document, each construct whole (a `>` inside a quoted attribute
# value, a comment or CDATA does not end it); the text between constructs is never markup.
_MARKUP = re.compile(
    r"""<!--.*?-->
    | <!\[CDATA\[.*?\]\]>
    | <\?.*?\?>
    | <!DOCTYPE(?:[^\[>]|\[(?:"[^"]*"|'[^']*'|<!--.*?-->|[^\]"'])*\])*>
    | </(?P<end>[^\s>]+)\s*>
    | <(?P<start>[^\s/>]+)(?:"[^"]*"|'[^']*'|[^'">])*?(?P<empty>/)?>""",
    re.DOTALL | re.VERBOSE,
)
_ATTRIBUTE = re.compile(r"""(?P<name>[^\s<=/>"']+)\s*=\s*(?P<quote>["'])(?P<value>.*?)(?P=quote)""", re.DOTALL)
DECLARATION = Declaration(
    unsupported="this XML file's encoding {label!r} is not supported (use UTF-8)",
    mismatch="this XML file is not {label} text",
)
# Not representable in XML 1.0, even as a character reference.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(slots=True)
class Span:
    """One element in the text: `<name ...>` at [start, open_end), content [open_end, close),
    `</name>` at [close, end); an empty element (`<name/>`) has open_end == close == end."""

    name: str  # qualified as written (`xlf:target`)
    start: int
    open_end: int
    close: int
    end: int
    empty: bool
    previous: int  # the end of the markup before it (the text between is its leading white space)


def _scan(text: str) -> Iterator[Span]:
    """Each element's span in document order, given at its start tag; its end is filled in when
    the scan reaches its end tag."""
    open_: list[Span] = []
    previous = 0
    for match in _MARKUP.finditer(text):
        if match.group("start"):
            empty = match.group("empty") is not None
            span = Span(match.group("start"), match.start(), match.end(), match.end(), match.end(), empty, previous)
            if not empty:
                open_.append(span)
            yield span
        elif match.group("end") and open_:
            span = open_.pop()
            span.close, span.end = match.start(), match.end()
        previous = match.end()


def spans(text: str, root: Any, wanted: Iterable[Any]) -> dict[Any, Span]:
    """The spans in `text` of the `wanted` elements of lxml's tree `root` (parsed from `text`)."""
    from lxml import etree

    # Only the wanted are kept (a part's every element would be a Span and a proxy each).
    wanted = set(wanted)
    out: dict[Any, Span] = {}
    elements = root.iter(etree.Element)
    for span in _scan(text):
        element = next(elements, None)
        if element is None or etree.QName(element).localname != span.name.rpartition(":")[2]:
            break
        if element in wanted:
            out[element] = span
    else:
        if next(elements, None) is None:
            return out
    # A construct the scanner does not know (lxml read the file): refused rather than a wrong edit.
    raise BadDocument("this XML file's markup could not be located to edit it where it stands")


def start_tag(serialized: str) -> str:
    """The start tag an element's serialization begins with."""
    return _MARKUP.match(serialized).group()  # type: ignore[union-attr]


def indent(text: str, span: Span) -> str:
    """The white space `span`'s element starts its line with (or follows its neighbour with)."""
    before = text[span.previous : span.start]
    return before[len(before.rstrip()) :]


def line_end(text: str) -> str:
    """The file's own line ending (a Windows-edited file's CRLF)."""
    match = re.search(r"\r\n|\n|\r", text)
    return match.group() if match else "\n"


def escape_text(value: str, eol: str) -> str:
    """`value` as element content; its line breaks in the file's line ending (a parser reads them
    back as `\\n`), a lone carriage return as a reference, which is how it survives parsing."""
    value = _NOT_XML.sub("", value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return value.replace("\r", "&#13;").replace("\n", eol)


def escape_attribute(value: str, quote: str) -> str:
    value = _NOT_XML.sub("", value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = value.replace(quote, "&quot;" if quote == '"' else "&apos;")
    # Attribute-value normalization turns raw white space into spaces; references survive it.
    return value.replace("\t", "&#9;").replace("\n", "&#10;").replace("\r", "&#13;")


def quote_of(tag: str, default: str = '"') -> str:
    """The quote `tag` (a start tag as written) puts its attributes in."""
    match = _ATTRIBUTE.search(tag)
    return match.group("quote") if match else default


def set_attributes(tag: str, values: dict[str, str], quote: str) -> str:
    """`tag` (a start tag as written) with these attributes set: a value replaced inside its own
    quotes where the attribute stands, a new one added after the last attribute (quoted `quote`),
    every other byte as it was."""
    found = {match.group("name"): match for match in _ATTRIBUTE.finditer(tag)}
    edits: list[tuple[int, int, str]] = []
    added = ""
    for name, value in values.items():
        match = found.get(name)
        if match is None:
            added += f" {name}={quote}{escape_attribute(value, quote)}{quote}"
        elif match.group("value") != escape_attribute(value, match.group("quote")):
            edits.append((match.start("value"), match.end("value"), escape_attribute(value, match.group("quote"))))
    if added:
        at = max((match.end() for match in found.values()), default=len(re.match(r"<[^\s/>]+", tag).group()))  # type: ignore[union-attr]
        edits.append((at, at, added))
    return splice(tag, edits)


def splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each [start, end) replaced (the edits do not overlap)."""
    out, last = [], 0
    for start, end, replacement in sorted(edits, key=lambda edit: (edit[0], edit[1])):
        out += [text[last:start], replacement]
        last = end
    out.append(text[last:])
    return "".join(out)


def decode(data: bytes, root: Any) -> tuple[str, str]:
    """The text of an XML file lxml parsed into `root`, and the codec that gives its bytes back:
    a byte order mark is kept in the text (so that it is written back), else the declared encoding
    (lxml's reading of it), else UTF-8."""
    mark = marked(data)
    label = mark.codec if mark is not None else root.getroottree().docinfo.encoding or "utf-8"
    return decode_declared(data, label, DECLARATION)[0], label


def encode(text: str, codec: str) -> bytes:
    # What the file's encoding cannot hold (a translation's œ in a Latin-1 file) as a reference.
    return text.encode(codec, errors="xmlcharrefreplace")
