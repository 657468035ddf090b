"""HTML and Markdown files.

HTML is cut into fragments at block boundaries (translator/text/markup.py's BREAK tokens, which
no sentence crosses), each a unit of the HTML path within the native API's per-record limit: the
tokens are lossless, so the fragments rejoined are the file, with only text changed.

Markdown is read line by line: fenced code blocks, blank lines and rules are kept, and each other
line's block marker (`#`, `-`, `1.`, `>`) stays outside its unit. Inline syntax goes with the text.
"""

from __future__ import annotations

import re

from translator.contract import limits
from translator.documents.model import Document, Unit, decode_text
from translator.documents.plaintext import _lines
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


def read_html(data: bytes) -> Document:
    source, encoding = decode_text(data, "HTML")
    fragments = fragments_of(source)
    slots = [i for i, f in enumerate(fragments) if any(t.kind == TEXT and t.text.strip() for t in html_tokens(f))]

    def write(translations: list[str]) -> bytes:
        out = list(fragments)
        for index, translation in zip(slots, translations, strict=True):
            out[index] = translation
        return "".join(out).encode(encoding)

    return Document([Unit(fragments[i], "html") for i in slots], write, "text/html; charset=utf-8")


_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKER = re.compile(r"^(\s*(?:#{1,6}\s+|[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+|>\s*)*)")
_RULE = re.compile(r"^\s*([-*_=]\s*){3,}$")


def _front_matter_end(lines: list[tuple[str, str]]) -> int:
    """The index of the first line after a front matter block, 0 where there is none."""
    if not lines or lines[0][0].strip() not in ("---", "+++"):
        return 0
    fence = lines[0][0].strip()
    for index in range(1, len(lines)):
        if lines[index][0].strip() in (fence, "..." if fence == "---" else fence):
            return index + 1
    return 0  # never closed: not front matter, a rule at the top


def read_markdown(data: bytes) -> Document:
    text, encoding = decode_text(data, "Markdown")
    lines = _lines(text)
    slots: list[tuple[int, str, str]] = []  # line, marker, text
    fenced = False
    # Front matter (YAML between `---` lines, or TOML between `+++`, at the very top) is the site
    # generator's (Hugo, Jekyll): layout, dates, slugs. It is kept as it is, never translated.
    front = _front_matter_end(lines)
    for index, (body, _) in enumerate(lines):
        if index < front:
            continue
        if _FENCE.match(body):
            fenced = not fenced
            continue
        if fenced or not body.strip() or _RULE.match(body) or body.startswith("    "):
            continue
        marker = _MARKER.match(body).group(1)  # type: ignore[union-attr]
        if body[len(marker) :].strip():
            slots.append((index, marker, body[len(marker) :]))

    def write(translations: list[str]) -> bytes:
        out = [list(line) for line in lines]
        for (index, marker, _), translation in zip(slots, translations, strict=True):
            out[index][0] = marker + translation
        return "".join(body + end for body, end in out).encode(encoding)

    return Document([Unit(body) for _, _, body in slots], write, "text/markdown; charset=utf-8")
