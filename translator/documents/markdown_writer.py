"""A translated Markdown unit (HTML, as the HTML path answers it) written back as Markdown: each
piece of syntax as its source (translator/documents/markdown_source.py), the text escaped where
Markdown would read it as syntax.
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import TYPE_CHECKING

from translator.documents.markdown_source import MAX_DEPTH, Piece
from translator.text.markup import VOID

if TYPE_CHECKING:
    from translator.documents.markdown import Inline

# Inline text that Markdown would read as syntax: backslashes, code and emphasis marks, brackets
# (a link, an image), `<` before a tag or an autolink, `&` before a reference, `~~`; `_` only at
# a word's edge (inside a word it is never emphasis).
_INLINE_SYNTAX = re.compile(r"[\\`*\[\]]|_(?!\w)|(?<!\w)_|<(?=[A-Za-z/!?])|&(?=#?\w+;)|~(?=~)|(?<=~)~")
# At a line's start: a heading, a quote, a list item, a setext underline, a table's delimiter row,
# a fence.
_LINE_SYNTAX = re.compile(r"[#>+=:|~-]|\d{1,9}(?=[.)])")
_CLOSING_HASHES = re.compile(r"(^|[ \t])(#+[ \t]*)$")


def _escape_markdown(text: str, cell: bool) -> str:
    text = _INLINE_SYNTAX.sub(lambda m: "\\" + m.group(), text)
    return text.replace("|", "\\|") if cell else text


def _escape_line_start(text: str) -> str:
    blank = len(text) - len(text.lstrip(" \t"))
    if blank:
        # White space opening a line would indent it (a tab, four spaces: a code block, #49's
        # `&#9;foo`): written as character references, which are text.
        return "".join(f"&#{ord(c)};" for c in text[:blank]) + _escape_line_start(text[blank:])
    match = _LINE_SYNTAX.match(text)
    if match is None:
        return text
    if match.group()[0].isdigit():
        return f"{text[: match.end()]}\\{text[match.end() :]}"
    return "\\" + text


# (From a run's start only: tried inside a long run of blanks, it would rescan it at each blank.)
_LINE_BREAK_RUN = re.compile(r"(?<![ \t])[ \t]*\n\s*")
# White space just inside an emphasis, which would keep its delimiters from opening (closing) it.
_SPACE_AFTER_OPEN = re.compile(r'(<(?:em|strong|s) data-m="\d+">)(\s+)')
_SPACE_BEFORE_CLOSE = re.compile(r"(?<!\s)(\s+)(</(?:em|strong|s)>)")


def outside_emphasis(translation: str) -> str:
    """The translated unit with the white space at the edges of its emphases moved out of them
    (the tags around nested ones too: a pass per level, at most markdown-it's nesting)."""
    for _ in range(MAX_DEPTH):
        moved = _SPACE_BEFORE_CLOSE.sub(r"\2\1", _SPACE_AFTER_OPEN.sub(r"\2\1", translation))
        if moved == translation:
            break
        translation = moved
    return translation


def _word_character(char: str) -> bool:
    """Neither white space nor punctuation (CommonMark's Unicode P and S categories)."""
    return bool(char) and not char.isspace() and unicodedata.category(char)[0] not in "PS"


class Writer:
    """A translated unit back to Markdown: each piece of syntax as its source, text escaped."""

    def __init__(self, block: Inline) -> None:
        self.block = block
        self.breaks = iter([p.raw for p in block.pieces if p.text == "\n" and not p.outside])
        self.out: list[str] = []
        self.text: list[str] = []
        # Open elements: (tag, its closing piece or -1, its emphasis in `emphases` or -1, the length
        # of `out` after its opening).
        self.closing: list[tuple[str, int, int, int]] = []
        self.emphases: list[list[int]] = []  # where each emphasis' delimiters are in `out`
        self.skip = ""  # the tag whose end ends a piece written whole
        self.line_start = block.kind == "paragraph"

    def event(self, kind: str, name: str, attrs: list, raw: str) -> None:
        if self.skip:
            if kind == "end" and name == self.skip:
                self.skip = ""
            return
        if kind == "data":
            self.text.append(html.unescape(raw))
            return
        self.flush()
        piece = self._piece(attrs) if kind in ("start", "startend") else None
        if piece is not None:
            self.emit(piece.raw)
            if piece.whole:
                self.skip = name
            elif piece.close >= 0:
                emphasis = -1
                if name in ("em", "strong", "s"):
                    emphasis = len(self.emphases)
                    self.emphases.append([len(self.out) - 1, -1])
                self.closing.append((name, piece.close, emphasis, len(self.out)))
            elif kind == "start" and piece.inline_html and name not in VOID:
                self.closing.append((name, -1, -1, len(self.out)))  # inline HTML: its end tag is its own
            if "\n" in piece.raw or "\r" in piece.raw:
                self.line_start = True  # a hard break's source ends a line
            return
        if kind == "end":
            depth = next((d for d in range(len(self.closing) - 1, -1, -1) if self.closing[d][0] == name), None)
            if depth is not None:
                _, closing, emphasis, inside = self.closing[depth]
                del self.closing[depth:]
                if closing >= 0:
                    end = self.block.pieces[closing]
                    label = end.label
                    if label is not None and "".join(self.out[inside:]) != end.inner:
                        # Its text is translated: no longer its label, which it names instead.
                        self.emit("][" + _LINE_BREAK_RUN.sub(" ", label) + "]")
                    else:
                        self.emit(end.raw)
                    if emphasis >= 0:
                        self.emphases[emphasis][1] = len(self.out) - 1
                    return
        self.emit(self.block.html_raw.get(raw, raw))

    def _piece(self, attrs: list) -> Piece | None:
        value = dict(attrs).get("data-m") or ""
        return self.block.pieces[int(value)] if value.isdigit() and int(value) < len(self.block.pieces) else None

    def emit(self, raw: str) -> None:
        if raw.startswith("[") and self.out and self.out[-1].endswith("!") and not self.out[-1].endswith("\\!"):
            self.out[-1] = self.out[-1][:-1] + "\\!"  # text's "!" before a link would make it an image
        if raw:
            self.out.append(raw)
            self.line_start = False

    def flush(self) -> None:
        if not self.text:
            return
        text = "".join(self.text)
        self.text = []
        same = self.block.runs.get(text)
        if same is not None and not (self.line_start and _escape_line_start(same) != same):
            for _ in range(text.count("\n")):  # its line breaks are its own
                next(self.breaks, None)
            self.emit(same)
            return
        cell = self.block.kind == "cell"
        parts = _LINE_BREAK_RUN.split(text)
        for number, part in enumerate(parts):
            if number:
                line_break = next(self.breaks, None) if self.block.kind == "paragraph" else None
                if line_break is None:
                    self.emit(" ")
                else:
                    self.out.append(line_break)
                    self.line_start = True
            if not part:
                continue
            part = _escape_markdown(part, cell)
            if self.line_start:
                part = _escape_line_start(part)
            self.emit(part)

    def finish(self) -> str:
        self.flush()
        # Spaces first: an `_` emphasis that a space put back beside white space stays `_` (#49: the
        # spec's `__foo, __bar__, baz__` came back with `**`).
        self._flanking()
        self._underscores()
        out = "".join(self.out)
        if self.block.kind == "heading":  # a translated `#` at the end would be read as the closing run
            out = _CLOSING_HASHES.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", out)
        return out

    def _underscores(self) -> None:
        """An `_` emphasis the translation put inside a word (a language written without spaces)
        would be read as text: its delimiters become `*`, which CommonMark reads inside words."""
        starts, position = [], 0
        for part in self.out:
            starts.append(position)
            position += len(part)
        written = "".join(self.out)
        for opening, closing in self.emphases:
            if closing < 0 or not self.out[opening].startswith("_") or set(self.out[closing]) != {"_"}:
                continue
            before = written[starts[opening] - 1] if starts[opening] else ""
            after = written[starts[closing] + len(self.out[closing]) : starts[closing] + len(self.out[closing]) + 1]
            if _word_character(before) or _word_character(after):
                self.out[opening] = "*" * len(self.out[opening])
                self.out[closing] = "*" * len(self.out[closing])

    def _flanking(self) -> None:
        """An emphasis delimiter that the translation put between punctuation inside and a word
        outside (`**see [#1](u)**then`) would not open (close) it: a space goes outside it."""
        written = "".join(self.out)
        starts, position = [], 0
        for part in self.out:
            starts.append(position)
            position += len(part)
        for opening, closing in self.emphases:
            if closing < 0:
                continue
            start, end = starts[opening], starts[closing] + len(self.out[closing])
            inner_first = written[start + len(self.out[opening]) : start + len(self.out[opening]) + 1]
            inner_last = written[starts[closing] - 1 : starts[closing]]
            if _punctuation(inner_first) and start and _word_character(written[start - 1]):
                self.out[opening] = " " + self.out[opening]
            if _punctuation(inner_last) and _word_character(written[end : end + 1]):
                self.out[closing] += " "


def _punctuation(char: str) -> bool:
    return bool(char) and unicodedata.category(char)[0] in "PS"
