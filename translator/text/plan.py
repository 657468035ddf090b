"""What to send the model for one record, and how to put its answers back: text and HTML alike.

A record (translator/text/markup.py tokens) is cut into blocks (text between block-level tags)
and each block into sentences by `split_text`, the segmentation plain text gets. A sentence is a
*unit*: its text (tags left out, kept spans in) is what the model translates. Everything between
units (whitespace, block tags, `<pre>`, `translate="no"` elements) comes back byte for byte.

A unit holding kept spans (placeholders, inline `<code>`) or inline tags (`<b>`, `<a href>`) is
translated whole first, for the best translation, and then:
- *located*: each kept span is found verbatim in the translation, and each inline element around
  the translation of its words: its words themselves when the model copied them (names, numbers),
  or their translation on its own when that occurs in the sentence's translation; tags and kept
  spans nest as they did in the source. The tags are put around those words.
- otherwise *in fragments*: the text between the tags and kept spans is translated piece by piece
  and the tags and spans stay exactly where they were. Nothing is lost or unbalanced, at some cost
  in fluency for that sentence.
The words of an inline element and the fragments are asked for in one second round for all the
records of a request (`Resolution.second_round`).

Text with no letters (numbers, symbols, emoji, whitespace) is never sent to the model.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from translator.text.markup import BREAK, CLOSE, KEEP, OPEN, POINT, TAG, TEXT, Token, html_tokens, text_tokens
from translator.text.segment import UNSPACED_LANGUAGES, has_letters, split_text

TEXT_FORMAT, HTML_FORMAT = "text", "html"
FORMATS = (TEXT_FORMAT, HTML_FORMAT)


@dataclass
class _Item:
    kind: str  # TEXT, KEEP or TAG
    text: str
    raw: str
    role: str = ""
    partner: int = -1  # index of the matching OPEN/CLOSE item in the unit


@dataclass
class _Unit:
    raw_start: int
    raw_end: int
    items: list[_Item]
    text: str
    translatable: bool = field(init=False)

    def __post_init__(self) -> None:
        # Kept spans alone (a `translate="no"` emoji, a bare URL) are not sent to the model.
        self.translatable = any(item.kind == TEXT and has_letters(item.text) for item in self.items)

    @property
    def plain(self) -> bool:
        return all(item.kind == TEXT for item in self.items)


def record_tokens(text: str, fmt: str = TEXT_FORMAT) -> list[Token]:
    return html_tokens(text) if fmt == HTML_FORMAT else text_tokens(text)


def plan_record(
    text: str,
    language: str,
    max_chars: int,
    target: str,
    fmt: str = TEXT_FORMAT,
    tokens: list[Token] | None = None,
) -> Plan:
    """`tokens`: the record's `record_tokens`, when detection made them already (HTML is parsed once)."""
    if language == target:  # already in the target language: it comes back as it is
        return Plan(text, [], "", 1, "", escape=_identity)
    escape = _escape if fmt == HTML_FORMAT else _identity
    return Plan(text, record_tokens(text, fmt) if tokens is None else tokens, language, max_chars, target, escape)


def language_text(tokens: list[Token]) -> str:
    """The words of a record (its `record_tokens`) that show its language, for detection: what a
    reader sees (HTML without tags, scripts and styles), without placeholders, URLs, addresses
    and inline code."""
    return "".join(token.text if token.kind == TEXT else " " for token in tokens)


def _identity(text: str) -> str:
    return text


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


class Plan:
    def __init__(
        self,
        source: str,
        tokens: list[Token],
        language: str,
        max_chars: int,
        target: str,
        escape: Callable[[str], str],
    ) -> None:
        self.source = source
        self.escape = escape
        # Sentences that touched in the source (Japanese or Chinese after 。) get a space between
        # them when the target language writes with spaces, so ja→en is not "Hello.How are you?".
        self.spaced = bool(target) and target not in UNSPACED_LANGUAGES
        self.units = _units(tokens, language, max_chars) if tokens else []

    @property
    def first_round(self) -> list[str]:
        """The texts to translate first: one per sentence that has letters."""
        return [unit.text for unit in self.units if unit.translatable]

    def resolve(self, first: Sequence[str]) -> Resolution:
        if len(first) != len(self.first_round):
            raise ValueError(f"expected {len(self.first_round)} translations, got {len(first)}")
        return Resolution(self, list(first))


class Resolution:
    """A plan with its first-round translations: what else to translate, and the answer."""

    def __init__(self, plan: Plan, first: list[str]) -> None:
        self.plan = plan
        answers = iter(first)
        self.translations = [next(answers) if unit.translatable else None for unit in plan.units]
        needed: dict[str, None] = {}
        self.located: list[str | None] = []
        for unit, translation in zip(plan.units, self.translations, strict=True):
            if translation is None or unit.plain:
                self.located.append(None)
                continue
            rendered = _locate(unit, translation, {}, plan.escape, plan.spaced)
            self.located.append(rendered)
            if rendered is None:
                for text in _second_round_texts(unit, translation, plan.spaced):
                    needed.setdefault(text, None)
        self.second_round = list(needed)

    def render(self, second: Sequence[str]) -> str:
        if len(second) != len(self.second_round):
            raise ValueError(f"expected {len(self.second_round)} translations, got {len(second)}")
        more = dict(zip(self.second_round, second, strict=True))
        plan = self.plan
        out: list[str] = []
        cursor = 0
        previous_end = -1
        previous_translated = False
        for unit, translation, located in zip(plan.units, self.translations, self.located, strict=True):
            out.append(plan.source[cursor : unit.raw_start])
            if translation is None:
                rendered = plan.source[unit.raw_start : unit.raw_end]
            elif unit.plain:
                rendered = plan.escape(translation)
            elif located is not None:
                rendered = located
            else:
                located = _locate(unit, translation, more, plan.escape, plan.spaced)
                rendered = located or _fragments(unit, more, plan.escape)
            # Sentences that touched in the source (CJK, hard cuts) are spaced in a spaced target.
            touching = unit.raw_start == previous_end and previous_translated
            if plan.spaced and touching and translation and rendered:
                rendered = " " + rendered
            out.append(rendered)
            previous_translated = bool(translation) and bool(rendered)
            cursor = previous_end = unit.raw_end
        out.append(plan.source[cursor:])
        return "".join(out)


def _units(tokens: list[Token], language: str, max_chars: int) -> list[_Unit]:
    starts = []
    position = 0
    for token in tokens:
        starts.append(position)
        position += len(token.raw)
    # A kept span too long to sit inside a sentence separates blocks, like a block-level tag.
    long_keep = max(1, max_chars // 2)
    units: list[_Unit] = []
    block: list[int] = []
    for index, token in enumerate([*tokens, Token(BREAK, "")]):
        if token.kind == BREAK or (token.kind == KEEP and len(token.text) > long_keep):
            if block:
                units.extend(_block_units(tokens, starts, block, language, max_chars))
            block = []
        else:
            block.append(index)
    return units


def _block_units(
    tokens: list[Token], starts: list[int], block: list[int], language: str, max_chars: int
) -> list[_Unit]:
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
    segmented = split_text("".join(segmenting), max_chars, language)
    for part, is_piece in zip(segmented.parts, segmented.translatable, strict=True):
        if is_piece:
            spans.append((cursor, cursor + len(part)))
        cursor += len(part)
    keeps = [(offset[i], offset[i] + len(tokens[i].text)) for i in block if tokens[i].kind == KEEP]
    spans = _merge_cut_keeps(spans, keeps)
    return [_unit(tokens, starts, block, offset, start, end) for start, end in spans]


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
    tokens: list[Token], starts: list[int], block: list[int], offset: dict[int, int], start: int, end: int
) -> _Unit:
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
    items: list[_Item] = []
    position_of: dict[int, int] = {}
    for index in range(first, last + 1):
        token = tokens[index]
        if token.kind == TEXT:
            a = max(start, offset[index]) - offset[index]
            b = min(end, offset[index] + len(token.text)) - offset[index]
            if b > a:
                items.append(_Item(TEXT, token.text[a:b], token.raw[token.raw_at(a) : token.raw_at(b)]))
        elif token.kind == KEEP:
            items.append(_Item(KEEP, token.text, token.raw))
        elif token.kind == TAG:
            position_of[index] = len(items)
            role = token.role if first <= token.partner <= last else POINT
            items.append(_Item(TAG, "", token.raw, role=role, partner=token.partner))
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
    return _Unit(raw_start, raw_end, items, "".join(item.text for item in items))


def _spans(unit: _Unit) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """The unit's kept spans (start, end, item index) and inline elements (start, end, index of
    the open tag's item), as offsets in its text."""
    keeps, wraps = [], []  # (start, end, index of the kept item or of the open tag)
    position = 0
    opened: dict[int, int] = {}
    for index, item in enumerate(unit.items):
        if item.kind == KEEP:
            keeps.append((position, position + len(item.text), index))
        elif item.kind == TAG and item.role == OPEN:
            opened[index] = position
        elif item.kind == TAG and item.role == CLOSE:
            wraps.append((opened[item.partner], position, item.partner))
        position += len(item.text)
    wraps.sort(key=lambda wrap: wrap[2])
    return keeps, wraps


def _locate(
    unit: _Unit, translation: str, more: dict[str, str], escape: Callable[[str], str], spaced: bool = True
) -> str | None:
    """The translation with the unit's tags and kept spans placed in it, or None if they cannot all
    be placed consistently. In a language written with spaces, an element's words are only found
    as whole words (never `bout<b>on</b>` for "on")."""
    if any(item.kind == TAG and item.role == POINT for item in unit.items):
        return None
    keeps, wraps = _spans(unit)
    # (target start, target end, source start, source end, item index of the kept span or open tag)
    placed: list[tuple[int, int, int, int, int]] = []
    taken = bytearray(len(translation) + 1)
    cursor: dict[str, int] = {}  # a repeated placeholder's next occurrence is searched after its last
    for start, end, item in keeps:
        needle = unit.text[start:end]
        found = _find(translation, needle, cursor.get(needle, 0), taken)
        if found is None:
            return None
        cursor[needle] = found[1]
        taken[found[0] : found[1]] = b"\x01" * (found[1] - found[0])
        placed.append((*found, start, end, item))
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
            found = _find(translation, core, 0, None, spaced)
            if found is None and core in more:
                found = _find(translation, more[core].strip(), 0, None, spaced)
        if found is None:
            return None
        placed.append((*found, start + lead, start + lead + len(core), item))
    for position, item in empty:
        # An empty element (Mastodon's `<span class="invisible"></span>`) goes where its neighbour went.
        target = _beside(placed, position, len(unit.text), len(translation))
        if target is None:
            return None
        placed.append((target, target, position, position, item))
    if not _same_nesting(placed):
        return None
    return _place(translation, unit, placed, {item for *_, item in placed if unit.items[item].kind == KEEP}, escape)


def _beside(placed: list[tuple[int, int, int, int, int]], position: int, length: int, translated: int) -> int | None:
    before = [p[1] for p in placed if p[3] == position and p[3] > p[2]]
    after = [p[0] for p in placed if p[2] == position and p[3] > p[2]]
    if before:
        return before[0]
    if after:
        return after[0]
    if position == 0:
        return 0
    if position == length:
        return translated
    return None


def _find(
    text: str, needle: str, start: int = 0, taken: bytearray | None = None, whole_words: bool = False
) -> tuple[int, int] | None:
    """The first occurrence of `needle` in `text` from `start` that overlaps nothing `taken` and,
    with `whole_words`, is not part of a longer word."""
    if not needle:
        return None
    index = text.find(needle, start)
    while index != -1:
        end = index + len(needle)
        free = taken is None or not any(taken[index:end])
        if free and (not whole_words or _word_edges(text, needle, index, end)):
            return index, end
        index = text.find(needle, index + 1)
    return None


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


def _same_nesting(placed: list[tuple[int, int, int, int, int]]) -> bool:
    for i, first in enumerate(placed):
        for second in placed[i + 1 :]:
            source = _relation(first[2:4], second[2:4])
            target = _relation(first[0:2], second[0:2])
            if source == "crossing" or target == "crossing":
                return False
            if source != target and not (first[0:2] == second[0:2] and source != "apart"):
                return False
    return True


def _place(
    translation: str,
    unit: _Unit,
    placed: list[tuple[int, int, int, int, int]],
    kept: set[int],
    escape: Callable[[str], str],
) -> str:
    """The translation, escaped, with the tags and kept spans at their target positions. At one
    position: the elements ending there close (in source order: innermost first), then those
    starting there open (in source order: outermost first); an empty element and a kept span go
    after whatever came before them in the source."""
    at: dict[int, list[tuple[str, int, str]]] = {}  # position -> (what, source index, raw)
    spans: dict[int, int] = {}
    for start, end, _, _, item in placed:
        if item in kept:
            at.setdefault(start, []).append(("keep", item, unit.items[item].raw))
            spans[start] = end
        elif start == end:
            raw = unit.items[item].raw + unit.items[unit.items[item].partner].raw
            at.setdefault(start, []).append(("empty", item, raw))
        else:
            at.setdefault(end, []).append(("close", unit.items[item].partner, unit.items[unit.items[item].partner].raw))
            at.setdefault(start, []).append(("open", item, unit.items[item].raw))
    out: list[str] = []
    plain_from = 0
    for position in sorted(at):
        out.append(escape(translation[max(plain_from, 0) : position]) if position >= plain_from else "")
        events = at[position]
        order = sorted((e for e in events if e[0] == "close"), key=lambda e: e[1])
        order += sorted((e for e in events if e[0] == "open"), key=lambda e: e[1])
        for extra in sorted((e for e in events if e[0] in ("empty", "keep")), key=lambda e: e[1]):
            after = [i for i, e in enumerate(order) if e[1] < extra[1]]
            order.insert(after[-1] + 1 if after else 0, extra)
        out.extend(raw for *_, raw in order)
        plain_from = spans.get(position, position)
    out.append(escape(translation[plain_from:]))
    return "".join(out)


def _runs(unit: _Unit) -> list[list[_Item]]:
    runs: list[list[_Item]] = []
    current: list[_Item] = []
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


def _second_round_texts(unit: _Unit, translation: str, spaced: bool) -> list[str]:
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


def _fragments(unit: _Unit, more: dict[str, str], escape: Callable[[str], str]) -> str:
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
