"""A record as a sequence of tokens: text to translate, spans to keep, and (in HTML) tags.

Everything here is lossless: the tokens' `raw` strings, concatenated, are the record exactly, so
whatever is not translated comes back byte for byte (attributes, entities, comments, `<pre>`).

HTML is tokenized by Python's own `html.parser` (CPython's maintained HTML tokenizer, which
follows the HTML5 rules for raw-text elements, comments, character references and bogus markup).
It is used rather than lxml, selectolax or html5lib because it is the one that reports where in
the source each token starts: the answer is the source with only the translated text replaced,
never a re-serialized tree, so quoting, entity spelling and whitespace everywhere else survive.

Token kinds:
- TEXT: text of a block, with `text` its decoded characters (`&amp;` -> `&`);
- KEEP: a span that comes back as `raw`, whose `text` the model sees for context: a placeholder,
  URL or e-mail address (translator/text/placeholders.py), or an inline element not to translate
  (`code`, `kbd`, `samp`, `var`, anything with `translate="no"` or class `notranslate`);
- TAG: an inline tag (`b`, `a`, `span`, ...), `role` OPEN/CLOSE with `partner` the index of its
  match in the same block, or POINT (a void element like `img`, a comment, an unmatched tag);
- BREAK: everything between blocks of text: block-level tags (`p`, `div`, `li`, `br`, ...) and
  whole elements never translated (`script`, `style`, `pre`, `textarea`, block-level
  `translate="no"`). A sentence never crosses a BREAK.
"""

from __future__ import annotations

import bisect
import html
import math
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from translator.text.placeholders import placeholder_spans

TEXT, KEEP, TAG, BREAK = "text", "keep", "tag", "break"
OPEN, CLOSE, POINT = "open", "close", "point"

# Phrasing elements that may sit inside a sentence; every other element separates blocks.
INLINE = frozenset(
    "a abbr acronym b bdi bdo big cite data del dfn em font i ins label mark nobr q rp rt ruby s small span "
    "strike strong sub sup time tt u".split()
)
# Inline elements whose content is code or sample input: kept, never translated.
KEPT_INLINE = frozenset("code kbd samp var".split())
# Elements whose content is never translated, and which separate blocks.
KEPT_BLOCK = frozenset("script style pre textarea svg math template noscript iframe object".split())
VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
# Void elements that may sit inside a sentence (an emoji image, a soft hyphen point).
INLINE_VOID = frozenset({"img", "wbr"})


@dataclass
class Token:
    kind: str
    raw: str
    text: str = ""
    name: str = ""
    role: str = ""
    partner: int = -1
    # TEXT only: cumulative (decoded, raw) offsets at each character or character reference, so a
    # cut between sentences inside one text node maps back to the source.
    offsets: list[tuple[int, int]] = field(default_factory=list)

    def raw_at(self, decoded: int) -> int:
        """The offset in `raw` of the decoded character at `decoded` (a boundary inside a
        multi-character reference maps to its start)."""
        if not self.offsets:
            return decoded
        # The last offset at or before `decoded` (bisect: a long text node is cut many times).
        index = bisect.bisect_right(self.offsets, (decoded, math.inf)) - 1
        return self.offsets[index][1] if index >= 0 else 0


def text_tokens(text: str) -> list[Token]:
    """A plain-text record: its text, with placeholders, URLs and addresses as KEEP tokens."""
    return _with_placeholders(Token(TEXT, text, text))


def html_tokens(source: str) -> list[Token]:
    """An HTML document or fragment as tokens (module docstring)."""
    events = _events(source)
    tokens: list[Token] = []
    index = 0
    while index < len(events):
        kind, name, attrs, start, end = events[index]
        if kind == "data":
            raw = source[start:end]
            tokens.extend(_with_placeholders(_text_token(raw)))
        elif kind in ("start", "startend"):
            kept = name in KEPT_BLOCK or name in KEPT_INLINE or _not_translated(attrs)
            if kept and kind == "start" and name not in VOID:
                close = _matching_end(events, index, name)
                stop = events[close][4] if close is not None else len(source)
                raw = source[start:stop]
                if name in INLINE or name in KEPT_INLINE:
                    inner = [source[e[3] : e[4]] for e in events[index + 1 : close] if e[0] == "data"]
                    tokens.append(Token(KEEP, raw, html.unescape("".join(inner)), name=name))
                else:
                    tokens.append(Token(BREAK, raw, name=name))
                index = close + 1 if close is not None else len(events)
                continue
            raw = source[start:end]
            if name in INLINE and kind == "start":
                tokens.append(Token(TAG, raw, name=name, role=OPEN))
            elif name in INLINE or name in INLINE_VOID or (kept and name in INLINE | KEPT_INLINE):
                tokens.append(Token(TAG, raw, name=name, role=POINT))
            else:
                tokens.append(Token(BREAK, raw, name=name))
        elif kind == "end":
            raw = source[start:end]
            if name in INLINE:
                tokens.append(Token(TAG, raw, name=name, role=CLOSE))
            else:
                tokens.append(Token(BREAK, raw, name=name))
        else:  # comment, declaration, processing instruction: kept where they are
            tokens.append(Token(TAG, source[start:end], role=POINT))
        index += 1
    _pair(tokens)
    return tokens


def _not_translated(attrs: list[tuple[str, str | None]]) -> bool:
    for key, value in attrs:
        if key == "translate" and (value or "").strip().lower() == "no":
            return True
        if key == "class" and "notranslate" in (value or "").split():
            return True
    return False


def _matching_end(events: list[tuple[str, str, list, int, int]], index: int, name: str) -> int | None:
    depth = 0
    for position in range(index + 1, len(events)):
        kind, other = events[position][0], events[position][1]
        if other != name:
            continue
        if kind == "start":
            depth += 1
        elif kind == "end":
            if depth == 0:
                return position
            depth -= 1
    return None


def _pair(tokens: list[Token]) -> None:
    """Match inline OPEN and CLOSE tags within each block; the unmatched become POINTs."""
    stack: list[int] = []
    for index, token in enumerate(tokens):
        if token.kind == BREAK:
            for unmatched in stack:
                tokens[unmatched].role = POINT
            stack = []
        elif token.kind == TAG and token.role == OPEN:
            stack.append(index)
        elif token.kind == TAG and token.role == CLOSE:
            depth = next((d for d in range(len(stack) - 1, -1, -1) if tokens[stack[d]].name == token.name), None)
            if depth is None:
                token.role = POINT
                continue
            for unmatched in stack[depth + 1 :]:
                tokens[unmatched].role = POINT
            opener = stack[depth]
            del stack[depth:]
            tokens[opener].partner, token.partner = index, opener
    for unmatched in stack:
        tokens[unmatched].role = POINT


# The character references html.unescape decodes (the same grammar), so that a decoded offset
# maps back to the source.
_CHARREF = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")


def _text_token(raw: str) -> Token:
    offsets = []
    decoded_parts = []
    decoded = position = 0
    for match in _CHARREF.finditer(raw):
        for char in raw[position : match.start()]:
            offsets.append((decoded, position))
            decoded_parts.append(char)
            decoded += 1
            position += 1
        offsets.append((decoded, position))
        value = html.unescape(match.group())
        decoded_parts.append(value)
        decoded += len(value)
        position = match.end()
    for char in raw[position:]:
        offsets.append((decoded, position))
        decoded_parts.append(char)
        decoded += 1
        position += 1
    offsets.append((decoded, position))
    return Token(TEXT, raw, "".join(decoded_parts), offsets=offsets)


def _with_placeholders(token: Token) -> list[Token]:
    spans = placeholder_spans(token.text)
    if not spans:
        return [token]
    out = []
    cursor = 0
    for start, end in [*spans, (len(token.text), len(token.text))]:
        if start > cursor:
            out.append(_slice(token, cursor, start, TEXT))
        if end > start:
            out.append(_slice(token, start, end, KEEP))
        cursor = end
    return out


def _slice(token: Token, start: int, end: int, kind: str) -> Token:
    raw_start, raw_end = token.raw_at(start), token.raw_at(end)
    raw = token.raw[raw_start:raw_end]
    if kind == KEEP:
        return Token(KEEP, raw, token.text[start:end])
    if not token.offsets:
        return Token(TEXT, raw, token.text[start:end])
    offsets = [(d - start, r - raw_start) for d, r in token.offsets if start <= d <= end]
    return Token(TEXT, raw, token.text[start:end], offsets=offsets)


class _Events(HTMLParser):
    """(kind, tag name, attributes, start, end) for each token of the source, in order; the end of
    one is the start of the next, so together they cover the source exactly."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.line_starts = [0]
        self.line_starts += [i + 1 for i, char in enumerate(source) if char == "\n"]
        self.found: list[tuple[str, str, list, int]] = []

    def _add(self, kind: str, name: str = "", attrs: list | None = None) -> None:
        line, column = self.getpos()
        self.found.append((kind, name, attrs or [], self.line_starts[line - 1] + column))

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._add("start", tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self._add("startend", tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self._add("end", tag)

    def handle_data(self, data: str) -> None:
        self._add("data")

    def handle_comment(self, data: str) -> None:
        self._add("other")

    def handle_decl(self, decl: str) -> None:
        self._add("other")

    def handle_pi(self, data: str) -> None:
        self._add("other")

    def unknown_decl(self, data: str) -> None:
        self._add("other")


def _events(source: str) -> list[tuple[str, str, list, int, int]]:
    if not source:
        return []
    parser = _Events(source)
    parser.feed(source)
    parser.close()
    found = parser.found
    events = []
    for position, (kind, name, attrs, start) in enumerate(found):
        end = found[position + 1][3] if position + 1 < len(found) else len(source)
        if end > start:
            events.append((kind, name, attrs, start, end))
    if not events or events[0][3] != 0:
        # Nothing reported before some prefix (never seen; kept as it is if it happens).
        events.insert(0, ("other", "", [], 0, events[0][3] if events else len(source)))
    # Consecutive data events (the parser may report one text run in pieces) are one text node.
    merged: list[tuple[str, str, list, int, int]] = []
    for event in events:
        if merged and event[0] == "data" and merged[-1][0] == "data":
            kind, name, attrs, start, _ = merged[-1]
            merged[-1] = (kind, name, attrs, start, event[4])
        else:
            merged.append(event)
    return merged
