"""Subtitles (SubRip .srt, WebVTT .vtt), read line by line (plain text: text.py).

Only the text changes: line endings, a byte-order mark, blank lines, cue identifiers, timings, cue
settings and WebVTT's header, NOTE, STYLE and REGION blocks come back byte for byte, in the file's
own encoding (translator/documents/encoding.py's `decode_legacy_text`). The formats are parsed here
rather than by pysubs2, which re-serializes what it reads (timings rounded to its centiseconds,
numbering redone).

A cue's text with markup goes the HTML path, its tags as placeholder elements that path keeps
around the words they covered: WebVTT's tags (<c.class>, <v Speaker>, <i>, <b>, <u>, <ruby>,
<rt>, <lang>) and SubRip's (<i>, <b>, <font ...>) as a <span data-cue="N"> pair, every other one
(an inline timestamp <00:17.500>, a tag left unclosed or unknown, SubRip's {\\an8}) as an empty
<wbr data-cue="N">, around which the text is translated in parts. The writer puts each tag's own
text back.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass

from translator.documents.encoding import TextEncoding, decode_legacy_text
from translator.documents.model import NO_OPTIONS, BadDocument, Document, ReadOptions, Unit, text_document
from translator.documents.text import LINE_BREAK, lines_of

# A cue's timing line: timestamps (WebVTT's `00:01.000`, SubRip's `00:00:01,000`), then settings.
_TIMING = re.compile(r"^\s*\d[\d:.,]*\s*-->\s*\d[\d:.,]*(?:\s|$)")
_DIGITS = re.compile(r"\s*[0-9]+\s*")
# WebVTT's cue text tokenizer: every `<` starts a tag, up to the next `>` (or the text's end).
_VTT_TAG = re.compile(r"<[^>]*>?")
# WebVTT's elements (a start tag of another name is ignored by its parser, as is an end tag that
# closes none).
_VTT_ELEMENTS = frozenset({"c", "i", "b", "u", "ruby", "rt", "v", "lang"})
# SubRip has no specification: players take HTML-like tags and ASS override blocks.
_SRT_TAG = re.compile(r"</?[A-Za-z][^<>]*>|\{\\[^{}]*\}")
_TAG_NAME = re.compile(r"</?([^\s.>/]*)")
_PLACEHOLDER = re.compile(r'<span data-cue="(\d+)">|</span>|<wbr data-cue="(\d+)">')


def _vtt_cues(lines: list[tuple[str, str]]) -> list[list[int]]:
    """The line indexes of each cue's text, as WebVTT's parser collects blocks: a block ends at an
    empty line or at a line with `-->` past its timing line (which then starts the next block, a
    blank line or not); its timing line is its first or second line (after the cue's identifier);
    a block without one (NOTE, STYLE, REGION, the header) is not a cue."""
    index = 0
    if lines and lines[0][0].startswith("WEBVTT"):
        index = 1
        while index < len(lines) and lines[index][0] and "-->" not in lines[index][0]:
            index += 1
    cues: list[list[int]] = []
    while index < len(lines):
        if not lines[index][0]:
            index += 1
            continue
        count, arrow = 0, False
        cue: list[int] | None = None
        while index < len(lines) and lines[index][0]:
            body = lines[index][0]
            count += 1
            if "-->" in body:
                if not (count == 1 or (count == 2 and not arrow)):
                    break
                arrow = True
                cue = [] if _TIMING.match(body) else None
                if cue is not None:
                    cues.append(cue)
            elif cue is not None:
                cue.append(index)
            index += 1
    return cues


def _srt_cues(lines: list[tuple[str, str]]) -> list[list[int]]:
    """The line indexes of each cue's text: from its timing line to a blank line, or to the next
    timing line, whose number (a line of digits just before it) is not the previous cue's text."""
    cues: list[list[int]] = []
    current: list[int] | None = None
    for index, (body, _) in enumerate(lines):
        if not body.strip():
            current = None
        elif _TIMING.match(body):
            if current and _DIGITS.fullmatch(lines[current[-1]][0]):
                current.pop()
            current = []
            cues.append(current)
        elif current is not None:
            current.append(index)
    return cues


@dataclass
class _Markup:
    """A cue's tags, by the number of their placeholder."""

    raws: list[str]  # each start tag's, or other tag's, own text
    closes: dict[int, str]  # a start tag's number: the text of the end tag closing it ("" where implied)
    subrip: bool  # SubRip's text has no character references: it went the HTML path escaped


def _to_html(text: str, webvtt: bool) -> tuple[str, _Markup]:
    """The cue's text as HTML of placeholder elements (module docstring), and its tags."""
    markup = _Markup([], {}, not webvtt)
    out: list[str] = []
    open_tags: list[tuple[int, str]] = []  # (number, name) of the start tags not closed yet
    open_names: Counter[str] = Counter()  # so that an end tag closing nothing costs no search

    def escape(part: str) -> str:
        return html.escape(part, quote=False) if markup.subrip else part

    cursor = 0
    for match in (_VTT_TAG if webvtt else _SRT_TAG).finditer(text):
        out.append(escape(text[cursor : match.start()]))
        cursor = match.end()
        raw = match.group()
        tag = _TAG_NAME.match(raw)
        name = tag.group(1).lower() if tag else ""
        if raw.startswith("</") and open_names[name]:
            # The end tag closes its element and, implicitly, those opened inside it.
            while open_tags:
                number, inner = open_tags.pop()
                open_names[inner] -= 1
                out.append("</span>")
                if inner == name:
                    markup.closes[number] = raw
                    break
            continue
        number = len(markup.raws)
        markup.raws.append(raw)
        if not raw.startswith("</") and name and (name in _VTT_ELEMENTS if webvtt else not raw.endswith("/>")):
            open_tags.append((number, name))
            open_names[name] += 1
            markup.closes[number] = ""  # implied (at the cue's end) until an end tag closes it
            out.append(f'<span data-cue="{number}">')
        else:
            out.append(f'<wbr data-cue="{number}">')
    out.append(escape(text[cursor:]))
    out.extend("</span>" for _ in open_tags)
    return "".join(out), markup


def _from_html(translation: str, markup: _Markup) -> str:
    """The translated cue's text with each placeholder its tag again (they nest as they did)."""
    out: list[str] = []
    opened: list[int] = []
    cursor = 0

    def text(part: str) -> str:
        return html.unescape(part) if markup.subrip else part

    for match in _PLACEHOLDER.finditer(translation):
        out.append(text(translation[cursor : match.start()]))
        cursor = match.end()
        start, point = match.group(1), match.group(2)
        if start is not None and int(start) < len(markup.raws):
            opened.append(int(start))
            out.append(markup.raws[int(start)])
        elif point is not None and int(point) < len(markup.raws):
            out.append(markup.raws[int(point)])
        elif start is None and point is None and opened:
            out.append(markup.closes.get(opened.pop(), ""))
    out.append(text(translation[cursor:]))
    return "".join(out)


def _vtt_text(translation: str) -> str:
    # Cue text must not hold `-->` (it would end the cue) nor a bare `<` (a tag) or `&`.
    return translation.replace("&", "&amp;").replace("<", "&lt;").replace("-->", "--&gt;")


def read_srt(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_subtitles(data, False, options.encoding)


def read_vtt(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_subtitles(data, True, options.encoding)


def read_subtitles(data: bytes, webvtt: bool, encoding: TextEncoding | None = None) -> Document:
    """A cue's text lines (after its timing line, up to a blank line or the next cue's timing
    line) are one unit, so that a sentence wrapped over two lines is translated whole; its line
    breaks come back where the translation keeps them."""
    text, encoding = decode_legacy_text(data, "subtitle", encoding)
    lines = lines_of(text)
    cues = _vtt_cues(lines) if webvtt else _srt_cues(lines)
    texts = [] if cues else [body.strip() for body, _ in lines if body.strip()]
    if texts and not (webvtt and texts[0].startswith("WEBVTT")):
        # Text and no cue (a broken timing line): the client would get its file back untranslated
        # and no word why. A WebVTT file of its header (and notes) alone is a valid empty one.
        separator = "." if webvtt else ","
        raise BadDocument(
            "no subtitle cue found (a cue starts with a timing line such as "
            f"'00:00:01{separator}000 --> 00:00:02{separator}000')"
        )
    cues = [cue for cue in cues if any(lines[i][0].strip() for i in cue)]
    units: list[Unit] = []
    markups: list[_Markup | None] = []
    for cue in cues:
        cue_text = "\n".join(lines[i][0] for i in cue)
        if (_VTT_TAG if webvtt else _SRT_TAG).search(cue_text) or (webvtt and "&" in cue_text):
            source, markup = _to_html(cue_text, webvtt)
            units.append(Unit(source, "html"))
            markups.append(markup)
        else:
            units.append(Unit(cue_text))
            markups.append(None)

    def render(translations: list[str]) -> str:
        out: list[list[str | None]] = [list(line) for line in lines]
        for cue, markup, translation in zip(cues, markups, translations, strict=True):
            if markup is not None:
                translation = _from_html(translation, markup)
            elif webvtt:
                translation = _vtt_text(translation)
            # A line without text would end the cue: it is left out.
            parts = [part for part in LINE_BREAK.split(translation)[::2] if part.strip()]
            # As many lines as the cue had, when the translation has fewer or more breaks: the
            # extra text goes on the last line, a line left without text is dropped.
            if len(parts) > len(cue):
                parts = parts[: len(cue) - 1] + [" ".join(parts[len(cue) - 1 :])]
            for position, index in enumerate(cue):
                out[index][0] = parts[position] if position < len(parts) else None
        return "".join(f"{body}{end}" for body, end in out if body is not None)

    mime = "text/vtt" if webvtt else "application/x-subrip"
    return text_document(units, render, mime, encoding)
