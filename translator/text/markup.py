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

from translator.text.html_events import html_events
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
    # TEXT only: (decoded offset, raw offset, decoded length of the reference there or 0) where the text
    # starts, at each character reference and after it; between two, a decoded character is one raw
    # one. Empty when decoded and raw are the same. A cut inside a text node maps back to the source.
    offsets: list[tuple[int, int, int]] = field(default_factory=list)

    def raw_at(self, decoded: int) -> int:
        """The offset in `raw` of the decoded character at `decoded` (a boundary inside a
        multi-character reference maps to its start)."""
        if not self.offsets:
            return decoded
        # The last anchor at or before `decoded` (bisect: a long text node is cut many times).
        index = bisect.bisect_right(self.offsets, (decoded, math.inf, math.inf)) - 1
        if index < 0:
            return 0
        start, raw, reference = self.offsets[index]
        return raw if reference else raw + decoded - start


def text_tokens(text: str) -> list[Token]:
    """A plain-text record: its text, with placeholders, URLs and addresses as KEEP tokens."""
    return _with_placeholders(Token(TEXT, text, text))


def html_tokens(source: str, keep: frozenset[str] = frozenset()) -> list[Token]:
    """An HTML document or fragment as tokens (module docstring); elements named in `keep` (`keepTags`)
    are KEEP tokens (Weblate's `<x id="1"></x>`), never a cut in the sentence around them."""
    events = html_events(source)
    tokens: list[Token] = []
    index = 0
    while index < len(events):
        kind, name, attrs, start, end = events[index]
        if kind == "data":
            tokens.extend(_with_placeholders(_text_token(source[start:end])))
        elif kind in ("start", "startend"):
            if name in keep and (kind == "startend" or name in VOID):  # `<x id="1"/>`: an empty kept span
                tokens.append(Token(KEEP, source[start:end], "", name=name))
                index += 1
                continue
            kept = name in KEPT_BLOCK or name in KEPT_INLINE or name in keep or _not_translated(attrs)
            if kept and kind == "start" and name not in VOID:
                last, closed = _element_end(events, index, name)
                stop = events[last][4] if last > index else end
                raw = source[start:stop]
                inner_end = last if closed else last + 1
                if name in INLINE or name in KEPT_INLINE or name in keep:
                    inner = [source[e[3] : e[4]] for e in events[index + 1 : inner_end] if e[0] == "data"]
                    tokens.append(Token(KEEP, raw, html.unescape("".join(inner)), name=name))
                else:
                    tokens.append(Token(BREAK, raw, name=name))
                index = last + 1
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
    tokens = _placeholders_across_tags(tokens)
    _pair(tokens)
    return tokens


def _placeholders_across_tags(tokens: list[Token]) -> list[Token]:
    """Placeholders and URLs that tags cut in parts (Mastodon writes a link's text as
    `<span>https://</span><span>example.com/a</span>`): their text parts become KEEP too."""
    out: list[Token] = []
    block: list[Token] = []
    for token in [*tokens, Token(BREAK, "")]:
        if token.kind != BREAK:
            block.append(token)
            continue
        out.extend(_protect(block) if sum(t.kind == TEXT for t in block) > 1 else block)
        block = []
        if token.raw:
            out.append(token)
    return out


def _protect(block: list[Token]) -> list[Token]:
    starts, position = [], 0
    for token in block:
        starts.append(position)
        position += len(token.text) if token.kind in (TEXT, KEEP) else 0
    visible = "".join(t.text for t in block if t.kind in (TEXT, KEEP))
    # The spans of the tokens with text, in order: a placeholder inside one of them is its own.
    edges = [(start, start + len(t.text)) for t, start in zip(block, starts, strict=True) if t.text]
    lefts = [left for left, _ in edges]

    def within_one(a: int, b: int) -> bool:
        index = bisect.bisect_right(lefts, a) - 1
        return index >= 0 and b <= edges[index][1]

    crossing = [(a, b) for a, b in placeholder_spans(visible) if not within_one(a, b)]
    if not crossing:
        return block
    out: list[Token] = []
    for token, start in zip(block, starts, strict=True):
        if token.kind != TEXT:
            out.append(token)
            continue
        cuts = sorted(
            {0, len(token.text)} | {min(max(edge - start, 0), len(token.text)) for span in crossing for edge in span}
        )
        for a, b in zip(cuts, cuts[1:], strict=False):
            inside = any(x <= start + a and start + b <= y for x, y in crossing)
            out.append(html_slice(token, a, b, KEEP if inside else TEXT))
    return out


def _not_translated(attrs: list[tuple[str, str | None]]) -> bool:
    for key, value in attrs:
        if key == "translate" and (value or "").strip().lower() == "no":
            return True
        if key == "class" and "notranslate" in (value or "").split():
            return True
    return False


def _element_end(events: list[tuple[str, str, list, int, int]], index: int, name: str) -> tuple[int, bool]:
    """The index of the last event of the element that starts at `index`, and whether that is its
    end tag. An element left open ends before its parent's end tag, or where HTML implies its end
    (`<p>` before a block, `<li>` before the next `<li>`; an inline element before a block): never
    at the end of the document, which would keep everything after it untranslated."""
    inside: list[str] = []
    for position in range(index + 1, len(events)):
        kind, other = events[position][0], events[position][1]
        if kind in ("start", "startend"):
            if all(o in INLINE for o in inside) and _ends(name, other):
                return position - 1, False
            if kind == "start" and other not in VOID:
                inside.append(other)
        elif kind == "end":
            if other in inside:
                while inside.pop() != other:
                    pass
            elif other == name:
                return position, True
            elif other not in VOID:
                return position - 1, False  # the parent closes
    return len(events) - 1, False


# HTML's phrasing content beyond the inline elements above: none of them ends an open `<p>` or an
# inline element. `<code>x = 1<br>y = 2</code>` is one element; read as ended at the `<br>`, its
# second line was translated (#49: docutils' quickref.html, `<samp>`, `translate="no"`).
PHRASING = (
    INLINE
    | KEPT_INLINE
    | INLINE_VOID
    | frozenset(
        "br button canvas embed iframe input meter object output picture progress select slot svg math template "
        "textarea audio video script noscript".split()
    )
)


def _ends(name: str, starting: str) -> bool:
    """Whether a `starting` tag implies the end of an open `name` element."""
    if name == "p" or name in INLINE or name in KEPT_INLINE:
        return starting not in PHRASING
    return starting in _IMPLIED_BY.get(name, ())


_IMPLIED_BY = {
    "li": {"li"},
    "dt": {"dt", "dd"},
    "dd": {"dt", "dd"},
    "td": {"td", "th", "tr"},
    "th": {"td", "th", "tr"},
    "tr": {"tr"},
    "option": {"option", "optgroup"},
}


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
    offsets = [(0, 0, 0)]
    decoded_parts = []
    decoded = position = 0
    for match in _CHARREF.finditer(raw):
        reference = _reference(match.group())
        if reference is None:
            continue  # not a reference (`&page=2`): its characters are text, read below
        decoded_parts.append(raw[position : match.start()])
        decoded += match.start() - position
        value = html.unescape(reference)
        offsets.append((decoded, match.start(), len(value)))
        decoded_parts.append(value)
        decoded += len(value)
        position = match.start() + len(reference)
        offsets.append((decoded, position, 0))
    decoded_parts.append(raw[position:])
    return Token(TEXT, raw, "".join(decoded_parts), offsets=offsets if len(offsets) > 1 else [])


def _reference(candidate: str) -> str | None:
    """The character reference at the start of `candidate` (a match of _CHARREF), or None when
    html.unescape leaves it as it is. A legacy reference without ";" (`&ampJerry`) is only its
    entity's name (`&amp`): the letters after it are text."""
    value = html.unescape(candidate)
    if value == candidate:
        return None
    for length in range(len(candidate), 1, -1):
        prefix = candidate[:length]
        decoded = html.unescape(prefix)
        if decoded != prefix and decoded + candidate[length:] == value:
            return prefix
    return candidate


def _with_placeholders(token: Token) -> list[Token]:
    spans = placeholder_spans(token.text)
    if not spans:
        return [token]
    out = []
    cursor = 0
    for start, end in [*spans, (len(token.text), len(token.text))]:
        if start > cursor:
            out.append(html_slice(token, cursor, start, TEXT))
        if end > start:
            out.append(html_slice(token, start, end, KEEP))
        cursor = end
    return out


def html_slice(token: Token, start: int, end: int, kind: str) -> Token:
    raw_start, raw_end = token.raw_at(start), token.raw_at(end)
    raw = token.raw[raw_start:raw_end]
    if kind == KEEP:
        return Token(KEEP, raw, token.text[start:end])
    if not token.offsets:
        return Token(TEXT, raw, token.text[start:end])
    low = bisect.bisect_right(token.offsets, (start, math.inf, math.inf))
    high = bisect.bisect_right(token.offsets, (end, math.inf, math.inf))
    # The slice starts as plain text, or inside the reference that covers `start`.
    first_start, _, first_reference = token.offsets[low - 1]
    inside = max(first_start + first_reference - start, 0) if first_reference else 0
    offsets = [(0, 0, inside)] + [(d - start, r - raw_start, n) for d, r, n in token.offsets[low:high]]
    return Token(TEXT, raw, token.text[start:end], offsets=offsets)
