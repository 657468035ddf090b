"""Markdown files.

Markdown is parsed by markdown-it-py (CommonMark, with GFM's tables and strikethrough), the parser
its output is checked against. Each inline content (a paragraph, hard-wrapped or not, a heading, a
table cell) is one unit of the HTML path: its text, with its inline syntax as HTML elements that
each stand for their source (emphasis as `<em>`/`<strong>`/`<s>`, a link as `<a href>` and an
image as a `<span>` around their text, a code span as `<code>` and an autolink as a
`translate="no"` link, kept whole; a hard break as `<br>`, which ends a sentence; inline HTML as it
is), so that placement keeps each element around its words. Written back, each element is its own
source again, byte for byte, and the translated text is escaped as Markdown where it would be read
as syntax. Everything else (code spans and blocks, fences, autolinks, reference definitions, HTML,
front matter, block markers, table rows) is never touched: only the bytes of translated text
change. markdown-it-py's tokens carry the lines of each block, not the columns of its inline
syntax; the columns are found again by walking the inline tokens over their block's content, which
the block's lines hold but for its container prefixes (`> `, a list item's indentation), and a
block whose construct the walk cannot place is left as it is.
The walk is translator/documents/markdown_source.py; the writing back,
translator/documents/markdown_writer.py.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from translator.documents.encoding import decode_legacy_text
from translator.documents.markdown_source import (
    LEADING_MARKER,
    Piece,
    Position,
    Source,
    Unplaced,
    Walker,
    cell_anchors,
    heading_anchors,
    outside,
    paragraph_anchors,
)
from translator.documents.markdown_writer import Writer, outside_emphasis
from translator.documents.model import NO_OPTIONS, Document, ReadOptions, Unit, text_document
from translator.text.html_events import html_events
from translator.text.segment import has_letters


def _front_matter_end(lines: list[str]) -> int:
    """The index of the first line after a front matter block, 0 where there is none."""
    if not lines or lines[0].strip() not in ("---", "+++"):
        return 0
    fence = lines[0].strip()
    for index in range(1, len(lines)):
        if lines[index].strip() in (fence, "..." if fence == "---" else fence):
            return index + 1
    return 0  # never closed: not front matter, a rule at the top


@functools.cache
def _parser() -> Any:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    # Escapes and entities stay tokens of their own, whose markup is their source.
    parser.disable("text_join")
    return parser


# CommonMark's line endings (markdown-it normalizes them to "\n" before it counts lines).
_NEWLINE = re.compile(r"\r\n?|\n")


def read_markdown(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    # In its own encoding (a legacy one found with confidence or declared, UTF-16 as UTF-16), as .txt is.
    text, encoding = decode_legacy_text(data, "Markdown", options.encoding)
    starts, bodies = [0], []
    for match in _NEWLINE.finditer(text):
        bodies.append(text[starts[-1] : match.start()])
        starts.append(match.end())
    bodies.append(text[starts[-1] :])
    # Front matter (YAML between `---` lines, or TOML between `+++`, at the very top) is the site
    # generator's (Hugo, Jekyll): layout, dates, slugs. It is kept as it is, never translated.
    front = _front_matter_end(bodies)
    # markdown-it reads NUL as U+FFFD (one character for one: the columns are the same).
    source = Source(text, starts, [body.replace("\0", "\ufffd") for body in bodies])
    parser = _parser()
    env: dict[str, Any] = {}
    tokens = parser.parse("\n".join(source.lines[front:]), env)
    blocks: list[Inline] = []
    cells: dict[int, int] = {}  # a table row's line: where its next cell is looked for
    for index, token in enumerate(tokens):
        if token.type != "inline" or not token.map or not token.content.strip():
            continue
        opener = tokens[index - 1]
        try:
            block = Inline.of(token, opener, front, source, parser, env, cells)
        except Unplaced:
            continue  # left as it is
        if block.unit.text and block.has_words:
            blocks.append(block)

    def render(translations: list[str]) -> str:
        out, last = [], 0
        document.kept.clear()
        for block, translation in zip(blocks, translations, strict=True):
            if translation == block.unit.text:
                continue
            written = block.markdown(translation)
            original = text[block.start : block.end]
            # Checked as markdown-it reads it: a translation whose syntax would read otherwise (an
            # emphasis inside an emphasis with nothing between them reads as strong, #49) is not
            # written; its block stays as it was, and is reported.
            if _shape(parser, env, written) != _shape(parser, env, original):
                document.keep(f"line {text.count(chr(10), 0, block.start) + 1}", MARKDOWN_KEPT)
                continue
            out += [text[last : block.start], written]
            last = block.end
        out.append(text[last:])
        return "".join(out)

    document = text_document([block.unit for block in blocks], render, "text/markdown", encoding)
    return document


MARKDOWN_KEPT = "its translation would not read as the same Markdown constructs: kept as it was"
# Tokens that are text, however written (escaped, as a reference, broken over lines).
_TEXT_TOKENS = frozenset({"text", "text_special", "softbreak"})


def _shape(parser: Any, env: dict[str, Any], inline: str) -> list[tuple[Any, ...]]:
    """An inline content's constructs as markdown-it reads them, its text aside: each token's
    type, tag, nesting and attributes (a link's target), nested ones (an image's alt) included,
    not its delimiter (`_` may become `*`); a line starting as a block would (indented code)
    counts as one too."""
    shape: list[tuple[Any, ...]] = []
    lines = inline.split("\n")
    if lines and (lines[0][:1] in (" ", "\t")):
        shape.append(("indented",))

    def walk(tokens: list[Any]) -> None:
        for token in tokens:
            if token.type not in _TEXT_TOKENS:
                attrs = tuple(sorted((token.attrs or {}).items()))
                shape.append((token.type, token.tag, token.nesting, attrs))
            walk(token.children or [])

    walk(parser.parseInline(inline, env))
    return shape


@dataclass
class Inline:
    """One inline content (a paragraph, a heading, a table cell): its unit and its pieces."""

    kind: str  # "paragraph", "heading" (ATX) or "cell"
    start: int  # where its content lies in the file
    end: int
    pieces: list[Piece]
    unit: Unit = field(init=False)
    has_words: bool = field(init=False)
    # The source of each unit-side text run (the decoded text between two pieces of syntax), to
    # write a run the translation left as it was byte for byte; and of each inline HTML piece.
    runs: dict[str, str] = field(init=False)
    html_raw: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.unit = Unit("".join(piece.html for piece in self.pieces), "html")
        self.has_words = any(p.text is not None and has_letters(p.text) for p in self.pieces)
        self.runs, self.html_raw = {}, {}
        decoded: list[str] = []
        raw: list[str] = []
        for piece in [*self.pieces, Piece(0, 0, "")]:
            if piece.outside:
                continue
            if piece.text is not None:
                decoded.append(piece.text)
                raw.append(piece.raw)
                continue
            if decoded:
                self.runs.setdefault("".join(decoded), "".join(raw))
            decoded, raw = [], []
            if piece.inline_html:
                self.html_raw.setdefault(piece.html, piece.raw)

    @classmethod
    def of(
        cls, token: Any, opener: Any, front: int, source: Source, parser: Any, env: dict, cells: dict[int, int]
    ) -> Inline:
        from markdown_it.rules_inline import StateInline

        content = token.content
        first = token.map[0] + front
        if opener.type in ("th_open", "td_open"):
            kind, anchors = "cell", cell_anchors(content, first, source, cells)
        elif opener.type == "heading_open" and opener.markup.startswith("#"):
            kind, anchors = "heading", heading_anchors(content, first, source)
        else:
            kind, anchors = "paragraph", paragraph_anchors(content, first, source)
        walker = Walker(parser, env)
        walker.walk(token.children or [], StateInline(content, parser, env, []), 0, 0)
        pieces = walker.pieces
        if walker.cursor != len(content):
            raise Unplaced
        lead = LEADING_MARKER.match(content) if kind == "paragraph" else None
        start = outside(pieces, lead.end()) if lead else 0
        position = Position(anchors)
        for piece in pieces:
            piece.raw = source.text[position.at(piece.start) : position.at(piece.end)]
        for piece in pieces:
            if piece.close >= 0 and pieces[piece.close].label is not None:
                pieces[piece.close].inner = source.text[position.at(piece.end) : position.at(pieces[piece.close].start)]
        return cls(kind, position.at(start), position.at(len(content)), pieces)

    def markdown(self, translation: str) -> str:
        """The translated unit (HTML, as the HTML path answers it) as Markdown source."""
        writer = Writer(self)
        translation = outside_emphasis(translation)
        for kind, name, attrs, start, end in html_events(translation):
            writer.event(kind, name, attrs, translation[start:end])
        return writer.finish()
