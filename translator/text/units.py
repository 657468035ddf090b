"""A record's tokens (translator/text/markup.py) cut into *units*, the sentences the model translates.

A block is the text between block-level tags (and kept spans too long to sit inside a sentence);
`split_text` cuts each block into sentences, the segmentation plain text gets. A unit is one
sentence: its items (text, kept spans, the inline tags that belong to it) and where it lies in the
record's raw text, so that everything between units comes back byte for byte.

In HTML (and the document formats read as HTML: Markdown paragraphs, XML paragraphs) a line break
inside a block is white space, as a browser renders it: a hard-wrapped paragraph's sentence goes
on over the break, the model sees a space there, and the break is put back into the translation
(translator/text/breaks.py's `place_breaks`). Plain text keeps its rule: a line break ends a
sentence (translator/text/sentences.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from translator.text.glossary import TERM
from translator.text.markup import BREAK, CLOSE, KEEP, OPEN, POINT, TAG, TEXT, Token
from translator.text.segment import has_letters, split_text


@dataclass
class Item:
    kind: str  # TEXT, KEEP or TAG
    text: str
    raw: str
    role: str = ""
    partner: int = -1  # index of the matching OPEN/CLOSE item in the unit
    term: bool = False  # KEEP: a glossary term (translator/text/glossary.py), found as a whole word


@dataclass
class Unit:
    raw_start: int
    raw_end: int
    items: list[Item]
    text: str
    translatable: bool = field(init=False)
    # The line breaks the text's TEXT items had inside the sentence: (offset in `text` of the space
    # standing for it, the white space as it was, break included).
    breaks: list[tuple[int, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Kept spans alone (a `translate="no"` emoji, a bare URL) are not sent to the model.
        self.translatable = any(item.kind == TEXT and has_letters(item.text) for item in self.items)

    @property
    def plain(self) -> bool:
        return all(item.kind == TEXT for item in self.items)


# What str.splitlines breaks at: a run of white space holding one is a line break.
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_WHITESPACE_RUN = re.compile(r"\s+")


def _line_break_runs(text: str) -> list[tuple[int, int]]:
    """The runs of white space of `text` that hold a line break, as (start, end)."""
    return [m.span() for m in _WHITESPACE_RUN.finditer(text) if not _LINE_BREAKS.isdisjoint(m.group())]


def _as_spaces(text: str) -> str:
    """`text` with each white space run holding a line break as spaces (the same length)."""
    runs = _line_break_runs(text)
    if not runs:
        return text
    out, last = [], 0
    for start, end in runs:
        out += [text[last:start], " " * (end - start)]
        last = end
    out.append(text[last:])
    return "".join(out)


def record_units(tokens: list[Token], language: str, max_chars: int, soft_breaks: bool = False) -> list[Unit]:
    """`soft_breaks`: a line break inside a block is white space (HTML), not a sentence end (text)."""
    starts = []
    position = 0
    for token in tokens:
        starts.append(position)
        position += len(token.raw)
    # A kept span too long to sit inside a sentence separates blocks, like a block-level tag.
    long_keep = max(1, max_chars // 2)
    units: list[Unit] = []
    block: list[int] = []
    for index, token in enumerate([*tokens, Token(BREAK, "")]):
        if token.kind == BREAK or (token.kind == KEEP and len(token.text) > long_keep):
            if block:
                units.extend(_block_units(tokens, starts, block, language, max_chars, soft_breaks))
            block = []
        else:
            block.append(index)
    return units


def _block_units(
    tokens: list[Token], starts: list[int], block: list[int], language: str, max_chars: int, soft_breaks: bool
) -> list[Unit]:
    offset: dict[int, int] = {}
    visible, segmenting = [], []
    position = 0
    for index in block:
        token = tokens[index]
        offset[index] = position
        if token.kind in (TEXT, KEEP):
            visible.append(token.text)
            # Kept spans are letters to the segmenter: a sentence never ends inside a URL or `{name}`.
            segmenting.append(token.text if token.kind == TEXT else "x" * len(token.text))
            position += len(token.text)
    text = "".join(visible)
    if not text.strip():
        return []
    spans = []
    cursor = 0
    segmenting_text = "".join(segmenting)
    # The same length either way: the offsets of the sentences are the block's.
    segmented = split_text(_as_spaces(segmenting_text) if soft_breaks else segmenting_text, max_chars, language)
    for part, is_piece in zip(segmented.parts, segmented.translatable, strict=True):
        if is_piece:
            spans.append((cursor, cursor + len(part)))
        cursor += len(part)
    keeps = [(offset[i], offset[i] + len(tokens[i].text)) for i in block if tokens[i].kind == KEEP]
    spans = _merge_cut_keeps(spans, keeps)
    return [_unit(tokens, starts, block, offset, start, end, soft_breaks) for start, end in spans]


def _merge_cut_keeps(spans: list[tuple[int, int]], keeps: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A hard cut (a sentence longer than the limit) inside a kept span joins the two pieces."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and any(a < start < b for a, b in keeps) and merged[-1][1] == start:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _unit(
    tokens: list[Token],
    starts: list[int],
    block: list[int],
    offset: dict[int, int],
    start: int,
    end: int,
    soft_breaks: bool = False,
) -> Unit:
    content = [
        i
        for i in block
        if tokens[i].kind in (TEXT, KEEP) and offset[i] < end and offset[i] + len(tokens[i].text) > start
    ]
    first, last = content[0], content[-1]
    low, high = block[0], block[-1]
    # Tags at the sentence's edges belong to it when their element closes (opens) inside it; an
    # element around the whole sentence stays outside, untouched, like everything between sentences.
    while first - 1 >= low and tokens[first - 1].kind == TAG and offset[first - 1] == start:
        tag = tokens[first - 1]
        # (a partner beyond a long kept span is in another block: not this sentence's)
        if tag.role == OPEN and tag.partner in offset and offset[tag.partner] < end:
            first -= 1
        else:
            break
    while last + 1 <= high and tokens[last + 1].kind == TAG and offset[last + 1] == end:
        tag = tokens[last + 1]
        if tag.role == CLOSE and first <= tag.partner <= last:
            last += 1
        else:
            break
    items: list[Item] = []
    breaks: list[tuple[int, str]] = []
    length = 0  # of the unit's text so far
    position_of: dict[int, int] = {}
    for index in range(first, last + 1):
        token = tokens[index]
        if token.kind == TEXT:
            a = max(start, offset[index]) - offset[index]
            b = min(end, offset[index] + len(token.text)) - offset[index]
            if b > a:
                text = token.text[a:b]
                if soft_breaks:
                    text = _spaced(text, length, breaks)
                items.append(Item(TEXT, text, token.raw[token.raw_at(a) : token.raw_at(b)]))
                length += len(text)
        elif token.kind == KEEP:
            items.append(Item(KEEP, token.text, token.raw, term=token.name == TERM))
            length += len(token.text)
        elif token.kind == TAG:
            position_of[index] = len(items)
            role = token.role if first <= token.partner <= last else POINT
            items.append(Item(TAG, "", token.raw, role=role, partner=token.partner))
    for item in items:
        if item.kind == TAG and item.role in (OPEN, CLOSE):
            item.partner = position_of[item.partner]
    first_token, last_token = tokens[first], tokens[last]
    raw_start = starts[first]
    if first_token.kind == TEXT:
        raw_start += first_token.raw_at(max(start, offset[first]) - offset[first])
    raw_end = starts[last] + len(last_token.raw)
    if last_token.kind == TEXT:
        raw_end = starts[last] + last_token.raw_at(min(end, offset[last] + len(last_token.text)) - offset[last])
    return Unit(raw_start, raw_end, items, "".join(item.text for item in items), breaks=breaks)


def _spaced(text: str, at: int, breaks: list[tuple[int, str]]) -> str:
    """`text` (of a unit, from offset `at`) with each white space run holding a line break one
    space, noted in `breaks`: the model sees a sentence, not two lines."""
    runs = _line_break_runs(text)
    if not runs:
        return text
    out, last, written = [], 0, at
    for start, end in runs:
        out.append(text[last:start])
        written += start - last
        breaks.append((written, text[start:end]))
        out.append(" ")
        written += 1
        last = end
    out.append(text[last:])
    return "".join(out)
