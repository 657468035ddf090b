"""Text formats read line by line: plain text and subtitles (SubRip .srt, WebVTT .vtt).

Only the text changes: line endings, a byte-order mark, blank lines, cue numbers, timings, cue
settings and WebVTT's header, NOTE and STYLE blocks come back byte for byte. The formats are
parsed here rather than by pysubs2, which re-serializes what it reads (timings rounded to its
centiseconds, numbering redone).
"""

from __future__ import annotations

import re

from translator.documents.model import BadDocument, Document, Unit, decode_text

_TIMING = re.compile(r"^\s*\S+\s+-->\s+\S+")
# A cue's text is HTML-like in both formats (<i>, <b>, <font>; WebVTT's <v Speaker>, entities): it
# goes the HTML path only when it has markup, so that a plain `&` stays a plain `&`.
_MARKUP = re.compile(r"<[A-Za-z/]|&[#A-Za-z0-9]+;")


def split_line_end(line: str) -> tuple[str, str]:
    """A line's content and its line ending (``\\r\\n``, ``\\n``, or none on a last line): a writer
    that puts the ending back after the translation keeps a Windows-edited file CRLF. Shared with
    `m2m-translate`'s line corpora (m2m_tools/corpus.py)."""
    body = line.rstrip("\r\n")
    return body, line[len(body) :]


def _lines(text: str) -> list[tuple[str, str]]:
    """(content, line ending) of each line, the last one's ending possibly empty."""
    return [split_line_end(line) for line in text.splitlines(keepends=True)]


def _unit(text: str) -> Unit:
    return Unit(text, "html" if _MARKUP.search(text) else "text")


def read_text(data: bytes) -> Document:
    """Each line with text is a unit: wrapped paragraphs stay wrapped where they were."""
    text, encoding = decode_text(data, "text")
    lines = _lines(text)
    slots = [i for i, (body, _) in enumerate(lines) if body.strip()]

    def write(translations: list[str]) -> bytes:
        out = [list(line) for line in lines]
        for index, translation in zip(slots, translations, strict=True):
            out[index][0] = translation
        return "".join(body + end for body, end in out).encode(encoding)

    return Document([Unit(lines[i][0]) for i in slots], write, "text/plain; charset=utf-8")


def read_subtitles(data: bytes, webvtt: bool) -> Document:
    """A cue's text lines (after its timing line, up to a blank line) are one unit, so that a
    sentence wrapped over two lines is translated whole; its line breaks come back where the
    translation keeps them."""
    text, encoding = decode_text(data, "subtitle")
    lines = _lines(text)
    cues: list[list[int]] = []  # line indexes of each cue's text
    current: list[int] | None = None
    for index, (body, _) in enumerate(lines):
        if not body.strip():
            current = None
        elif _TIMING.match(body) and current is None:
            current = []
            cues.append(current)
        elif current is not None:
            current.append(index)
    texts = [body.strip() for body, _ in lines if body.strip()]
    if not cues and texts and not (webvtt and texts[0].startswith("WEBVTT")):
        # Text and no cue (a broken timing line): the client would get its file back untranslated
        # and no word why. A WebVTT file of its header (and notes) alone is a valid empty one.
        separator = "." if webvtt else ","
        raise BadDocument(
            "file: no subtitle cue found (a cue starts with a timing line such as "
            f"'00:00:01{separator}000 --> 00:00:02{separator}000')"
        )
    cues = [cue for cue in cues if cue]

    def write(translations: list[str]) -> bytes:
        out: list[list[str | None]] = [list(line) for line in lines]
        for cue, translation in zip(cues, translations, strict=True):
            parts = translation.split("\n")
            # As many lines as the cue had, when the translation has fewer or more breaks: the
            # extra text goes on the last line, a line left without text is dropped.
            if len(parts) > len(cue):
                parts = parts[: len(cue) - 1] + [" ".join(parts[len(cue) - 1 :])]
            for position, index in enumerate(cue):
                out[index][0] = parts[position] if position < len(parts) else None
        return "".join(f"{body}{end}" for body, end in out if body is not None).encode(encoding)

    units = [_unit("\n".join(lines[i][0] for i in cue)) for cue in cues]
    return Document(units, write, "text/vtt; charset=utf-8" if webvtt else "application/x-subrip; charset=utf-8")
