"""Where the sentences of a text end, line by line: the boundaries `split_text`
(translator/text/segment.py) cuts at before it looks at lengths.

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

The library is given windows of bounded size (it is quadratic on some long runs of
short sentences), and every regular expression below is written so that it cannot
backtrack quadratically.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import sentencex

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
CLOSERS = "\u300d\u300f\uff09)\"'\u201d\u2019\u3011\u300b]\uff63\u3015\u3009\uff3d\uff5d}\u00bb\u203a\u3019\u3017\u301b"
# Of the closers, the brackets: sentencex never ends a sentence inside one, this module
# does when a terminator closes it and whitespace follows ("(Really?) Yes.").
_CLOSING_BRACKETS = "\uff09)\u3011\u300b]\u3015\u3009\uff3d\uff5d}\u3019\u3017\u301b"

logger = logging.getLogger(__name__)


def char_class(chars: str, negate: bool = False, extra: str = "") -> str:
    return "[" + ("^" if negate else "") + extra + re.escape(chars) + "]"


_C = char_class(CLOSERS)
_ANY_T = char_class(_TERMINALS + _EXTRA_TERMINALS)
# Cuts proposed on top of the library's: after a run of the extra terminators, after a
# terminator + closers ending in a bracket, and after "No." not followed by a number.
# Each starts with a character class, so the scan skips everything else in C.
_EXTRA_CUT_RE = re.compile(
    rf"{char_class(_EXTRA_TERMINALS)}+{_C}*"
    rf"|{_ANY_T}(?<!{_ANY_T}.){_ANY_T}*{_C}*{char_class(_CLOSING_BRACKETS)}(?=\s)"
    r"|(?<![\w.])No\.(?=\s+[^\d\s])"
)
_WHITESPACE_RUN_RE = re.compile(r"\s+")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_TRAILING_WORD_RE = re.compile(r"[\w.]+\Z")
_DOTTED_INITIALS_RE = re.compile(r"(?:[^\W\d_]\.){2,}")

# sentencex is quadratic on long lines of many short sentences (1.4 s for 100,000
# characters of Japanese); a line longer than this is given to it in windows, and
# of each window's cuts only those at least _LIBRARY_CONTEXT characters before its end
# are kept, so that every kept cut was decided with the text that follows it in view.
_LIBRARY_WINDOW = 2048
_LIBRARY_CONTEXT = 256


def sentence_spans(text: str, start: int, end: int, language: str) -> Iterator[tuple[int, int, int]]:
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


def _library_boundaries(language: str, window: str) -> list[dict]:
    """sentencex's boundaries, or none where it panics: its Rust code panics on some short inputs
    (English "X\u3000." among them), and a pyo3 panic is a BaseException that no `except Exception`
    between here and the client would catch. Without the library's cuts, the text's own rules cut."""
    try:
        return list(sentencex.get_sentence_boundaries(language, window))
    except UnicodeEncodeError:
        raise
    except BaseException as exc:
        if type(exc).__name__ != "PanicException":
            raise
        logger.warning("sentencex panicked on a %d-character %s text; splitting it without it", len(window), language)
        return []


def _library_cuts(text: str, start: int, end: int, language: str) -> Iterator[int]:
    """Where sentencex ends sentences inside ``text[start:end]`` (absolute offsets)."""
    pos = start
    while pos < end:
        window_end = min(end, pos + _LIBRARY_WINDOW)
        last = window_end == end
        keep_before = window_end if last else window_end - _LIBRARY_CONTEXT
        window = text[pos:window_end]
        try:
            boundaries = _library_boundaries(language, window)
        except UnicodeEncodeError:
            # A lone surrogate (only in text decoded with surrogatepass) cannot cross into
            # Rust; U+FFFD in its place keeps every offset.
            boundaries = _library_boundaries(language, _SURROGATE_RE.sub("\ufffd", window))
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
    while cut < end and text[cut] in CLOSERS:
        cut += 1
    core = cut
    while core > floor and text[core - 1] in CLOSERS:
        core -= 1
    resume = skip_whitespace(text, cut)
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


def skip_whitespace(text: str, index: int) -> int:
    m = _WHITESPACE_RUN_RE.match(text, index)
    return m.end() if m else index
