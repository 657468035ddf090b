"""Cut text into sentence pieces for translation and put the translations back.

A text becomes a sequence of *parts* whose concatenation is exactly the original
text.  Translatable parts ("pieces") are sentences, or chunks of sentences that are
longer than ``max_chars``; the other parts are whitespace separators that are
copied verbatim by :func:`join`, so spacing, indentation, ``\\r\\n`` line ends and
blank lines survive translation unchanged.

Guarantees of :func:`split_text` (checked by property tests):

* ``"".join(parts) == text``; no part is empty.
* Every separator part is whitespace only (``str.isspace``), and every run of
  whitespace between pieces, plus leading and trailing whitespace, is a separator.
  Whitespace *inside* a sentence stays inside its piece.
* Every piece is non-empty, neither starts nor ends with whitespace and has at most
  ``max_chars`` characters.  Two pieces may be adjacent without a separator (CJK
  sentences, which have no spaces between them, and hard cuts).
* A hard cut (a chunk boundary that is neither at whitespace nor after punctuation)
  never separates a character from following combining/enclosing/spacing marks or
  variation selectors, never touches a ZWJ (so ZWJ emoji sequences stay whole),
  never separates an emoji from its skin-tone modifier or tag characters, never
  splits a regional-indicator pair (flag), never cuts right after a virama and never
  splits a surrogate pair.  To do so it backs off at most 32 characters and never
  to an empty chunk; a cluster that cannot be kept whole that way (one longer than
  ``max_chars``, or "Zalgo" text) is cut at ``max_chars`` -- the length bound
  always wins.  This is not full UAX #29 grapheme segmentation (e.g. Hangul jamo
  sequences and prepended concatenation marks are not treated specially), and
  cuts at sentence ends or after punctuation do not look at what follows.

Sentence rules, in short: a piece ends after ``. ! ? …`` (and runs such as
``?!`` or ``...``, plus a few non-Latin terminals such as Arabic ``؟``) that are
followed by whitespace; after CJK ``。！？．`` even without whitespace; and at every
line break.  Closing quotes/brackets directly after the punctuation stay with the
sentence.  A "." followed by whitespace does not end a sentence after an entry of
:data:`ABBREVIATIONS` ("No." only before a number), a single capital initial
("J.") or dotted initials ("U.S.", "e.g.").
Sentences longer than ``max_chars`` are cut greedily: after ``, ; :`` + whitespace
or CJK ``、，；：`` when that keeps at least half the limit, else at the last
whitespace, else after any such punctuation, else hard at ``max_chars``.

Work is linear in the length of the text: every regular expression below is
written so that it cannot backtrack quadratically on long runs of the same class of
character.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["ABBREVIATIONS", "Segmented", "join", "split_text"]

# Words ending in "." that do not end a sentence when followed by whitespace.
# All-lower-case entries match in any case ("ETC.", "Mr."); entries containing a
# capital match only as written, because in lower case they are ordinary words
# that do end sentences ("I said no. Then ..." must still split).  "No." (numero)
# additionally needs a digit next ("No. 5"), since a bare "No." is usually an answer.
# Single capital initials ("J.") and dotted initials ("U.S.", "J.R.R.") are
# recognised by rule, not listed.
ABBREVIATIONS: frozenset[str] = frozenset(
    {
        "mr.",
        "mrs.",
        "ms.",
        "dr.",
        "prof.",
        "st.",
        "vs.",
        "etc.",
        "e.g.",
        "i.e.",
        "inc.",
        "ltd.",
        "jr.",
        "sr.",
        "No.",
    }
)
_ABBREV_ANY_CASE = frozenset(a for a in ABBREVIATIONS if a == a.lower())
_ABBREV_EXACT = ABBREVIATIONS - _ABBREV_ANY_CASE
_ABBREV_BEFORE_NUMBER = ABBREVIATIONS & {"No."}
# Longer than any abbreviation; a word that fills the whole look-back window is
# therefore never one, which keeps the look-back O(1).
_ABBREV_WINDOW = 32

# End a sentence only when whitespace follows ("3.14", "v1.2", "a.b@c.org" stay whole).
_TERMINALS = ".!?\u2026\u203c\u2047\u2048\u2049\u061f\u06d4\u0964\u0965"  # . ! ? … ‼ ⁇ ⁈ ⁉ ؟ ۔ । ॥
# End a sentence even without whitespace: CJK text has no spaces between sentences.
_CJK_TERMINALS = "\u3002\uff01\uff1f\uff0e\uff61"  # 。！？．｡
# Closing quotes/brackets that belong to the sentence they directly follow.
# Openers that double as closers in some languages (“ ‘ « ‹) are left out: in
# Chinese “ opens a quotation, so attaching it to the previous sentence is wrong.
_CLOSERS = (
    "\u300d\u300f\uff09)\"'\u201d\u2019\u3011\u300b]\uff63\u3015\u3009\uff3d\uff5d}\u00bb\u203a\u3019\u3017\u301b"
)
# Same set as str.splitlines(); a line break always ends a piece.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# Secondary punctuation for chunking over-long sentences.  Western marks need
# whitespace after them (so "12:30", "1,000" and URLs are not cut); CJK marks don't.
_SOFT_PUNCT = ",;:\u060c\u061b"  # , ; : ، ؛
_CJK_SOFT_PUNCT = "\u3001\uff0c\uff1b\uff1a\uff64"  # 、，；：､


def _cls(chars: str, negate: bool = False, extra: str = "") -> str:
    return "[" + ("^" if negate else "") + extra + re.escape(chars) + "]"


_T = _cls(_TERMINALS + _CJK_TERMINALS)
_J = _cls(_CJK_TERMINALS)
_C = _cls(_CLOSERS)
_LB = _cls(_LINE_BREAKS)
_NOT_WS_CLOSER_OR_TERMINAL = _cls(_CLOSERS + _TERMINALS + _CJK_TERMINALS, negate=True, extra=r"\s")
_WS_NOT_LINE_BREAK = _cls(_LINE_BREAKS, negate=True, extra=r"\S")
_T_OR_WS = _cls(_TERMINALS + _CJK_TERMINALS, extra=r"\s")

# One pass over the text finds every candidate sentence boundary.
# The leading character class lets the regex engine skip, in C, everything that is
# neither punctuation nor whitespace (about 5x faster than starting with
# look-behinds).  The look-behinds after it make each branch start only at the first
# character of a run, which keeps long runs of "....", "。。。。" or spaces linear.
_BOUNDARY_RE = re.compile(
    rf"{_T_OR_WS}"
    # terminal punctuation (+ closers) followed by whitespace, which is the gap
    rf"(?:(?<={_T})(?<!{_T}{_T}){_T}*{_C}*(?P<gap>\s+)"
    # CJK terminal (+ closers) directly followed by more text; the next character
    # must not be a closer or terminal, otherwise backtracking could cut "。|」" or "。|。"
    rf"|(?<={_J})(?<!{_J}{_J}){_J}*{_C}*(?={_NOT_WS_CLOSER_OR_TERMINAL})(?P<cjk>)"
    # a whitespace run that contains a line break
    rf"|(?<=\s)(?<!\s\s)(?:(?<={_LB})|{_WS_NOT_LINE_BREAK}*{_LB})\s*)"
)
_LINE_BREAK_RE = re.compile(_LB)
_WHITESPACE_RUN_RE = re.compile(r"\s+")
_TRAILING_WORD_RE = re.compile(r"[\w.]+\Z")
_DOTTED_INITIALS_RE = re.compile(r"(?:[^\W\d_]\.){2,}")

# The greedy ".*" backtracks from the end of the window, so these find the *last*
# candidate cut in one C-level scan instead of iterating over all of them.
_LAST_SOFT_CUT_RE = re.compile(
    rf"(?s:.*)(?:{_cls(_SOFT_PUNCT)}{_C}*(?=\s)"
    # requiring a real (non-closer) character after the CJK mark keeps the cut
    # inside the window and off the middle of a closer run
    rf"|{_cls(_CJK_SOFT_PUNCT)}{_C}*(?={_cls(_CLOSERS, negate=True)}))"
)
_LAST_SPACE_RE = re.compile(r"(?s:.*)\S(?=\s)")

_ZWJ = "\u200d"
# How far a hard cut may back off to keep a cluster whole.  Real clusters (ZWJ
# family emoji, tag flags, stacked diacritics) are far shorter; the cap keeps
# "Zalgo" text with thousands of marks linear.
_MAX_CLUSTER = 32


@dataclass(frozen=True)
class Segmented:
    """A text cut into consecutive parts; ``"".join(parts)`` is the original text."""

    parts: tuple[str, ...]
    translatable: tuple[bool, ...]

    def __post_init__(self) -> None:
        if len(self.parts) != len(self.translatable):
            raise ValueError(f"parts and translatable differ in length: {len(self.parts)} != {len(self.translatable)}")

    @property
    def pieces(self) -> list[str]:
        """The translatable parts, in order."""
        return [part for part, flag in zip(self.parts, self.translatable, strict=True) if flag]


def split_text(text: str, max_chars: int) -> Segmented:
    """Cut ``text`` into sentence pieces of at most ``max_chars`` characters and
    whitespace separators (see the module docstring for the exact guarantees)."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if start >= end:
        return Segmented((text,), (False,)) if text else Segmented((), ())

    parts: list[str] = []
    flags: list[bool] = []
    if start:
        parts.append(text[:start])
        flags.append(False)
    for sent_start, sent_end, gap_end in _sentences(text, start, end):
        if sent_end - sent_start <= max_chars:
            parts.append(text[sent_start:sent_end])
            flags.append(True)
        else:
            _add_chunks(text, sent_start, sent_end, max_chars, parts, flags)
        if gap_end > sent_end:
            parts.append(text[sent_end:gap_end])
            flags.append(False)
    if end < len(text):
        parts.append(text[end:])
        flags.append(False)
    return Segmented(tuple(parts), tuple(flags))


def join(segmented: Segmented, translations: Sequence[str]) -> str:
    """Rebuild the text with each piece replaced by the next translation.

    Separators are kept verbatim; translations are inserted as given (no trimming).
    Raises ``ValueError`` if the number of translations differs from the number of
    pieces, since a silent mismatch would shift every later sentence.
    """
    expected = sum(segmented.translatable)
    if len(translations) != expected:
        raise ValueError(f"expected {expected} translations, got {len(translations)}")
    remaining = iter(translations)
    return "".join(
        next(remaining) if flag else part for part, flag in zip(segmented.parts, segmented.translatable, strict=True)
    )


def _sentences(text: str, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """Yield ``(sentence_start, sentence_end, gap_end)`` for the sentences of
    ``text[start:end]``, which must begin and end with non-whitespace.

    ``text[sentence_end:gap_end]`` is the whitespace after the sentence (empty for
    CJK boundaries and for the last sentence).
    """
    sent_start = start
    for m in _BOUNDARY_RE.finditer(text, start, end):
        if m["gap"] is not None:
            cut, gap_end = m.start("gap"), m.end()
            if (
                cut - m.start() == 1
                and text[m.start()] == "."
                and _is_abbreviation(text, cut, start, text[gap_end])
                and not _LINE_BREAK_RE.search(text, cut, gap_end)
            ):
                continue
        elif m["cjk"] is not None:
            cut = gap_end = m.end()
            if cut - m.start() == 1 and text[m.start()] == "\uff0e" and _between_digits(text, m.start(), start):
                continue  # fullwidth decimal point: "３．１４"
        else:
            cut, gap_end = m.start(), m.end()
        yield sent_start, cut, gap_end
        sent_start = gap_end
    yield sent_start, end, end


def _is_abbreviation(text: str, dot_end: int, floor: int, next_char: str) -> bool:
    """Whether the word ending with the "." at ``dot_end - 1`` is an abbreviation
    or an initial, so that the whitespace before ``next_char`` does not end the
    sentence."""
    low = max(floor, dot_end - _ABBREV_WINDOW)
    # str.rsplit runs in C; a regex search over the window was the hot spot on
    # texts made of many short sentences.
    token = text[low:dot_end].rsplit(None, 1)[-1]
    if low > floor and len(token) == dot_end - low:
        return False  # the word may go on before the window: too long to be an abbreviation
    m = _TRAILING_WORD_RE.search(token)  # drop leading "(", quotes, ...
    if m is None:
        return False
    word = m.group()
    if word in _ABBREV_BEFORE_NUMBER:
        return next_char.isdigit()
    if word in _ABBREV_EXACT or word.lower() in _ABBREV_ANY_CASE:
        return True
    if len(word) == 2 and word[0].isupper():
        return True  # initial: "J. R. R. Tolkien"
    return _DOTTED_INITIALS_RE.fullmatch(word) is not None  # "U.S.", "J.R.R."


def _between_digits(text: str, index: int, floor: int) -> bool:
    return index > floor and text[index - 1].isdecimal() and text[index + 1].isdecimal()


def _add_chunks(text: str, start: int, end: int, max_chars: int, parts: list[str], flags: list[bool]) -> None:
    """Append ``text[start:end]`` as pieces of at most ``max_chars`` characters,
    with the whitespace at each cut as a separator part."""
    pos = start
    while end - pos > max_chars:
        cut, resume = _find_cut(text, pos, pos + max_chars, max_chars)
        parts.append(text[pos:cut])
        flags.append(True)
        if resume > cut:
            parts.append(text[cut:resume])
            flags.append(False)
        pos = resume
    parts.append(text[pos:end])
    flags.append(True)


def _find_cut(text: str, pos: int, limit: int, max_chars: int) -> tuple[int, int]:
    """Choose where the chunk starting at ``pos`` ends (``cut <= limit``) and where
    the next one starts (``resume``, after any whitespace at the cut).

    ``text[pos]`` is not whitespace and ``text[limit]`` exists.  The regex scans use
    ``limit + 1`` as the end so that whitespace right after a full-length chunk
    counts as a cut point.
    """
    soft = _LAST_SOFT_CUT_RE.match(text, pos, limit + 1)
    soft_cut = soft.end() if soft else -1
    # A comma early in the window would give a tiny chunk; only prefer punctuation
    # over whitespace when the chunk still fills at least half the limit.
    if soft_cut - pos >= (max_chars + 1) // 2:
        return soft_cut, _skip_whitespace(text, soft_cut)
    space = _LAST_SPACE_RE.match(text, pos, limit + 1)
    if space:
        return space.end(), _skip_whitespace(text, space.end())
    if soft_cut > pos:
        return soft_cut, _skip_whitespace(text, soft_cut)
    cut = limit
    floor = max(pos + 1, limit - _MAX_CLUSTER)
    while cut >= floor and _is_glued(text, cut, pos):
        cut -= 1
    if cut < floor:
        cut = limit  # no cluster boundary within reach: the length bound wins
    return cut, cut


def _skip_whitespace(text: str, index: int) -> int:
    m = _WHITESPACE_RUN_RE.match(text, index)
    return m.end() if m else index


def _is_glued(text: str, index: int, floor: int) -> bool:
    """Whether a cut just before ``text[index]`` would split a character cluster
    (``floor`` is where the current chunk starts; nothing before it is looked at)."""
    char, prev = text[index], text[index - 1]
    if char == _ZWJ or prev == _ZWJ:
        return True
    # Marks (Mn/Mc/Me, which include variation selectors) attach to what precedes.
    if unicodedata.category(char)[0] == "M" or unicodedata.combining(char):
        return True
    if "\U0001f3fb" <= char <= "\U0001f3ff" or "\U000e0020" <= char <= "\U000e007f":
        return True  # emoji skin-tone modifier, emoji tag sequence
    if "\udc00" <= char <= "\udfff" and "\ud800" <= prev <= "\udbff":
        return True  # surrogate pair (only in strings decoded with surrogatepass)
    if unicodedata.combining(prev) == 9:
        return True  # virama: "क्|ष" would break the conjunct
    if _is_regional_indicator(char) and _is_regional_indicator(prev):
        # Flags are pairs; a cut inside a run is fine only at an even offset.
        run = 0
        i = index - 1
        while i >= floor and _is_regional_indicator(text[i]):
            run += 1
            i -= 1
        return run % 2 == 1
    return False


def _is_regional_indicator(char: str) -> bool:
    return "\U0001f1e6" <= char <= "\U0001f1ff"
