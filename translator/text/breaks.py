"""A hard-wrapped sentence's line breaks put back into its translation (HTML, and the documents
read as HTML): the model saw a space where each break stood (translator/text/units.py), and each
goes back at the white space of the translation nearest to where it stood, as a share of the
sentence. Apart from translator/text/placement.py, which places tags and kept spans, not breaks.
"""

from __future__ import annotations

import bisect
import re

from translator.text.markup import KEEP, TEXT, html_tokens

_BLANKS = re.compile(r"[^\S\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]+")
# From a run's start only (a run of blanks without a break is not rescanned from each blank).
_BREAK_RUN = re.compile(r"(?<!\s)\s*[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def place_breaks(rendered: str, breaks: list[tuple[int, str]], length: int) -> str:
    """`rendered` (a unit's translation with its markup, as HTML) with the line breaks its source
    sentence had inside it (`Unit.breaks`, in a text of `length`) put back where the translation
    allows: each at the white space of the translated text nearest to where it stood, as a share of
    the sentence, in order, written as it was (indentation included). A break the translation has
    already (a fragment left as it was) is not added again; one with no white space left for it (a
    language written without spaces) stays the space the model saw."""
    spaces: list[tuple[int, int, int]] = []  # (offset in the visible text, raw start, raw end)
    present: list[int] = []  # offsets of the line breaks it holds already
    visible = raw = 0
    for token in html_tokens(rendered):
        if token.kind == TEXT:
            for match in _BLANKS.finditer(token.text):
                start, end = raw + token.raw_at(match.start()), raw + token.raw_at(match.end())
                if rendered[start:end].isspace():
                    spaces.append((visible + match.start(), start, end))
            present += [visible + match.start() for match in _BREAK_RUN.finditer(token.text)]
        if token.kind in (TEXT, KEEP):
            visible += len(token.text)
        raw += len(token.raw)
    scale = visible / max(length, 1)
    wanted = [(round(at * scale), whitespace) for at, whitespace in breaks]
    wanted = _without_present(wanted, present)
    offsets = [offset for offset, _, _ in spaces]
    edits: list[tuple[int, int, str]] = []
    floor = 0  # the first space still free: the breaks stay in their order
    for target, whitespace in wanted:
        if floor >= len(spaces):
            break
        index = min(max(bisect.bisect_left(offsets, target), floor), len(spaces) - 1)
        if index > floor and abs(offsets[index - 1] - target) <= abs(offsets[index] - target):
            index -= 1
        edits.append((spaces[index][1], spaces[index][2], whitespace))
        floor = index + 1
    out, last = [], 0
    for start, end, whitespace in edits:
        out += [rendered[last:start], whitespace]
        last = end
    out.append(rendered[last:])
    return "".join(out)


def _without_present(wanted: list[tuple[int, str]], present: list[int]) -> list[tuple[int, str]]:
    """`wanted` less, for each break already in the translation, the one nearest to it (in order)."""
    if not present:
        return wanted
    matched: set[int] = set()
    cursor = 0
    for offset in present:
        if cursor >= len(wanted):
            break
        while cursor + 1 < len(wanted) and abs(wanted[cursor + 1][0] - offset) <= abs(wanted[cursor][0] - offset):
            cursor += 1
        matched.add(cursor)
        cursor += 1
    return [entry for index, entry in enumerate(wanted) if index not in matched]
