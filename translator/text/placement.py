"""A unit's tags and kept spans (translator/text/units.py) put back into its translation: *located*
around the words they belonged to, or the unit rebuilt *in fragments* when they cannot all be
(translator/text/plan.py tells when each happens).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from translator.text.markup import CLOSE, KEEP, OPEN, POINT, TAG, TEXT
from translator.text.segment import has_letters
from translator.text.units import Item, Unit


class Span(NamedTuple):
    """A kept span or an inline element's content, as offsets in the unit's text."""

    start: int
    end: int
    item: int  # index of the kept item, or of the element's open tag


class Placement(NamedTuple):
    """Where a kept span or an inline element went: its offsets in the translation and in the source."""

    target_start: int
    target_end: int
    source_start: int
    source_end: int
    item: int  # as in Span

    @property
    def target(self) -> tuple[int, int]:
        return self.target_start, self.target_end

    @property
    def source(self) -> tuple[int, int]:
        return self.source_start, self.source_end


class _Event(NamedTuple):
    """Raw markup written at one position of the translation."""

    what: str  # "close", "open", "empty" or "keep"
    item: int  # source index: the order among events at the same position
    raw: str


def _spans(unit: Unit) -> tuple[list[Span], list[Span]]:
    """The unit's kept spans and inline elements, elements in source order."""
    keeps, wraps = [], []
    position = 0
    opened: dict[int, int] = {}
    for index, item in enumerate(unit.items):
        if item.kind == KEEP:
            keeps.append(Span(position, position + len(item.text), index))
        elif item.kind == TAG and item.role == OPEN:
            opened[index] = position
        elif item.kind == TAG and item.role == CLOSE:
            wraps.append(Span(opened[item.partner], position, item.partner))
        position += len(item.text)
    wraps.sort(key=lambda wrap: wrap.item)
    return keeps, wraps


def locate(
    unit: Unit, translation: str, more: dict[str, str], escape: Callable[[str], str], spaced: bool = True
) -> str | None:
    """The translation with the unit's tags and kept spans placed in it, or None if they cannot all
    be placed consistently. In a language written with spaces, an element's words are only found
    as whole words (never `bout<b>on</b>` for "on")."""
    if any(item.kind == TAG and item.role == POINT for item in unit.items):
        return None
    keeps, wraps = _spans(unit)
    placed: list[Placement] = []
    taken = bytearray(len(translation) + 1)
    cursor: dict[str, int] = {}  # a repeated placeholder's next occurrence is searched after its last
    repeats = Counter(unit.text[start:end] for start, end, _ in keeps)
    for start, end, item in keeps:
        if start == end:
            continue  # an empty kept element (`keepTags`): placed beside its neighbours, below
        needle = unit.text[start:end]
        # A whole word first: `translate="no">term<` is not the "term" of "terminal". Any occurrence
        # next, as the model may glue a kept span to a word; never for a glossary term, which is a word.
        # A span the sentence has once: the occurrence nearest to where it stood (a `-` kept in
        # "any `.`, `-` or `_`" is not the hyphen of an earlier word); a repeated one: in order.
        near = round(start * len(translation) / max(len(unit.text), 1)) if repeats[needle] == 1 else None
        found = _find(translation, needle, cursor.get(needle, 0), taken, spaced, near)
        if found is None and not unit.items[item].term:
            found = _find(translation, needle, cursor.get(needle, 0), taken, near=near)
        if found is None:
            return None
        cursor[needle] = found[1]
        taken[found[0] : found[1]] = b"\x01" * (found[1] - found[0])
        placed.append(Placement(*found, start, end, item))
    whole = unit.text.strip()
    empty = []
    for start, end, item in wraps:
        inner = unit.text[start:end]
        core = inner.strip()
        if not core:
            empty.append((start + len(inner) - len(inner.lstrip()), item))
            continue
        lead = len(inner) - len(inner.lstrip())
        if core == whole:
            stripped = translation.strip()
            found = (translation.find(stripped), translation.find(stripped) + len(stripped)) if stripped else None
        else:
            # Of a word the sentence has more than once, the occurrence nearest to where the
            # element stood (as a share of the sentence): "for _rich_ text" is not the "Rich" it
            # starts with.
            near = round((start + lead) * len(translation) / max(len(unit.text), 1))
            found = _nearest(translation, core, near, spaced)
            if found is None and core in more:
                found = _nearest(translation, more[core].strip(), near, spaced)
        if found is None:
            return None
        placed.append(Placement(*found, start + lead, start + lead + len(core), item))
    for position, item in empty:
        # An empty element (Mastodon's `<span class="invisible"></span>`) goes where its neighbour went.
        target = _beside(placed, position, len(unit.text), len(translation))
        if target is None:
            return None
        placed.append(Placement(target, target, position, position, item))
    for position, _, item in (span for span in keeps if span.start == span.end):
        # An empty kept element (Weblate's placeholder `<x id="1"></x>`): beside its neighbour, or
        # the word it touches where the model copied that word (a name, a number).
        target = _beside(placed, position, len(unit.text), len(translation))
        if target is None:
            target = _by_word(unit.text, translation, position, spaced)
        if target is None:
            return None
        placed.append(Placement(target, target, position, position, item))
    if not _same_nesting(placed) or any(_takes_all(unit, translation, p) for p in placed):
        return None
    return _place(translation, unit, placed, {p.item for p in placed if unit.items[p.item].kind == KEEP}, escape)


def _takes_all(unit: Unit, translation: str, placement: Placement) -> bool:
    """Whether an inline element was found around every word of the translation though words stood
    outside it in the source: where its own translation is the whole sentence's (a model answering
    text it does not know with one sentence it does), the words around it would be lost with their
    formatting ("Regular <b>Bold</b>" all bold); translated in fragments, each keeps its run."""
    if unit.items[placement.item].kind == KEEP:
        return False
    source_outside = unit.text[: placement.source_start] + unit.text[placement.source_end :]
    target_outside = translation[: placement.target_start] + translation[placement.target_end :]
    return has_letters(source_outside) and not has_letters(target_outside)


def _beside(placed: list[Placement], position: int, length: int, translated: int) -> int | None:
    before = [p.target_end for p in placed if p.source_end == position and p.source_end > p.source_start]
    after = [p.target_start for p in placed if p.source_start == position and p.source_end > p.source_start]
    if before:
        return before[0]
    if after:
        return after[0]
    if position == 0:
        return 0
    if position == length:
        return translated
    return None


def _by_word(text: str, translation: str, position: int, spaced: bool) -> int | None:
    """Where a point touching a word of `text` goes: just after (before) that word in `translation`,
    when the word is there verbatim, once, as it is once in `text`."""
    before = re.search(r"\w+$", text[:position])
    after = re.match(r"\w+", text[position:])
    for word, at_end in ((before, True), (after, False)):
        if word is None:
            continue
        found = [m for m in re.finditer(re.escape(word.group()), translation) if not spaced or _alone(translation, m)]
        if len(found) == 1 and len(re.findall(re.escape(word.group()), text)) == 1:
            return found[0].end() if at_end else found[0].start()
    return None


def _alone(text: str, match: re.Match[str]) -> bool:
    return _word_edges(text, match.group(), match.start(), match.end())


def _find(
    text: str,
    needle: str,
    start: int = 0,
    taken: bytearray | None = None,
    whole_words: bool = False,
    near: int | None = None,
) -> tuple[int, int] | None:
    """The first occurrence of `needle` in `text` from `start` (with `near`, the one nearest to it)
    that overlaps nothing `taken` and, with `whole_words`, is not part of a longer word."""
    if not needle:
        return None
    best: tuple[int, int] | None = None
    index = text.find(needle, start)
    while index != -1:
        end = index + len(needle)
        free = taken is None or not any(taken[index:end])
        if free and (not whole_words or _word_edges(text, needle, index, end)):
            if near is None:
                return index, end
            if best is not None and abs(index - near) >= abs(best[0] - near):
                break  # the occurrences only get farther
            best = (index, end)
        index = text.find(needle, index + 1)
    return best


def _nearest(text: str, needle: str, near: int, whole_words: bool) -> tuple[int, int] | None:
    """The occurrence of `needle` in `text` (with `whole_words`, not part of a longer word) that
    starts nearest to `near`."""
    best: tuple[int, int] | None = None
    index = text.find(needle) if needle else -1
    while index != -1:
        end = index + len(needle)
        if not whole_words or _word_edges(text, needle, index, end):
            if best is not None and abs(index - near) >= abs(best[0] - near):
                break  # the occurrences only get farther
            best = (index, end)
        index = text.find(needle, index + 1)
    return best


def _word_edges(text: str, needle: str, start: int, end: int) -> bool:
    before = start > 0 and needle[0].isalnum() and text[start - 1].isalnum()
    after = end < len(text) and needle[-1].isalnum() and text[end].isalnum()
    return not before and not after


def _relation(a: tuple[int, int], b: tuple[int, int]) -> str:
    if a[1] <= b[0] or b[1] <= a[0]:
        return "apart"
    if b[0] <= a[0] and a[1] <= b[1]:
        return "inside"
    if a[0] <= b[0] and b[1] <= a[1]:
        return "around"
    return "crossing"


def _same_nesting(placed: list[Placement]) -> bool:
    for i, first in enumerate(placed):
        for second in placed[i + 1 :]:
            source = _relation(first.source, second.source)
            target = _relation(first.target, second.target)
            if source == "crossing" or target == "crossing":
                return False
            if source != target and not (first.target == second.target and source != "apart"):
                return False
    return True


def _place(
    translation: str,
    unit: Unit,
    placed: list[Placement],
    kept: set[int],
    escape: Callable[[str], str],
) -> str:
    """The translation, escaped, with the tags and kept spans at their target positions. At one
    position: the elements ending there close (in source order: innermost first), then those
    starting there open (in source order: outermost first); an empty element and a kept span go
    after whatever came before them in the source."""
    at: dict[int, list[_Event]] = {}
    spans: dict[int, int] = {}
    for p in placed:
        start, end, item = p.target_start, p.target_end, p.item
        if item in kept:
            at.setdefault(start, []).append(_Event("keep", item, unit.items[item].raw))
            spans[start] = max(spans.get(start, start), end)  # an empty one may share its start
        elif start == end:
            raw = unit.items[item].raw + unit.items[unit.items[item].partner].raw
            at.setdefault(start, []).append(_Event("empty", item, raw))
        else:
            partner = unit.items[item].partner
            at.setdefault(end, []).append(_Event("close", partner, unit.items[partner].raw))
            at.setdefault(start, []).append(_Event("open", item, unit.items[item].raw))
    out: list[str] = []
    plain_from = 0
    for position in sorted(at):
        out.append(escape(translation[max(plain_from, 0) : position]) if position >= plain_from else "")
        events = at[position]
        order = sorted((e for e in events if e.what == "close"), key=lambda e: e.item)
        order += sorted((e for e in events if e.what == "open"), key=lambda e: e.item)
        for extra in sorted((e for e in events if e.what in ("empty", "keep")), key=lambda e: e.item):
            after = [i for i, e in enumerate(order) if e.item < extra.item]
            order.insert(after[-1] + 1 if after else 0, extra)
        out.extend(event.raw for event in order)
        plain_from = spans.get(position, position)
    out.append(escape(translation[plain_from:]))
    return "".join(out)


def _runs(unit: Unit) -> list[list[Item]]:
    runs: list[list[Item]] = []
    current: list[Item] = []
    for item in unit.items:
        if item.kind == TEXT:
            current.append(item)
        else:
            if current:
                runs.append(current)
            current = []
            runs.append([item])
    if current:
        runs.append(current)
    return runs


def second_round_texts(unit: Unit, translation: str, spaced: bool) -> list[str]:
    """What `locate` and `fragments` may need translated besides the sentence: the words of each
    inline element not found as they are, and the text between tags and kept spans."""
    texts = []
    _, wraps = _spans(unit)
    for start, end, item in wraps:
        core = unit.text[start:end].strip()
        inside = unit.items[item + 1 : unit.items[item].partner]
        # An element around kept text only (a link's URL) is never translated on its own.
        words = any(i.kind == TEXT and has_letters(i.text) for i in inside)
        if words and _find(translation, core, whole_words=spaced) is None:
            texts.append(core)
    for run in _runs(unit):
        if run[0].kind == TEXT:
            core = "".join(item.text for item in run).strip()
            if has_letters(core):
                texts.append(core)
    return texts


def fragments(unit: Unit, more: dict[str, str], escape: Callable[[str], str]) -> str:
    """The unit with each text between its tags and kept spans replaced by its translation."""
    out = []
    for run in _runs(unit):
        if run[0].kind != TEXT:
            out.append(run[0].raw)
            continue
        text = "".join(item.text for item in run)
        core = text.strip()
        if not has_letters(core):
            out.append("".join(item.raw for item in run))
            continue
        lead = text[: len(text) - len(text.lstrip())]
        trail = text[len(text.rstrip()) :]
        out.append(escape(lead) + escape(more[core]) + escape(trail))
    return "".join(out)
