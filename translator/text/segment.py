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

Sentence boundaries come from `sentencex <https://github.com/wikimedia/sentencex>`_
(Wikimedia's segmenter: terminators of many scripts, abbreviation lists for about
thirty languages, quotes and parentheses), driven by the source language.  Only the
*positions* it reports are used, never its text, so the result is lossless whatever
it returns.  On top of it:

* every line break ends a piece (the library sees one line at a time);
* terminators the library lacks: Khmer ``។ ៕``, Tibetan ``། ༎`` and the Greek
  question mark U+037E (the library knows only its look-alike ``;``, and only for Greek);
* closing quotes and brackets right after a terminator stay with the sentence, and a
  sentence may end inside a bracket (``(Really?) Yes``), which the library skips;
* vetoes: a cut is kept only after terminal punctuation (plus closers), and without
  whitespace after it only for scripts written without spaces (CJK ``。！？``, Khmer);
  a "." followed by whitespace does not end a sentence after an entry of
  :data:`ABBREVIATIONS` ("No." only before a number; otherwise "No." ends one), a
  single capital initial ("J.", French "M. Dupont") or dotted initials ("U.S.");
  a fullwidth "．" between digits is a decimal point.

Thai and Lao have no sentence punctuation; a line of theirs is one sentence, cut at
spaces (which separate their phrases) once it is longer than ``max_chars``.

Sentences longer than ``max_chars`` are cut greedily: after ``, ; :`` + whitespace
or CJK ``、，；：`` when that keeps at least half the limit, else at the last
whitespace, else after any such punctuation, else hard at ``max_chars``.

Work is linear in the length of the text: the library is given windows of bounded
size (it is quadratic on some long runs of short sentences), and every regular
expression below is written so that it cannot backtrack quadratically.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import regex
import sentencex

__all__ = ["ABBREVIATIONS", "Segmented", "has_letters", "join", "split_text"]

# Words ending in "." that do not end a sentence when followed by whitespace, in any
# source language (sentencex has longer, per-language lists; these are the ones it
# still cuts after, e.g. "Dr. Who", "Ms. Lee").
# All-lower-case entries match in any case ("ETC.", "Mr."); entries containing a
# capital match only as written, because in lower case they are ordinary words
# that do end sentences ("I said no. Then ..." must still split).  "No." (numero)
# needs a digit next ("No. 5"); before anything else it ends the sentence, which the
# library, listing "no" as an abbreviation, does not do ("Coming? No. I am busy.").
# Single capital initials ("J.", "M.") and dotted initials ("U.S.", "J.R.R.") are
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

# Characters after which a sentence may end (the library's terminators of the
# scripts M2M100 covers, and the ones added below).  A cut the library proposes
# anywhere else (after a bare closing quote, inside a word) is dropped.
_TERMINALS = (
    ".!?\u2026\u203c\u203d\u2047\u2048\u2049"  # . ! ? … ‼ ‽ ⁇ ⁈ ⁉
    "\u0589\u061f\u06d4\u0964\u0965\u104a\u104b\u1362\u1367\u1368"  # ։ ؟ ۔ । ॥ ၊ ။ ። ፧ ፨
    "\u3002\uff01\uff1f\uff0e\uff61\ufe52\ufe56\ufe57"  # 。 ！ ？ ． ｡ ﹒ ﹖ ﹗
)
# Terminators sentencex lacks, found by this module: Khmer ។ ៕, Tibetan ། ༎, Greek
# question mark (U+037E, which NFC turns into ";", the one sentencex knows for Greek).
_EXTRA_TERMINALS = "\u17d4\u17d5\u0f0d\u0f0e\u037e"
# A sentence may end after these even without whitespace: CJK and Khmer put no space
# between sentences.
_UNSPACED_TERMINALS = "\u3002\uff01\uff1f\uff0e\uff61\u17d4\u17d5"
# Terminators only in some languages: sentencex ends Greek questions at ";".
_LANGUAGE_TERMINALS = {"el": ";"}
# Closing quotes/brackets that belong to the sentence they directly follow.
# Openers that double as closers in some languages (“ ‘ « ‹) are left out: in
# Chinese “ opens a quotation, so attaching it to the previous sentence is wrong.
_CLOSERS = (
    "\u300d\u300f\uff09)\"'\u201d\u2019\u3011\u300b]\uff63\u3015\u3009\uff3d\uff5d}\u00bb\u203a\u3019\u3017\u301b"
)
# Of the closers, the brackets: sentencex never ends a sentence inside one, this module
# does when a terminator closes it and whitespace follows ("(Really?) Yes.").
_CLOSING_BRACKETS = "\uff09)\u3011\u300b]\u3015\u3009\uff3d\uff5d}\u3019\u3017\u301b"
# Secondary punctuation for chunking over-long sentences.  Western marks need
# whitespace after them (so "12:30", "1,000" and URLs are not cut); CJK marks don't.
_SOFT_PUNCT = ",;:\u060c\u061b"  # , ; : ، ؛
_CJK_SOFT_PUNCT = "\u3001\uff0c\uff1b\uff1a\uff64"  # 、，；：､


def _cls(chars: str, negate: bool = False, extra: str = "") -> str:
    return "[" + ("^" if negate else "") + extra + re.escape(chars) + "]"


_C = _cls(_CLOSERS)
_ANY_T = _cls(_TERMINALS + _EXTRA_TERMINALS)
# Cuts proposed on top of the library's: after a run of the extra terminators, after a
# terminator + closers ending in a bracket, and after "No." not followed by a number.
# Each starts with a character class, so the scan skips everything else in C.
_EXTRA_CUT_RE = re.compile(
    rf"{_cls(_EXTRA_TERMINALS)}+{_C}*"
    rf"|{_ANY_T}(?<!{_ANY_T}.){_ANY_T}*{_C}*{_cls(_CLOSING_BRACKETS)}(?=\s)"
    r"|(?<![\w.])No\.(?=\s+[^\d\s])"
)
_WHITESPACE_RUN_RE = re.compile(r"\s+")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
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
# Extended grapheme clusters (UAX #29), which the standard library's `re` does not know.
_CLUSTER_RE = regex.compile(r"\X")
# How far a hard cut may back off to keep a cluster whole.  Real clusters (ZWJ
# family emoji, tag flags, stacked diacritics) are far shorter; the cap keeps
# "Zalgo" text with thousands of marks linear.
_MAX_CLUSTER = 32

# sentencex is quadratic on long lines of many short sentences (1.4 s for 100,000
# characters of Japanese); a line longer than this is given to it in windows, and
# of each window's cuts only those at least _LIBRARY_CONTEXT characters before its end
# are kept, so that every kept cut was decided with the text that follows it in view.
_LIBRARY_WINDOW = 2048
_LIBRARY_CONTEXT = 256


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
    for sent_start, sent_end, gap_end in _sentences(text, start, end, language):
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


def _sentences(text: str, start: int, end: int, language: str) -> Iterator[tuple[int, int, int]]:
    """Yield ``(sentence_start, sentence_end, gap_end)`` for the sentences of
    ``text[start:end]``, which must begin and end with non-whitespace.

    ``text[sentence_end:gap_end]`` is the whitespace after the sentence (empty for
    CJK boundaries and for the last sentence).
    """
    lines = list(_lines(text, start, end))
    for index, (line_start, line_end) in enumerate(lines):
        sent_start = line_start
        for cut, resume in _cuts(text, line_start, line_end, language):
            yield sent_start, cut, resume
            sent_start = resume
        # the whitespace up to the next line (line breaks, blank lines, indentation)
        gap_end = lines[index + 1][0] if index + 1 < len(lines) else line_end
        yield sent_start, line_end, gap_end


def _lines(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The non-blank lines of ``text[start:end]`` as ``(start, end)``, stripped of
    whitespace; what lies between two of them is whitespace with a line break."""
    pos = start
    # str.splitlines knows every line break of Unicode (\r\n, \x85, \u2028, ...) and runs in C.
    for line in text[start:end].splitlines(keepends=True):
        content = line.strip()
        if content:
            line_start = pos + line.index(content[0])
            yield line_start, line_start + len(content)
        pos += len(line)


def _cuts(text: str, start: int, end: int, language: str) -> list[tuple[int, int]]:
    """The sentence ends of one line ``text[start:end]`` as ``(cut, resume)``:
    the sentence ends at ``cut`` and the next begins at ``resume`` after whitespace."""
    candidates = set(_library_cuts(text, start, end, language))
    candidates.update(m.end() for m in _EXTRA_CUT_RE.finditer(text, start, end))
    cuts = []
    last = start
    for position in sorted(candidates):
        cut = _checked_cut(text, position, start, end, language)
        if cut is not None and cut[0] > last:
            cuts.append(cut)
            last = cut[1]
    return cuts


def _library_cuts(text: str, start: int, end: int, language: str) -> Iterator[int]:
    """Where sentencex ends sentences inside ``text[start:end]`` (absolute offsets)."""
    pos = start
    while pos < end:
        window_end = min(end, pos + _LIBRARY_WINDOW)
        last = window_end == end
        keep_before = window_end if last else window_end - _LIBRARY_CONTEXT
        window = text[pos:window_end]
        try:
            boundaries = sentencex.get_sentence_boundaries(language, window)
        except UnicodeEncodeError:
            # A lone surrogate (only in text decoded with surrogatepass) cannot cross into
            # Rust; U+FFFD in its place keeps every offset.
            boundaries = sentencex.get_sentence_boundaries(language, _SURROGATE_RE.sub("\ufffd", window))
        resume = keep_before
        for boundary in boundaries:
            # end_index counts code points, as Python indexes strings
            cut = pos + boundary["end_index"]
            if pos < cut < keep_before:
                yield cut
                resume = cut
        if last:
            return
        # next window: from the last kept cut, so the library starts at a sentence start
        pos = resume


def _checked_cut(text: str, position: int, floor: int, end: int, language: str) -> tuple[int, int] | None:
    """Turn a proposed cut into ``(cut, resume)``: closers right after it join the
    sentence, whitespace around it becomes the gap; or ``None`` where the rules above
    veto it."""
    cut = position
    while cut > floor and text[cut - 1].isspace():
        cut -= 1
    while cut < end and text[cut] in _CLOSERS:
        cut += 1
    core = cut
    while core > floor and text[core - 1] in _CLOSERS:
        core -= 1
    resume = _skip_whitespace(text, cut)
    if core <= floor or resume >= end:
        return None  # nothing before it, or nothing after it on this line
    mark = text[core - 1]
    if resume == cut:
        return (cut, cut) if mark in _UNSPACED_TERMINALS and not _between_digits(text, core - 1, floor) else None
    if mark not in _TERMINALS and mark not in _EXTRA_TERMINALS and mark not in _LANGUAGE_TERMINALS.get(language, ""):
        return None
    if mark == "." and core == cut and _is_abbreviation(text, core, floor, text[resume]):
        return None
    return cut, resume


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
        return True  # initial: "J. R. R. Tolkien", "M. Dupont"
    return _DOTTED_INITIALS_RE.fullmatch(word) is not None  # "U.S.", "J.R.R."


def _between_digits(text: str, index: int, floor: int) -> bool:
    """Whether ``text[index]`` (a fullwidth "．") is a decimal point: "３．１４"."""
    return (
        text[index] == "\uff0e"
        and index > floor
        and index + 1 < len(text)
        and text[index - 1].isdecimal()
        and text[index + 1].isdecimal()
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
        return soft_cut, _skip_whitespace(text, soft_cut)
    space = _LAST_SPACE_RE.match(text, pos, limit + 1)
    if space:
        return space.end(), _skip_whitespace(text, space.end())
    if soft_cut > pos:
        return soft_cut, _skip_whitespace(text, soft_cut)
    cut = _hard_cut(text, pos, limit)
    return cut, cut


def _skip_whitespace(text: str, index: int) -> int:
    m = _WHITESPACE_RUN_RE.match(text, index)
    return m.end() if m else index


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
