"""Plain text (.txt), read line by line: each line with text is a unit, and only the text changes
(line endings, a byte-order mark, blank lines come back byte for byte), in the file's own encoding
(translator/documents/encoding.py). Subtitles, also read by line: subtitles.py.
"""

from __future__ import annotations

import re

from translator.documents.encoding import decode_legacy_text
from translator.documents.model import NO_OPTIONS, Document, ReadOptions, Unit, text_document

LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


def split_line_end(line: str) -> tuple[str, str]:
    """A line's content and its line ending (``\\r\\n``, ``\\n``, or none on a last line): a writer
    that puts the ending back after the translation keeps a Windows-edited file CRLF. Shared with
    `m2m-translate`'s line corpora (m2m_tools/corpus.py)."""
    body = line.rstrip("\r\n")
    return body, line[len(body) :]


def lines_of(text: str) -> list[tuple[str, str]]:
    """(content, line ending) of each line, the last one's ending possibly empty. Lines end at CR,
    LF or CRLF only, as in WebVTT and SubRip: not at str.splitlines's others (a form feed,
    U+2028), which a line's text may hold."""
    parts = LINE_BREAK.split(text)  # content, ending, content, ..., content (linear: no backtracking)
    lines = list(zip(parts[::2], parts[1::2], strict=False))
    return [*lines, (parts[-1], "")] if parts[-1] else lines


def read_text(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    """Each line with text is a unit: wrapped paragraphs stay wrapped where they were."""
    text, encoding = decode_legacy_text(data, "text", options.encoding)
    lines = lines_of(text)
    slots = [i for i, (body, _) in enumerate(lines) if body.strip()]

    def render(translations: list[str]) -> str:
        out = [list(line) for line in lines]
        for index, translation in zip(slots, translations, strict=True):
            out[index][0] = translation
        return "".join(body + end for body, end in out)

    return text_document([Unit(lines[i][0]) for i in slots], render, "text/plain", encoding)
