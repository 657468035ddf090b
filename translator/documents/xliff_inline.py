"""XLIFF's inline elements as HTML's inline tags, so that a source holding them is translated on
the HTML path, and the translation back as XLIFF with each element as the source wrote it.

An element whose content is text to translate (1.2's `<g>` and `<mrk>`, 2.0's `<pc>` and `<mrk>`)
becomes `<span data-x="k">` around its words, which the HTML path places around the words they
became (translator/text/placement.py), as a .docx run's formatting is (runs.py). A code (`<x/>`,
`<bx/>`, `<ex/>`, `<ph>`, `<bpt>`, `<ept>`, `<it>`; 2.0's `<ph/>`, `<sc/>`, `<ec/>`, `<cp/>`,
`<sm/>`, `<em/>`; a protected `<mrk>`; a comment) becomes an empty `<code data-x="k"></code>`, kept
whole where the translation puts it (markup.py's KEEP). Written back, each element is its source's
bytes (its tags, ids and attributes as written); a translation in which one did not come back
exactly once, nested as it was, or which puts paired codes out of their order, is not written.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from translator.documents import xmltext

# Elements whose content is the sentence's words.
_WRAPPING = frozenset({"g", "pc", "mrk"})
# Codes that open or close a span of the original's formatting: in the order the source has them.
_PAIRED_CODES = frozenset({"bpt", "ept", "bx", "ex", "sc", "ec"})


@dataclass
class Inline:
    """A source's content as HTML, and how each numbered element is written back."""

    html: str
    # By number: a wrapping element's (start tag, end tag) as written, or a code's whole text.
    written: list[tuple[str, str] | str] = field(default_factory=list)
    # The numbers of paired codes, in the source's order.
    ordered: list[int] = field(default_factory=list)


def _local(element: Any) -> str:
    return str(element.tag).rpartition("}")[2]


def _wrapping(element: Any) -> bool:
    protected = element.get("mtype") == "protected" or element.get("translate") == "no"
    return _local(element) in _WRAPPING and not protected and (bool(element.text) or len(element) > 0)


def elements(source: Any) -> list[Any]:
    """The elements inside `source` whose text `read` needs (each one's place in the file)."""
    return [e for e in source.iterdescendants() if isinstance(e.tag, str)]


def read(source: Any, text: str, where: dict[Any, xmltext.Span]) -> Inline | None:
    """`source`'s content as HTML; None where it holds what is neither text, an element nor a
    comment (a processing instruction)."""
    from lxml import etree

    inline = Inline("")
    parts: list[str] = []

    def walk(parent: Any) -> bool:
        parts.append(html.escape(parent.text or "", quote=False))
        for child in parent:
            number = len(inline.written)
            if not isinstance(child.tag, str):
                if child.tag is not etree.Comment:
                    return False
                inline.written.append(f"<!--{child.text}-->")
                parts.append(f'<code data-x="{number}"></code>')
            elif _wrapping(child):
                span = where[child]
                inline.written.append((text[span.start : span.open_end], text[span.close : span.end]))
                parts.append(f'<span data-x="{number}">')
                if not walk(child):
                    return False
                parts.append("</span>")
            else:
                span = where[child]
                inline.written.append(text[span.start : span.end])
                if _local(child) in _PAIRED_CODES:
                    inline.ordered.append(number)
                parts.append(f'<code data-x="{number}"></code>')
            parts.append(html.escape(child.tail or "", quote=False))
        return True

    if not walk(source):
        return None
    inline.html = "".join(parts)
    return inline


def write(inline: Inline, translation: str, eol: str) -> str | None:
    """The target's content for `translation` (HTML, as `inline.html` is), or None where its
    elements did not come back as they went."""
    parser = _Back(inline, eol)
    parser.feed(translation)
    parser.close()
    came = parser.seen
    if parser.failed or parser.open or sorted(came) != list(range(len(inline.written))):
        return None
    if [number for number in came if number in inline.ordered] != inline.ordered:
        return None
    return "".join(parser.out)


class _Back(HTMLParser):
    def __init__(self, inline: Inline, eol: str) -> None:
        super().__init__(convert_charrefs=True)
        self.inline, self.eol = inline, eol
        self.out: list[str] = []
        self.seen: list[int] = []
        self.open: list[int] = []
        self.failed = False

    def _number(self, tag: str, attrs: list[tuple[str, str | None]]) -> int | None:
        value = dict(attrs).get("data-x")
        if value is None or not value.isdigit() or int(value) >= len(self.inline.written):
            return None
        number = int(value)
        wrapping = isinstance(self.inline.written[number], tuple)
        return number if (tag == "span") == wrapping and tag in ("span", "code") else None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        number = self._number(tag, attrs)
        if number is None:
            self.failed = True
            return
        self.seen.append(number)
        written = self.inline.written[number]
        if isinstance(written, tuple):
            self.open.append(number)
            self.out.append(written[0])
        else:
            self.out.append(written)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "span" and self.open:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            return
        if tag != "span" or not self.open:
            self.failed = True
            return
        written = self.inline.written[self.open.pop()]
        self.out.append(written[1] if isinstance(written, tuple) else "")

    def handle_data(self, data: str) -> None:
        self.out.append(xmltext.escape_text(data, self.eol))

    def handle_comment(self, data: str) -> None:
        self.failed = True
