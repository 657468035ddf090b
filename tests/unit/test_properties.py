"""Property-based tests of the pure parts: splitting/rejoining and one request's path through the pipeline.

tests/unit/test_segment.py holds the sentence rules and the basic split/join properties on mostly
Latin and CJK text; this file throws every kind of awkward text at them (all the Unicode whitespace
and line separators, control and format characters, right-to-left scripts, emoji sequences, marks)
and checks the pipeline's contract with fake engines: every id answered once and in order, each text
rebuilt from its translated pieces, and a failed or miscounted engine answer failing the request as
a whole. The fake engines stand in for the model, so all of this runs in a few seconds.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from translator.api.pipeline import translate_payload
from translator.contract import limits
from translator.contract.errors import RecordFailed, TranslationFailed
from translator.contract.protocol import Piece, PieceResult
from translator.contract.schemas import Payload
from translator.text.placeholders import placeholder_spans
from translator.text.segment import UNSPACED_LANGUAGES, has_letters, join, split_text

pytestmark = pytest.mark.pure

# --- text strategies -------------------------------------------------------------------------------

# Every character str.isspace() accepts, including the line separators str.splitlines() knows.
WHITESPACE = [
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\n\n",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x1f",
    "\x85",
    "\xa0",
    "\u1680",
    "\u2000",
    "\u2007",
    "\u200a",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
]
# Control and format characters that are *not* whitespace: they belong to the text around them.
CONTROLS = [
    "\x00",
    "\x01",
    "\x08",
    "\x1b",
    "\x7f",
    "\x80",
    "\x9b",
    "\u200b",  # zero-width space (not whitespace for Python)
    "\u200c",
    "\u200e",  # left-to-right mark
    "\u200f",  # right-to-left mark
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",  # bidi embeddings and overrides
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",  # bidi isolates
    "\u2060",
    "\ufeff",  # word joiner, BOM
    "\ufffd",
    "\ufffe",
    "\uffff",
    "\U0010ffff",
    "\ue000",
]
PUNCTUATION = [".", "!", "?", "...", "?!", "…", ",", ";", ":", "。", "！", "？", "．", "、", "，", "؟", "۔", "،", "।"]
CLOSERS = ["」", "』", "）", ")", '"', "'", "”", "’", "】", "»"]
WORDS = [
    "word",
    "Mr.",
    "e.g.",
    "3.14",
    "No.",
    "今日は晴れ",
    "你好",
    "こんにちは",
    "مرحبا بالعالم",  # Arabic
    "السلام عليكم",
    "שלום עולם",  # Hebrew
    "עברית",
    "Привет",
    "Ελληνικά",
    "नमस्ते",
    "क्ष",
    "ไทย",
    "한국어",
]
EMOJI = [
    "👍",
    "👍🏽",
    "👨\u200d👩\u200d👧\u200d👦",  # family: ZWJ sequence
    "🏳\ufe0f\u200d🌈",  # rainbow flag: variation selector + ZWJ
    "🧑🏿\u200d💻",  # skin tone + ZWJ
    "🇯🇵",
    "🇸🇦",
    "🇮🇱",  # regional-indicator flags
    "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",  # England: tag sequence
    "1\ufe0f\u20e3",  # keycap
    "❤\ufe0f",
    "e\u0301",
    "a\u0308\u0323",  # combining marks
    "\u200d",
    "\u0301",
    "\U0001f3fd",
    "🇯",  # the pieces of clusters, alone
]
TOKENS = WHITESPACE + CONTROLS + PUNCTUATION + CLOSERS + WORDS + EMOJI

token_text = st.lists(st.sampled_from(TOKENS), max_size=80).map("".join)
# Raw code points from every category hypothesis knows, surrogates aside (a str from JSON cannot
# hold one: the service refuses "\ud800" as invalid JSON).
raw_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=200)
any_text = st.one_of(token_text, raw_text, st.lists(st.one_of(token_text, raw_text), max_size=4).map("".join))

# Grapheme clusters the hard cut must keep whole (each shorter than 8 code points), and letters.
# Text made only of these has no whitespace and no punctuation, so every boundary between two
# pieces is a hard cut: the contract says it falls between clusters when the limit allows.
CLUSTERS = [
    "a",
    "Z",
    "字",
    "ש",
    "م",
    "ก",
    "e\u0301",
    "a\u0308\u0323",
    "👍",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🏳\ufe0f\u200d🌈",
    "🧑🏿\u200d💻",
    "🇯🇵",
    "🇫🇷",
    "1\ufe0f\u20e3",
    "❤\ufe0f",
    "क्ष",
    "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
    "\u1100\u1161\u11a8",  # Hangul in conjoining jamo
    "\u0e19\u0e33",  # Thai SARA AM
    "\uff76\uff9e",  # halfwidth katakana voiced mark
    "\u0600\u0661",  # prepended Arabic number sign
    "\u0c95\u0ccd\u0cb7",  # Kannada conjunct
]
MAX_CLUSTER = max(len(c) for c in CLUSTERS)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- segment: split and rejoin ---------------------------------------------------------------------


def check_contract(text: str, max_chars: int) -> None:
    seg = split_text(text, max_chars)
    assert len(seg.parts) == len(seg.translatable)
    assert "".join(seg.parts) == text
    # the identity translation gives back the exact original, layout and all
    assert join(seg, seg.pieces) == text
    for i, (part, is_piece) in enumerate(zip(seg.parts, seg.translatable, strict=True)):
        assert part, "no part is empty"
        if is_piece:
            assert len(part) <= max_chars
            assert not part[0].isspace() and not part[-1].isspace(), repr(part)
            assert len(part.splitlines()) == 1, f"a line break always ends a piece: {part!r}"
        else:
            assert part.isspace(), f"a separator is whitespace only: {part!r}"
            # whitespace runs are separators as a whole: never two separators in a row
            assert i + 1 == len(seg.parts) or seg.translatable[i + 1]
    if text.strip():
        lead, trail = len(text) - len(text.lstrip()), len(text) - len(text.rstrip())
        # leading and trailing whitespace are separators of their own
        if lead:
            assert seg.parts[0] == text[:lead] and not seg.translatable[0]
        else:
            assert seg.translatable[0]
        if trail:
            assert seg.parts[-1] == text[len(text) - trail :] and not seg.translatable[-1]
        else:
            assert seg.translatable[-1]
    else:
        # empty or whitespace-only text: nothing to translate
        assert seg.pieces == [] and seg.parts == ((text,) if text else ())


@SETTINGS
@given(any_text, st.integers(1, 120))
def test_split_then_identity_join_is_the_original(text: str, max_chars: int) -> None:
    check_contract(text, max_chars)


@SETTINGS
@given(st.lists(st.one_of(token_text, raw_text), min_size=1, max_size=12).map("".join))
def test_split_at_the_service_piece_limit(text: str) -> None:
    # The limit the pipeline really uses, on texts long enough to be chunked by it.
    check_contract(text * (1 + limits.MAX_PIECE_CHARS // max(len(text), 1)), limits.MAX_PIECE_CHARS)


@SETTINGS
@given(any_text, st.integers(1, 120))
def test_join_puts_each_translation_in_its_pieces_place(text: str, max_chars: int) -> None:
    seg = split_text(text, max_chars)
    tagged = join(seg, [f"\x00{i}\x00" for i in range(len(seg.pieces))])
    # the separators come back verbatim around the right pieces
    expected = "".join(
        f"\x00{next(counter)}\x00" if is_piece else part
        for counter in [itertools.count()]
        for part, is_piece in zip(seg.parts, seg.translatable, strict=True)
    )
    assert tagged == expected


@SETTINGS
@given(st.lists(st.sampled_from(CLUSTERS), min_size=1, max_size=120), st.integers(2 * MAX_CLUSTER, 80))
def test_hard_cuts_fall_between_clusters(clusters: list[str], max_chars: int) -> None:
    text = "".join(clusters)
    seg = split_text(text, max_chars)
    assert all(seg.translatable), "no whitespace, so no separators"
    boundaries = set(itertools.accumulate(len(c) for c in clusters))
    cuts = list(itertools.accumulate(len(p) for p in seg.pieces))[:-1]
    assert all(len(p) <= max_chars for p in seg.pieces)
    assert set(cuts) <= boundaries, [seg.pieces, cuts]
    assert "".join(seg.pieces) == text


# --- pipeline: one request, fake engines -------------------------------------------------------------

LANGS = ["en", "ja", "zh", "fr", "ar", "he", "de"]
SUPPORTED = frozenset(LANGS)
# Duplicates on purpose (the contract answers each record in its own position), the empty id,
# and arbitrary Unicode.
ids = st.one_of(st.sampled_from(["a", "b", "", "0", "id-1", "עברית", "👍🏽"]), st.text(max_size=20))
record_text = st.one_of(token_text, raw_text, st.sampled_from(["", " ", "\n\n", "\u3000"]))
records = st.lists(st.tuples(ids, record_text), max_size=25)
pairs = st.tuples(st.sampled_from(LANGS), st.sampled_from(LANGS))


def make_payload(src: str, tgt: str, recs: list[tuple[str, str]]) -> Payload:
    return Payload.model_validate({"fromLang": src, "toLang": tgt, "records": [{"id": i, "text": t} for i, t in recs]})


class TaggingEngine:
    """Answers piece k of the call as `<k:reversed text>`, or as "" for every fourth piece (a model
    may well answer nothing); remembers what it was sent."""

    def __init__(self) -> None:
        self.calls: list[list[Piece]] = []

    @staticmethod
    def translate(index: int, text: str) -> str:
        return "" if index % 4 == 3 else f"<{index}:{text[::-1]}>"

    async def __call__(self, pieces: list[Piece]) -> list[PieceResult]:
        self.calls.append(list(pieces))
        return [PieceResult(text=self.translate(k, p.text)) for k, p in enumerate(pieces)]


def run(payload: Payload, engine) -> list[tuple[str, str]]:
    result = asyncio.run(translate_payload(payload, SUPPORTED, engine))
    return [(r.id, r.text) for r in result.result]


def sent_pieces(text: str, source: str) -> list[str]:
    """The pieces the model is sent: sentences with letters (the others come back as they are)."""
    return [piece for piece in split_text(text, limits.MAX_PIECE_CHARS, source).pieces if has_letters(piece)]


def expected_text(text: str, translations: list[str], spaced: bool, source: str) -> str:
    """The contract: pieces replaced in place, separators and pieces without letters kept; in a
    spaced target, a translated piece that directly followed another translated piece in the
    source (CJK sentences, hard cuts) gets one space."""
    seg = split_text(text, limits.MAX_PIECE_CHARS, source)
    out, k = [], 0
    previous_translated = False
    for part, is_piece in zip(seg.parts, seg.translatable, strict=True):
        if not is_piece or not has_letters(part):
            out.append(part)
            previous_translated = False
            continue
        if spaced and previous_translated and translations[k] and translations[k - 1]:
            out.append(" ")
        out.append(translations[k])
        previous_translated = True
        k += 1
    assert k == len(translations)
    return "".join(out)


@SETTINGS
@given(pairs, records)
def test_every_id_answered_once_in_order_with_its_own_translation(pair: tuple[str, str], recs) -> None:
    # The oracle below is plain text's: placeholders ("%A", "{name}", URLs) are kept verbatim by
    # their own rules (tests/unit/test_plan.py), and a record of nothing else is never sent.
    assume(not any(placeholder_spans(text) for _, text in recs))
    src, tgt = pair
    engine = TaggingEngine()
    answer = run(make_payload(src, tgt, recs), engine)

    assert [i for i, _ in answer] == [i for i, _ in recs], "ids: each once, in request order"
    plans = [sent_pieces(text, src) for _, text in recs]
    sent = [p for plan in plans for p in plan]
    if src == tgt or not sent:
        assert engine.calls == []
    else:
        # one call per request, every piece in order, with the request's language pair
        assert len(engine.calls) == 1
        assert [p.text for p in engine.calls[0]] == sent
        assert {(p.source, p.target) for p in engine.calls[0]} == {(src, tgt)}
    if src == tgt:
        assert answer == recs
        return
    offsets = [0, *itertools.accumulate(len(plan) for plan in plans)][:-1]
    for (_, text), (_, got), start, plan in zip(recs, answer, offsets, plans, strict=True):
        translations = [TaggingEngine.translate(start + j, piece) for j, piece in enumerate(plan)]
        assert got == expected_text(text, translations, spaced=tgt not in UNSPACED_LANGUAGES, source=src)


@SETTINGS
@given(st.sampled_from(sorted(UNSPACED_LANGUAGES & SUPPORTED)), records)
def test_identity_engine_into_an_unspaced_language_gives_back_every_text_exactly(tgt: str, recs) -> None:
    async def identity(pieces: list[Piece]) -> list[PieceResult]:
        return [PieceResult(text=p.text) for p in pieces]

    assert run(make_payload("en", tgt, recs), identity) == recs


@SETTINGS
@given(pairs, records.filter(lambda rs: any(has_letters(t) for _, t in rs)), st.data())
def test_a_failed_piece_fails_the_whole_request(pair: tuple[str, str], recs, data) -> None:
    src, tgt = pair
    assume(src != tgt)
    # `sent_pieces` is plain text's oracle: a record of placeholders only ("{A}") is never sent.
    assume(not any(placeholder_spans(text) for _, text in recs))
    payload = make_payload(src, tgt, recs)
    plans = [sent_pieces(text, src) for _, text in recs]
    total = sum(len(p) for p in plans)
    failed = data.draw(st.sets(st.integers(0, total - 1), min_size=1), label="failed pieces")
    # an error, or an answer with neither text nor error
    kind = data.draw(st.sampled_from(["error", "no text"]), label="kind")

    async def engine(pieces: list[Piece]) -> list[PieceResult]:
        return [
            (PieceResult(error="out of memory") if kind == "error" else PieceResult())
            if k in failed
            else PieceResult(text=p.text)
            for k, p in enumerate(pieces)
        ]

    with pytest.raises(RecordFailed) as info:
        run(payload, engine)
    assert info.value.status == 500 and info.value.headers() == {}
    # the message names the first record that lost a piece
    owner = next(i for i, count in enumerate(itertools.accumulate(map(len, plans))) if count > min(failed))
    assert info.value.message.startswith(f"record {recs[owner][0]!r} could not be translated: ")
    assert ("out of memory" if kind == "error" else "no text returned") in info.value.message
    assert info.value.body()["error"] == info.value.message


@SETTINGS
@given(pairs, records.filter(lambda rs: any(has_letters(t) for _, t in rs)), st.data())
def test_an_answer_of_the_wrong_length_is_never_a_silent_loss(pair: tuple[str, str], recs, data) -> None:
    src, tgt = pair
    assume(src != tgt)
    # `sent_pieces` is plain text's oracle: a record of placeholders only ("{A}") is never sent.
    assume(not any(placeholder_spans(text) for _, text in recs))
    total = sum(len(sent_pieces(text, src)) for _, text in recs)
    length = data.draw(st.integers(0, total + 3).filter(lambda n: n != total), label="answer length")

    async def engine(pieces: list[Piece]) -> list[PieceResult]:
        return [PieceResult(text="x") for _ in range(length)]

    with pytest.raises(TranslationFailed, match=f"the engine answered {length} pieces for {total} sent"):
        run(make_payload(src, tgt, recs), engine)
