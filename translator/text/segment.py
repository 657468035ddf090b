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
  falls between extended grapheme clusters (UAX #29, the ``regex`` module's ``\\X``:
  marks, ZWJ emoji sequences, skin tones, flags, tag sequences, Hangul syllables and
  prepended marks stay whole), and besides never right after a ZWJ or a virama,
  never before a mark and never inside a surrogate pair.  To do so it backs off at
  most 32 characters and never to an empty chunk; a cluster that cannot be kept
  whole that way (one longer than ``max_chars``, or "Zalgo" text) is cut at
  ``max_chars`` -- the length bound always wins.  Cuts at sentence ends or after
  punctuation do not look at what follows.

Sentence boundaries and their rules are translator/text/sentences.py's.

Sentences longer than ``max_chars`` are cut greedily: after ``, ; :`` + whitespace
or CJK ``、，；：`` when that keeps at least half the limit, else at the last
whitespace, else after any such punctuation, else hard at ``max_chars``.

Work is linear in the length of the text: sentences.py sees to its part, and every
regular expression below is written so that it cannot backtrack quadratically.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import regex

from translator.text.sentences import CLOSERS, char_class, sentence_spans, skip_whitespace

__all__ = ["Segmented", "has_letters", "join", "split_text"]

# Secondary punctuation for chunking over-long sentences.  Western marks need
# whitespace after them (so "12:30", "1,000" and URLs are not cut); CJK marks don't.
_SOFT_PUNCT = ",;:\u060c\u061b"  # , ; : ، ؛
_CJK_SOFT_PUNCT = "\u3001\uff0c\uff1b\uff1a\uff64"  # 、，；：､
_C = char_class(CLOSERS)

# The greedy ".*" backtracks from the end of the window, so these find the *last*
# candidate cut in one C-level scan instead of iterating over all of them.
_LAST_SOFT_CUT_RE = re.compile(
    rf"(?s:.*)(?:{char_class(_SOFT_PUNCT)}{_C}*(?=\s)"
    # requiring a real (non-closer) character after the CJK mark keeps the cut
    # inside the window and off the middle of a closer run
    rf"|{char_class(_CJK_SOFT_PUNCT)}{_C}*(?={char_class(CLOSERS, negate=True)}))"
)
_LAST_SPACE_RE = re.compile(r"(?s:.*)\S(?=\s)")

_ZWJ = "\u200d"
# Extended grapheme clusters (UAX #29), which the standard library's `re` does not know.
_CLUSTER_RE = regex.compile(r"\X")
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


# Languages written without spaces between sentences (and clauses): parts are rejoined without one.
UNSPACED_LANGUAGES = frozenset({"ja", "zh", "th", "lo", "km", "my"})


def has_letters(text: str) -> bool:
    """Whether `text` has a letter of any script: text without (numbers, symbols, emoji) is never
    sent to the model, and has no language to detect."""
    return any(unicodedata.category(char).startswith("L") for char in text)


def split_text(text: str, max_chars: int, language: str = "en") -> Segmented:
    """Cut ``text`` into sentence pieces of at most ``max_chars`` characters and
    whitespace separators (see the module docstring for the exact guarantees).

    ``language`` is the text's language code (M2M100's); it selects the library's
    rules (abbreviations, terminators), and an unknown code gets the English ones.
    """
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
    for sent_start, sent_end, gap_end in sentence_spans(text, start, end, language):
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


def split_clause(text: str) -> tuple[str, str] | None:
    """`text` in two halves, cut at a clause boundary (punctuation, else whitespace, else a
    character boundary) in its middle half; None if it cannot be cut. For a sentence whose
    translation is too long to finish in one go (translator.engine.translator)."""
    text = text.strip()
    if len(text) < 2:
        return None
    limit = max(1, min(len(text) - 1, (len(text) * 3) // 4))
    cut, resume = _find_cut(text, 0, limit, limit)
    first, second = text[:cut].strip(), text[resume:].strip()
    if not first or not second:
        return None
    return first, second


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
        return soft_cut, skip_whitespace(text, soft_cut)
    space = _LAST_SPACE_RE.match(text, pos, limit + 1)
    if space:
        return space.end(), skip_whitespace(text, space.end())
    if soft_cut > pos:
        return soft_cut, skip_whitespace(text, soft_cut)
    cut = _hard_cut(text, pos, limit)
    return cut, cut


def _hard_cut(text: str, pos: int, limit: int) -> int:
    """The last grapheme cluster boundary at most ``limit`` and at most _MAX_CLUSTER before it
    that `_joined` does not veto, else ``limit``.  Clusters are counted from ``pos``, where the
    chunk starts: flags pair up from there, and nothing before it is looked at."""
    floor = max(pos + 1, limit - _MAX_CLUSTER)
    # A slice, not finditer's pos: `regex` counts a run of flags back to the start of the
    # string it is given, so a wall of flags would cost the whole text at every chunk.
    ends = [pos + match.end() for match in _CLUSTER_RE.finditer(text[pos : limit + 1])]
    return next((end for end in reversed(ends) if floor <= end <= limit and not _joined(text, end)), limit)


def _joined(text: str, index: int) -> bool:
    """Whether a cut just before ``text[index]``, where UAX #29 ends a cluster, would still split
    what a reader sees as one: after a ZWJ (Sinhala's yansaya ``ක්\u200dය``) or a virama (the
    conjuncts of the scripts the standard leaves out, Kannada's ``ಕ್ಷ``), before a mark (the
    Myanmar vowel signs the standard lets stand alone) or inside a surrogate pair (only in
    strings decoded with surrogatepass)."""
    char, prev = text[index], text[index - 1]
    return (
        prev == _ZWJ
        or unicodedata.combining(prev) == 9
        or unicodedata.category(char)[0] == "M"
        or ("\ud800" <= prev <= "\udbff" and "\udc00" <= char <= "\udfff")
    )
