"""Where each piece of a Markdown inline content lies in the file (translator/documents/markdown.py):
markdown-it-py's inline tokens walked over their block's content, and the content's offsets mapped
to the file's through its lines. A construct the walk cannot place raises Unplaced.
"""

from __future__ import annotations

import bisect
import html
import re
from dataclasses import dataclass
from typing import Any


class Unplaced(Exception):
    """A construct whose source the walk cannot place: its block is left as it is."""


@dataclass
class Source:
    text: str  # the file's text
    starts: list[int]  # where each line starts in it
    lines: list[str]  # each line without its ending, as markdown-it reads it


# Elements whose content HTML's tokenizer reads as raw text: inline HTML opening one would turn the
# rest of the unit into it.
_RAW_TEXT = frozenset("script style textarea title xmp iframe noembed noframes noscript plaintext".split())
_START_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)")
_SOFT_BREAK = re.compile(r" *\n[ \t]*")
_HARD_BREAK = re.compile(r"(?: {2,}|\\)\n[ \t]*")
# Markdown's maxNesting in the commonmark preset is 20; images in images are walked to this depth.
MAX_DEPTH = 20


@dataclass
class Piece:
    """A stretch of an inline content, in its coordinates: text (`text` decoded), a line break
    inside the paragraph (`text` "\n"), or syntax standing for itself (`whole`: with what it holds,
    a code span, an autolink)."""

    start: int
    end: int
    html: str
    text: str | None = None
    close: int = -1  # an opening piece: the index of its closing one
    whole: bool = False
    inline_html: bool = False
    outside: bool = False  # a leading marker (`[ ]`), left outside the unit
    raw: str = ""  # its source in the file, filled once the content is placed there
    # The end of a shortcut or collapsed reference (`[text]`, `[text][]`), whose text is its label:
    # the label, and the text's source, to name the label where the text is translated.
    label: str | None = None
    inner: str = ""


# GitHub's syntax that CommonMark reads as text: footnote references and emoji shortcodes (kept
# whole inside a unit), and at a paragraph's start a task list item's box, a footnote's label or an
# alert's kind (`> [!NOTE]`), which stay outside its unit. A footnote's label holds no `[` (as in
# GitHub's): one that could would rescan the rest of the text from each `[^` of a `[^[^[^...` run.
_KEPT_TEXT = re.compile(r"\[\^[^\[\]\s]+\]|:(?=[a-z0-9_+-]*[a-z])[a-z0-9_+-]+:")
LEADING_MARKER = re.compile(r"\[[ xX]\][ \t]+|\[\^[^\]\s]+\]:[ \t]*|\[![A-Za-z]+\][ \t]*(?:\n[ \t]*)?")


def outside(pieces: list[Piece], end: int) -> int:
    """Leave the content's first `end` characters (a leading marker) out of the unit: the pieces
    there, and the start of a text piece they end in. The unit's start, or 0 where the marker
    ends inside syntax (then it stays in the unit)."""
    if any(p.start < end < p.end and p.text is None for p in pieces):
        return 0
    for piece in pieces:
        if piece.end <= end:
            piece.html, piece.text, piece.outside = "", None, True
        elif piece.start < end:
            assert piece.text is not None
            piece.text = piece.text[end - piece.start :]
            piece.html, piece.start = html.escape(piece.text, quote=False), end
    return end


class Position:
    """Content offsets to file offsets: anchors (content offset, file offset) in order, each the
    start of a stretch where both advance together."""

    def __init__(self, anchors: list[tuple[int, int]]) -> None:
        self.anchors = anchors
        self.keys = [content for content, _ in anchors]

    def at(self, offset: int) -> int:
        index = max(bisect.bisect_right(self.keys, offset) - 1, 0)
        content, file = self.anchors[index]
        return file + offset - content


def paragraph_anchors(content: str, first: int, source: Source) -> list[tuple[int, int]]:
    """A paragraph's (or a setext heading's) content: its lines are those of the block, less the
    container prefixes and the indentation markdown-it removed, the whole stripped."""
    anchors: list[tuple[int, int]] = []
    offset = 0
    lines = content.split("\n")
    for number, line in enumerate(lines):
        index = first + number
        if index >= len(source.lines):
            raise Unplaced
        body = source.lines[index]
        core = line.lstrip(" \t") if number else line
        end = len(body) if number < len(lines) - 1 else len(body.rstrip())
        if not body.endswith(core, 0, end):
            raise Unplaced  # a tab markdown-it expanded, say
        anchors.append((offset + len(line) - len(core), source.starts[index] + end - len(core)))
        offset += len(line)
        if number < len(lines) - 1:
            anchors.append((offset, source.starts[index] + len(body)))  # the line break
            offset += 1
    return anchors


def heading_anchors(content: str, first: int, source: Source) -> list[tuple[int, int]]:
    """An ATX heading's content starts after its `#` run and the blanks after it."""
    body = source.lines[first]
    marker = body.find("#")
    column = marker
    while column < len(body) and body[column] == "#":
        column += 1
    while column < len(body) and body[column] in " \t":
        column += 1
    if marker < 0 or not body.startswith(content, column):
        raise Unplaced
    return [(0, source.starts[first] + column)]


def cell_anchors(content: str, line: int, source: Source, cells: dict[int, int]) -> list[tuple[int, int]]:
    """A table cell's content is the next stretch of its row that reads as it, a `|` of the content
    being an escaped `\\|` in the row (GFM's table reader takes the backslash out)."""
    body = source.lines[line]
    written = content.replace("|", "\\|")
    found = body.find(written, cells.get(line, 0))
    if found < 0:
        raise Unplaced
    cells[line] = found + len(written)
    anchors = [(0, source.starts[line] + found)]
    column = found
    for offset, char in enumerate(content):
        if char == "|":
            anchors.append((offset, source.starts[line] + column))
            anchors.append((offset + 1, source.starts[line] + column + 2))
            column += 2
        else:
            column += 1
    return anchors


class Walker:
    """The pieces of an inline content from markdown-it's inline tokens, each placed at its offset
    in the content by reading the content there as the token's rule read it."""

    def __init__(self, parser: Any, env: dict) -> None:
        self.parser, self.env = parser, env
        self.pieces: list[Piece] = []
        self.cursor = 0

    def add(
        self, end: int, markup: str, text: str | None = None, whole: bool = False, inline_html: bool = False
    ) -> int:
        self.pieces.append(Piece(self.cursor, end, markup, text, whole=whole, inline_html=inline_html))
        self.cursor = end
        return len(self.pieces) - 1

    def text(self, text: str) -> None:
        """Text at the cursor, but for GitHub's footnote references and emoji shortcodes in it,
        which are kept whole (a `[^1]` escaped or a `:smile:` translated would no longer be one)."""
        last = 0
        for match in _KEPT_TEXT.finditer(text):
            if match.start() > last:
                part = text[last : match.start()]
                self.add(self.cursor + len(part), html.escape(part, quote=False), part)
            kept = html.escape(match.group(), quote=False)
            self.add(self.cursor + len(match.group()), f'<code data-m="{len(self.pieces)}">{kept}</code>', whole=True)
            last = match.end()
        if last < len(text):
            part = text[last:]
            self.add(self.cursor + len(part), html.escape(part, quote=False), part)

    def expect(self, src: str, base: int, literal: str) -> int:
        """The end of `literal`, which the source must hold at the cursor."""
        if not src.startswith(literal, self.cursor - base):
            raise Unplaced
        return self.cursor + len(literal)

    def walk(self, children: list[Any], state: Any, base: int, depth: int) -> None:
        """`state`: an inline state over the source the children were parsed from, which starts at
        `base` in the content (an image's description is parsed on its own)."""
        from markdown_it.rules_inline.image import image
        from markdown_it.rules_inline.link import link

        src = state.src
        # (piece, tag, where its closing syntax starts and ends: a link's, known from its opening)
        openers: list[tuple[int, str, int, int]] = []
        labels: list[str | None] = []  # of the links open
        skipping = False
        for token in children:
            kind = token.type
            if skipping:  # an autolink's text, in its piece already
                skipping = kind != "link_close"
                continue
            local = self.cursor - base
            if kind == "text":
                self.expect(src, base, token.content)
                self.text(token.content)
            elif kind == "text_special":
                self.add(self.expect(src, base, token.markup), html.escape(token.content, quote=False), token.content)
            elif kind == "softbreak":
                self.add(base + _match(_SOFT_BREAK, src, local), "\n", "\n")
            elif kind == "hardbreak":
                self.add(base + _match(_HARD_BREAK, src, local), f'<br data-m="{len(self.pieces)}">')
            elif kind == "code_inline":
                end = base + _code_span_end(src, local, token.markup)
                escaped = html.escape(token.content, quote=False)
                self.add(end, f'<code data-m="{len(self.pieces)}">{escaped}</code>', whole=True)
            elif kind == "html_inline":
                end = self.expect(src, base, token.content)
                self.add(end, _inline_html(token.content, len(self.pieces)), inline_html=True)
            elif kind in ("em_open", "strong_open", "s_open"):
                tag = kind[: -len("_open")]
                piece = self.add(self.expect(src, base, token.markup), f'<{tag} data-m="{len(self.pieces)}">')
                openers.append((piece, tag, -1, -1))
            elif kind in ("em_close", "strong_close", "s_close"):
                tag = kind[: -len("_close")]
                if not openers or openers[-1][1] != tag:
                    raise Unplaced
                opener, _, _, _ = openers.pop()
                self.pieces[opener].close = self.add(self.expect(src, base, token.markup), f"</{tag}>")
            elif kind == "link_open" and token.info == "auto":
                end = src.find(">", local)
                if not src.startswith("<", local) or end < 0:
                    raise Unplaced
                href = html.escape(str(token.attrs.get("href", "")))
                label = html.escape(src[local + 1 : end], quote=False)
                kept = f'<a data-m="{len(self.pieces)}" href="{href}" translate="no">{label}</a>'
                self.add(base + end + 1, kept, whole=True)
                skipping = True
            elif kind == "link_open":
                label_end, end = _extent(link, state, local, 0)
                href = html.escape(str(token.attrs.get("href", "")))
                piece = self.add(self.expect(src, base, "["), f'<a data-m="{len(self.pieces)}" href="{href}">')
                openers.append((piece, "a", base + label_end, base + end))
                labels.append(_reference_label(src, local + 1, label_end, end))
            elif kind == "link_close":
                if not openers or openers[-1][1:3] != ("a", self.cursor):
                    raise Unplaced
                opener, _, _, end = openers.pop()
                self.pieces[opener].close = self.add(end, "</a>")
                self.pieces[-1].label = labels.pop()
            elif kind == "image":
                if depth >= MAX_DEPTH:
                    raise Unplaced
                from markdown_it.rules_inline import StateInline

                label_end, end = _extent(image, state, local, 1)
                opener = self.add(self.expect(src, base, "!["), f'<span data-m="{len(self.pieces)}">')
                inner = StateInline(src[local + 2 : label_end], self.parser, self.env, [])
                self.walk(token.children or [], inner, self.cursor, depth + 1)
                if self.cursor != base + label_end:
                    raise Unplaced
                self.pieces[opener].close = self.add(base + end, "</span>")
                self.pieces[-1].label = _reference_label(src, local + 2, label_end, end)
            else:
                raise Unplaced  # a token this walk does not know
        if openers:
            raise Unplaced


def _match(pattern: re.Pattern[str], src: str, at: int) -> int:
    match = pattern.match(src, at)
    if match is None:
        raise Unplaced
    return match.end()


def _code_span_end(src: str, at: int, marker: str) -> int:
    """The end of the code span opened by `marker` at `at`: after the next backtick run as long."""
    if not src.startswith(marker, at):
        raise Unplaced
    position = at + len(marker)
    while (start := src.find("`", position)) >= 0:
        end = start
        while end < len(src) and src[end] == "`":
            end += 1
        if end - start == len(marker):
            return end
        position = end
    raise Unplaced


def _reference_label(src: str, start: int, label_end: int, end: int) -> str | None:
    """The label of a shortcut or collapsed reference link (image) whose text is src[start:label_end]."""
    return src[start:label_end] if src[label_end:end] in ("]", "][]") else None


def _extent(rule: Any, state: Any, at: int, label_at: int) -> tuple[int, int]:
    """Where the label of the link (image) at `at` ends, and the link: markdown-it's own rule run
    over the source in its silent mode, which only measures."""
    state.pos, state.posMax = at, len(state.src)
    if not rule(state, True):
        raise Unplaced
    end = state.pos
    label_end = state.md.helpers.parseLinkLabel(state, at + label_at, label_at == 0)
    if label_end < 0:
        raise Unplaced
    return label_end, end


def _inline_html(raw: str, index: int) -> str:
    """Inline HTML as it is in the unit; a start tag marked with its piece, for the writer."""
    start = _START_TAG.match(raw)
    if start is None:
        return raw
    if start.group(1).lower() in _RAW_TEXT:
        raise Unplaced
    return f'{raw[: start.end()]} data-m="{index}"{raw[start.end() :]}'
