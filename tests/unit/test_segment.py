"""Tests for translator.text.segment: sentence splitting that must preserve layout exactly."""

from __future__ import annotations

import json
import re
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translator.text.segment import Segmented, join, split_text
from translator.text.sentences import ABBREVIATIONS

pytestmark = pytest.mark.pure

BIG = 10_000  # a max_chars that never forces chunking


def pieces(text: str, max_chars: int = BIG) -> list[str]:
    return split_text(text, max_chars).pieces


def parts(text: str, max_chars: int = BIG) -> list[tuple[str, bool]]:
    seg = split_text(text, max_chars)
    return list(zip(seg.parts, seg.translatable, strict=True))


def check_invariants(text: str, max_chars: int) -> Segmented:
    seg = split_text(text, max_chars)
    assert len(seg.parts) == len(seg.translatable)
    assert "".join(seg.parts) == text
    for i, (part, flag) in enumerate(zip(seg.parts, seg.translatable, strict=True)):
        assert part, "no part may be empty"
        if flag:
            assert len(part) <= max_chars
            assert not part[0].isspace() and not part[-1].isspace()
            assert len(part.splitlines()) == 1, "a line break always ends a piece"
        else:
            assert part.isspace()
            # separators are maximal whitespace runs: never two in a row
            if i + 1 < len(seg.parts):
                assert seg.translatable[i + 1]
    assert join(seg, seg.pieces) == text
    return seg


# --- concrete cases -------------------------------------------------------------


def test_english_sentences_keep_double_spaces_newlines_and_paragraphs() -> None:
    text = "Hello world.  How are you?\nI am fine!\n\nNew paragraph here. Last one"
    assert parts(text) == [
        ("Hello world.", True),
        ("  ", False),
        ("How are you?", True),
        ("\n", False),
        ("I am fine!", True),
        ("\n\n", False),
        ("New paragraph here.", True),
        (" ", False),
        ("Last one", True),
    ]


def test_whitespace_inside_a_sentence_stays_in_the_piece() -> None:
    assert pieces("One  two\tthree. Four") == ["One  two\tthree.", "Four"]


def test_line_break_is_always_a_boundary() -> None:
    assert parts("no punctuation\nnext line") == [
        ("no punctuation", True),
        ("\n", False),
        ("next line", True),
    ]
    # even right after an abbreviation
    assert pieces("Ask Mr.\nSmith") == ["Ask Mr.", "Smith"]


def test_crlf_and_other_line_separators_are_kept_whole() -> None:
    text = "Line one\r\nLine two\r\n\r\nLine three\u2028Line four\x85end"
    assert parts(text) == [
        ("Line one", True),
        ("\r\n", False),
        ("Line two", True),
        ("\r\n\r\n", False),
        ("Line three", True),
        ("\u2028", False),
        ("Line four", True),
        ("\x85", False),
        ("end", True),
    ]


def test_runs_of_terminal_punctuation() -> None:
    assert pieces("Wait... What?! Really?? Yes.. Ok") == [
        "Wait...",
        "What?!",
        "Really??",
        "Yes..",
        "Ok",
    ]
    # Changed with sentencex: an ellipsis followed by a lower-case word goes on
    # ("Wait... what?!" is one sentence; the regex splitter cut it in two), and so
    # does "…" (one character) before any word.
    assert pieces("Wait... what?! Really?? Yes… ok") == ["Wait... what?!", "Really??", "Yes… ok"]


def test_japanese_without_spaces() -> None:
    assert parts("今日は晴れ。明日は雨。") == [("今日は晴れ。", True), ("明日は雨。", True)]


def test_chinese_exclamation_and_question_marks() -> None:
    assert pieces("你好！你好吗？我很好。") == ["你好！", "你好吗？", "我很好。"]


def test_cjk_ideographic_space_and_fullwidth_stop() -> None:
    assert parts("こんにちは。\u3000元気？\u3000はい．") == [
        ("こんにちは。", True),
        ("\u3000", False),
        ("元気？", True),
        ("\u3000", False),
        ("はい．", True),
    ]


def test_fullwidth_decimal_point_is_not_a_boundary() -> None:
    assert pieces("円周率は３．１４です。次。") == ["円周率は３．１４です。", "次。"]


def test_closing_quotes_after_cjk_stop_stay_with_the_sentence() -> None:
    assert pieces("「行きます。」「はい。」") == ["「行きます。」", "「はい。」"]
    assert pieces("他说：“走吧！”然后走了。") == ["他说：“走吧！”", "然后走了。"]
    assert pieces("『終わり。』】次。") == ["『終わり。』】", "次。"]
    # a closer at the very end is not split off
    assert pieces("終わり。」") == ["終わり。」"]


def test_closing_quotes_after_western_stop_stay_with_the_sentence() -> None:
    assert pieces('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]
    assert pieces("(Really?) Yes. 'Fine.' [Done.] Next") == [
        "(Really?)",
        "Yes.",
        "'Fine.'",
        "[Done.]",
        "Next",
    ]
    # Changed with sentencex: a quotation ending in "!" followed by a lower-case word
    # is inside the sentence (the regex splitter made "and left.’" a sentence).
    assert pieces("She wrote “Go!” and left.’ Then") == ["She wrote “Go!” and left.’", "Then"]
    assert pieces("She wrote “Go!” Then she left.") == ["She wrote “Go!”", "Then she left."]


def test_mixed_scripts() -> None:
    text = "Hello world. 你好。こんにちは！ Bye.\nПривет, мир! Как дела?"
    assert pieces(text) == [
        "Hello world.",
        "你好。",
        "こんにちは！",
        "Bye.",
        "Привет, мир!",
        "Как дела?",
    ]
    check_invariants(text, 5)


@pytest.mark.parametrize(
    "text",
    [
        "Mr. Smith met Mrs. Jones and Ms. Lee.",
        "Dr. Who and Prof. X live on Baker St. in London.",
        "Apples vs. oranges, etc. are fruit.",
        "Use tools, e.g. hammers, i.e. heavy ones.",
        "See No. 5 at Acme Inc. and Foo Ltd. today.",
        "Sammy Davis Jr. met John Smith Sr. yesterday.",
        "J. R. R. Tolkien wrote it.",
        "The U.S. Army arrived.",
        "MR. SMITH and E.G. this are fine.",
        "(e.g. this) works.",
    ],
)
def test_abbreviations_and_initials_do_not_end_sentences(text: str) -> None:
    assert pieces(text) == [text]


def test_abbreviation_list_is_a_single_constant() -> None:
    assert {"mr.", "e.g.", "i.e.", "etc.", "No."} <= ABBREVIATIONS


def test_abbreviations_still_split_when_followed_by_sentence_end() -> None:
    # "no." in lower case is an ordinary word; only "No." is the abbreviation
    assert pieces("I said no. Then I left.") == ["I said no.", "Then I left."]
    # "No." is numero only before a number; otherwise it is an answer
    assert pieces("Are you coming? No. I am busy.") == ["Are you coming?", "No.", "I am busy."]
    assert pieces("Mr. Smith left. Dr. Jones stayed.") == ["Mr. Smith left.", "Dr. Jones stayed."]
    # closing bracket after the abbreviation: the sentence ends
    assert pieces("We need fruit (apples, pears, etc.) Next.") == [
        "We need fruit (apples, pears, etc.)",
        "Next.",
    ]


def test_decimals_versions_urls_and_emails_are_not_boundaries() -> None:
    text = "Pi is 3.14 and v1.2.3 is out. See www.example.com or a.b@example.org now. It costs 5. Done"
    assert pieces(text) == [
        "Pi is 3.14 and v1.2.3 is out.",
        "See www.example.com or a.b@example.org now.",
        "It costs 5.",
        "Done",
    ]


def test_leading_and_trailing_whitespace_are_separators() -> None:
    assert parts("  \n Hello. World!\t \n") == [
        ("  \n ", False),
        ("Hello.", True),
        (" ", False),
        ("World!", True),
        ("\t \n", False),
    ]


def test_nbsp_and_unicode_spaces_are_separators() -> None:
    text = "\u00a0One.\u2003Two.\u00a0\u00a0Three.\u3000"
    assert parts(text) == [
        ("\u00a0", False),
        ("One.", True),
        ("\u2003", False),
        ("Two.", True),
        ("\u00a0\u00a0", False),
        ("Three.", True),
        ("\u3000", False),
    ]


def test_empty_text() -> None:
    seg = split_text("", 10)
    assert seg.parts == () and seg.translatable == () and seg.pieces == []
    assert join(seg, []) == ""


@pytest.mark.parametrize("text", [" ", "\n\n", " \t\r\n\u3000\u00a0 "])
def test_whitespace_only_text_is_one_separator(text: str) -> None:
    seg = split_text(text, 10)
    assert seg.parts == (text,) and seg.translatable == (False,) and seg.pieces == []
    assert join(seg, []) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("مرحبا بالعالم. كيف حالك؟ أنا بخير.", ["مرحبا بالعالم.", "كيف حالك؟", "أنا بخير."]),
        ("שָׁלוֹם עוֹלָם. מה שלומך? טוב", ["שָׁלוֹם עוֹלָם.", "מה שלומך?", "טוב"]),
        ("\u202bRTL embedded.\u202c Next.", ["\u202bRTL embedded.\u202c Next."]),
    ],
)
def test_rtl_text_passes_through_intact(text: str, expected: list[str]) -> None:
    assert pieces(text) == expected
    check_invariants(text, 7)


def test_emoji_pass_through_intact() -> None:
    text = "I love 👨\u200d👩\u200d👧\u200d👦 and 🇯🇵! Great 👍🏽. ❤️"
    assert pieces(text) == ["I love 👨\u200d👩\u200d👧\u200d👦 and 🇯🇵!", "Great 👍🏽.", "❤️"]


def test_long_sentence_is_chunked_at_commas() -> None:
    text = "alpha beta gamma, delta epsilon zeta, eta theta iota, kappa lambda mu."
    seg = check_invariants(text, 40)
    assert seg.pieces == [
        "alpha beta gamma, delta epsilon zeta,",
        "eta theta iota, kappa lambda mu.",
    ]
    assert seg.parts[1] == " "


def test_cjk_long_sentence_is_chunked_after_ideographic_comma() -> None:
    text = "今日はとても良い天気なので、公園に行って散歩をしてから、友達と一緒に昼ご飯を食べました。"
    seg = check_invariants(text, 20)
    assert seg.pieces == [
        "今日はとても良い天気なので、",
        "公園に行って散歩をしてから、",
        "友達と一緒に昼ご飯を食べました。",
    ]


def test_early_comma_does_not_produce_tiny_chunks() -> None:
    text = "Yes, this sentence goes on and on without any more punctuation at all"
    seg = check_invariants(text, 30)
    assert seg.pieces[0] == "Yes, this sentence goes on and"


def test_long_sentence_is_chunked_at_spaces_greedily() -> None:
    text = " ".join(["word"] * 30)  # 149 chars, no punctuation
    seg = check_invariants(text, 20)
    assert seg.pieces == ["word word word word"] * 7 + ["word word"]
    assert all(sep == " " for sep, flag in zip(seg.parts, seg.translatable, strict=True) if not flag)


def test_whitespace_at_chunk_cut_is_preserved_verbatim() -> None:
    text = "aaaa bbbb\t\t cccc  dddd"
    assert parts(text, 10) == [
        ("aaaa bbbb", True),
        ("\t\t ", False),
        ("cccc  dddd", True),
    ]


def test_hard_cut_without_spaces_cjk() -> None:
    text = "あ" * 25
    seg = check_invariants(text, 10)
    assert seg.parts == ("あ" * 10, "あ" * 10, "あ" * 5)
    assert all(seg.translatable)


def test_hard_cut_long_url() -> None:
    url = "https://example.com/" + "x" * 100  # 120 chars, no spaces
    seg = check_invariants(f"Visit {url} now.", 30)
    assert seg.pieces == ["Visit", url[:30], url[30:60], url[60:90], url[90:], "now."]


def test_hard_cut_keeps_combining_marks_with_their_base() -> None:
    text = "e\u0301" * 10  # é as e + COMBINING ACUTE ACCENT
    seg = check_invariants(text, 5)
    assert all(not unicodedata.combining(p[0]) for p in seg.pieces)
    assert seg.pieces == [
        "e\u0301e\u0301",
        "e\u0301e\u0301",
        "e\u0301e\u0301",
        "e\u0301e\u0301",
        "e\u0301e\u0301",
    ]


def test_hard_cut_keeps_zwj_emoji_and_flags_whole() -> None:
    family = "👨\u200d👩\u200d👧\u200d👦"  # 7 code points
    seg = check_invariants(family * 3, 10)
    assert seg.pieces == [family] * 3
    flags = "🇯🇵🇫🇷🇩🇪"
    seg = check_invariants(flags, 3)
    assert seg.pieces == ["🇯🇵", "🇫🇷", "🇩🇪"]
    thumbs = "👍🏽" * 3
    assert check_invariants(thumbs, 3).pieces == ["👍🏽"] * 3


def test_hard_cut_keeps_devanagari_conjunct() -> None:
    text = "क्षक्षक्ष"  # क ् ष repeated: the virama joins the next consonant
    assert check_invariants(text, 4).pieces == ["क्ष", "क्ष", "क्ष"]


@pytest.mark.parametrize(
    "cluster",
    [
        "\u1100\u1161\u11a8",  # 각 in conjoining jamo: three letters, one syllable
        "\u0e19\u0e33",  # Thai นำ: SARA AM is a letter that attaches like a vowel sign
        "\uff76\uff9e",  # halfwidth katakana ｶﾞ: the voiced mark is a letter modifier
        "\u0600\u0661",  # an Arabic number sign belongs to the digit after it
    ],
    ids=["hangul-jamo", "thai-sara-am", "halfwidth-voiced-mark", "prepended-number-sign"],
)
def test_hard_cut_keeps_clusters_whose_parts_are_not_marks(cluster: str) -> None:
    # UAX #29 knows these; a guard that only looked for marks cut inside them.
    assert check_invariants(cluster * 3, len(cluster) + 1).pieces == [cluster] * 3


@pytest.mark.parametrize(
    "cluster",
    [
        "\u0c95\u0ccd\u0cb7",  # Kannada ಕ್ಷ: the standard joins conjuncts of six other scripts only
        "\u0d9a\u0dca\u200d\u0dba",  # Sinhala yansaya: a ZWJ between a virama and a letter
        "\u1000\u102c",  # Myanmar ကာ: a vowel sign the standard lets stand alone
        "\ud83d\ude00",  # a surrogate pair (text decoded with surrogatepass)
    ],
    ids=["kannada-conjunct", "sinhala-yansaya", "myanmar-vowel-sign", "surrogate-pair"],
)
def test_hard_cut_keeps_what_uax29_would_split_but_reads_as_one(cluster: str) -> None:
    assert check_invariants(cluster * 3, len(cluster) + 1).pieces == [cluster] * 3


def test_cluster_longer_than_limit_is_still_bounded() -> None:
    text = "e" + "\u0301" * 20
    seg = check_invariants(text, 5)
    assert "".join(seg.pieces) == text


def test_max_chars_one() -> None:
    seg = check_invariants("ab c。d", 1)
    assert seg.pieces == ["a", "b", "c", "。", "d"]


@pytest.mark.parametrize("bad", [0, -1])
def test_max_chars_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError):
        split_text("text", bad)


def test_join_replaces_pieces_and_keeps_separators() -> None:
    seg = split_text("  Hello.  World!\n\nBye. ", 100)
    assert join(seg, ["Hallo.", "Welt!", "Tschüss."]) == "  Hallo.  Welt!\n\nTschüss. "


@pytest.mark.parametrize("count", [0, 1, 3])
def test_join_with_wrong_count_raises(count: int) -> None:
    seg = split_text("One. Two.", 100)
    with pytest.raises(ValueError):
        join(seg, ["x"] * count)


def test_segmented_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError):
        Segmented(("a", " "), (True,))


def test_segmented_is_frozen() -> None:
    seg = split_text("a. b", 10)
    with pytest.raises(AttributeError):
        seg.parts = ()  # type: ignore[misc]


# Hostile inputs, each made at a size n, to be timed against itself at 8n (the size it had when
# this test held it to a number of seconds).
HOSTILE = {
    "english": (lambda n: "word. " * n, 2_500),
    "japanese": (lambda n: "今日は晴れです、明日は雨でしょう。" * n, 750),
    "cjk-nopunct": (lambda n: "あ" * n, 12_500),
    "dots": (lambda n: "." * n, 12_500),
    "spaces": (lambda n: " " * n + "x" + " " * n, 6_250),
    "cjk-stops": (lambda n: "。" * n + "」" * n, 6_250),
    "zalgo": (lambda n: "e" + "\u0301" * n, 12_500),
    "long-words": (lambda n: ("x" * 30 + " ") * n, 400),
    "flags": (lambda n: "🇯🇵" * n, 6_250),
}


def split_seconds(text: str) -> float:
    """The processor time one split takes, checked whole: this thread's own, so that the time a
    busy machine gives other processes does not count."""
    start = time.thread_time()
    seg = split_text(text, 200)
    took = time.thread_time() - start
    assert "".join(seg.parts) == text
    return took


@pytest.mark.parametrize("case", HOSTILE)
def test_large_inputs_are_linear(case: str) -> None:
    make, n = HOSTILE[case]
    small, large = make(n), make(8 * n)
    # Compared with itself in one run, not with a number of seconds (the benchmark's business):
    # linear work takes about 8 times as long on 8 times the input, quadratic work 64 times. The
    # best of a few tries each, taken in turns.
    tries = [(split_seconds(small), split_seconds(large)) for _ in range(3)]
    ratio = min(t for _, t in tries) / min(t for t, _ in tries)
    assert ratio < 24, f"8 times the input took {ratio:.1f} times as long"


def test_fixture_corpus_sentences_are_recovered() -> None:
    # The corpus lists each record's sentences; glued together the way the
    # language writes them they must split back into exactly those sentences.
    corpus = Path(__file__).resolve().parents[2] / "fixture" / "corpus.jsonl"
    if not corpus.exists():
        pytest.skip("fixture corpus not present")
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert records
    for record in records:
        for side, lang in (("source", record["src_lang"]), ("target", record["tgt_lang"])):
            sentences = record[side]
            glue = "" if lang in ("ja", "zh") else " "
            assert split_text(glue.join(sentences), BIG, lang).pieces == sentences, (record["id"], side)


# --- properties ----------------------------------------------------------------

TOKENS = [
    "word",
    "Ab",
    "x",
    "3",
    "3.14",
    "v1.2",
    "www.a.com",
    "Mr.",
    "e.g.",
    "J.",
    "No.",
    "etc.",
    ".",
    "..",
    "!",
    "?",
    "?!",
    "…",
    ",",
    ";",
    ":",
    "。",
    "！",
    "？",
    "．",
    "、",
    "，",
    "｡",
    "」",
    "』",
    "）",
    ")",
    '"',
    "'",
    "”",
    "’",
    "】",
    "》",
    "]",
    "「",
    "(",
    "“",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\n\n",
    "\u3000",
    "\u00a0",
    "\u2028",
    "\x85",
    "\x0b",
    "今日",
    "晴れ",
    "你好",
    "مرحبا",
    "שלום",
    "Привет",
    "क्ष",
    "\u0301",
    "e\u0301",
    "\u200d",
    "👨\u200d👩\u200d👧",
    "🇯",
    "🇵",
    "👍",
    "🏽",
    "\ufe0f",
]
token_text = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)
any_text = st.one_of(st.text(max_size=300), token_text)
prop_settings = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@prop_settings
@given(any_text, st.integers(1, 200))
def test_parts_cover_text_and_respect_limits(text: str, max_chars: int) -> None:
    check_invariants(text, max_chars)


@prop_settings
@given(any_text, st.integers(1, 200))
def test_join_with_uppercase_keeps_layout(text: str, max_chars: int) -> None:
    seg = split_text(text, max_chars)
    # separators are whitespace (unchanged by upper()) and str.upper maps each
    # character independently, so replacing every piece by its upper-case form
    # must give exactly the upper-cased text
    assert join(seg, [p.upper() for p in seg.pieces]) == text.upper()


@prop_settings
@given(any_text, st.integers(1, 200))
def test_join_with_markers_puts_separators_between_the_right_pieces(text: str, max_chars: int) -> None:
    seg = split_text(text, max_chars)
    n = len(seg.pieces)
    result = join(seg, [f"<{i}>" for i in range(n)])
    gaps = re.split(r"<\d+>", result)
    assert re.findall(r"<(\d+)>", result) == [str(i) for i in range(n)]
    # what surrounds each piece in the result is exactly the original whitespace
    assert all(gap == "" or gap.isspace() for gap in gaps)
    assert "".join(gaps) == "".join(p for p, flag in zip(seg.parts, seg.translatable, strict=True) if not flag)
    if n:
        assert gaps[0] == text[: len(text) - len(text.lstrip())]
        assert gaps[-1] == text[len(text.rstrip()) :]
    # translations of another length must not disturb the separators either
    longer = join(seg, [p * 2 for p in seg.pieces])
    assert len(longer) == len(text) + sum(len(p) for p in seg.pieces)


@prop_settings
@given(any_text, st.integers(1, 200))
def test_join_rejects_wrong_counts(text: str, max_chars: int) -> None:
    seg = split_text(text, max_chars)
    with pytest.raises(ValueError):
        join(seg, [*seg.pieces, "extra"])
    if seg.pieces:
        with pytest.raises(ValueError):
            join(seg, seg.pieces[:-1])


TERMINALS = set(".!?…。！？．｡")
CLOSERS = set("」』）)\"'”’】》]")


def has_line_break(s: str) -> bool:
    return len((s + "x").splitlines()) > 1


@prop_settings
@given(token_text)
def test_without_length_pressure_pieces_end_only_at_sentence_ends(text: str) -> None:
    seg = split_text(text, BIG)
    last_piece = max((i for i, flag in enumerate(seg.translatable) if flag), default=-1)
    for i, (piece, flag) in enumerate(zip(seg.parts, seg.translatable, strict=True)):
        if not flag or i == last_piece:
            continue
        following = seg.parts[i + 1]
        if not seg.translatable[i + 1] and has_line_break(following):
            continue  # a line break ends any piece
        assert piece.rstrip("".join(CLOSERS))[-1:] in TERMINALS, (piece, following)


@pytest.mark.parametrize("text", ["X\u3000.", "X\u3000. Y", "X \u3000."])
def test_a_text_sentencex_panics_on_is_split_without_it(text: str) -> None:
    # sentencex's Rust code panics on these (a pyo3 PanicException, a BaseException that no
    # `except Exception` on the way to the client catches): the text is kept whole instead.
    segmented = split_text(text, 400, "en")
    assert "".join(segmented.parts) == text
