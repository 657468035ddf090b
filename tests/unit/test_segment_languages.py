"""Sentence splitting in many languages and scripts: regression cases and properties.

tests/unit/test_segment.py holds the layout rules (whitespace, line breaks, chunking, clusters) and
the hand-written English/CJK cases; this file checks that the split follows each language's own
terminators and abbreviations, with sentencex's rules and the ones translator.text.sentences adds on top.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translator.text.segment import join, split_text

pytestmark = pytest.mark.pure

BIG = 10_000

# (language, sentences): written the way the language writes them, glued with one space (or
# nothing for scripts without spaces between sentences) they must split back into exactly these.
SENTENCES: dict[str, list[str]] = {
    "en": ["Mr. Smith met Dr. Jones at 5 p.m. yesterday.", "They talked about the U.S. economy.", "Then they left."],
    "de": ["Das ist z. B. ein Test.", "Er kam am 3. Mai nach Berlin.", "Dr. Müller wartete bis 10 Uhr."],
    "fr": ["M. Dupont est arrivé.", "Il a dit bonjour à Mme Martin.", "Où est la gare ?", "Elle est à gauche !"],
    "es": ["¿Dónde está la estación?", "Está a la izquierda.", "El Sr. García vive aquí."],
    "it": ["Il sig. Rossi è arrivato.", "Ha detto ciao."],
    "pt": ["O Sr. Silva chegou.", "Ele disse olá."],
    "nl": ["Dhr. Jansen is er.", "Hij zegt hallo."],
    "pl": ["Dzień dobry.", "Jak się masz?", "Np. dobrze."],
    "ru": ["Привет, мир!", "Как дела?", "Всё хорошо."],
    "uk": ["Привіт, світе!", "Як справи?"],
    "el": ["Τι κάνεις;", "Καλά, ευχαριστώ.", "Πού είσαι\u037e", "Εδώ."],  # ";" and U+037E ask
    "hy": ["Բարև ձեզ։", "Ինչպե՞ս եք։"],  # Armenian full stop ։
    "ka": ["გამარჯობა.", "როგორ ხარ?", "კარგად."],
    "hi": ["यह एक वाक्य है।", "यह दूसरा वाक्य है।", "क्या आप ठीक हैं?"],  # danda ।
    "mr": ["हे एक वाक्य आहे।", "हे दुसरे आहे।"],
    "ne": ["यो एउटा वाक्य हो।", "यो अर्को हो।"],
    "bn": ["এটি একটি বাক্য।", "এটি আরেকটি বাক্য।"],
    "pa": ["ਇਹ ਇੱਕ ਵਾਕ ਹੈ।", "ਇਹ ਦੂਜਾ ਹੈ।"],
    "gu": ["આ એક વાક્ય છે.", "આ બીજું છે."],
    "ta": ["இது ஒரு வாக்கியம்.", "இது இன்னொன்று."],
    "si": ["මෙය වාක්\u200dයයකි.", "මෙය තවත් එකකි."],  # ZWJ inside a word stays
    "am": ["ሰላም ነው።", "እንዴት ነህ፧", "ደህና ነኝ።"],  # Ethiopic full stop ። and question mark ፧
    "ar": ["مرحبا بالعالم.", "كيف حالك؟", "أنا بخير."],
    "fa": ["سلام دنیا.", "حال شما چطور است؟", "من خوبم."],
    "ur": ["یہ ایک جملہ ہے۔", "یہ دوسرا ہے۔"],  # Urdu full stop ۔
    "he": ["שלום עולם.", "מה שלומך?", "טוב."],
    "my": ["မင်္ဂလာပါ။", "နေကောင်းလား။"],  # Burmese section mark ။
    "km": ["សួស្តី។", "តើអ្នកសុខសប្បាយទេ។"],  # Khmer khan ។ (not known to sentencex)
    "bo": ["བཀྲ་ཤིས་བདེ་ལེགས།", "ཁྱེད་རང་སྐུ་གཟུགས་བདེ་པོ་ཡིན་པས།"],  # Tibetan shad །
    "ko": ["안녕하세요.", "잘 지내세요?", "네, 잘 지내요."],
    "vi": ["Xin chào.", "Bạn khỏe không?", "Tôi khỏe."],
    "tr": ["Merhaba dünya.", "Nasılsın?", "İyiyim."],
    "ja": ["今日は晴れ。", "明日は雨。", "「行きます。」", "円周率は３．１４です。"],
    "zh": ["你好！", "你好吗？", "我很好。", "他说：“走吧！”"],
}
# Scripts that put no space between sentences.
UNSPACED = {"ja", "zh", "km"}


def glue(language: str) -> str:
    return "" if language in UNSPACED else " "


@pytest.mark.parametrize("language", sorted(SENTENCES))
def test_sentences_split_back_in_their_language(language: str) -> None:
    sentences = SENTENCES[language]
    text = glue(language).join(sentences)
    seg = split_text(text, BIG, language)
    assert seg.pieces == sentences
    assert join(seg, seg.pieces) == text


def test_at_least_twenty_scripts_are_covered() -> None:
    scripts = set()
    for sentences in SENTENCES.values():
        for char in "".join(sentences):
            if char.isalpha():
                scripts.add(_script(char))
    assert len(scripts) >= 20, sorted(scripts)


def _script(char: str) -> str:
    import unicodedata

    # The first word of a letter's Unicode name is its script ("DEVANAGARI LETTER KA").
    name = unicodedata.name(char, "UNKNOWN")
    return "HAN" if name.startswith("CJK") else name.split()[0]


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        # German "z. B." and ordinals: the library knows them; the regex splitter cut after "z."
        ("de", "Das ist z. B. ein Test. Gut.", ["Das ist z. B. ein Test.", "Gut."]),
        ("de", "Am 3. Mai kam er.", ["Am 3. Mai kam er."]),
        # French "M." (Monsieur): a single capital initial, vetoed on top of the library
        ("fr", "M. Dupont est là. Bonjour.", ["M. Dupont est là.", "Bonjour."]),
        # French spaces before ? and !
        ("fr", "Ça va ? Oui !", ["Ça va ?", "Oui !"]),
        # English rules stay where the language is English ...
        ("en", "Dr. Who and Prof. X met. Then", ["Dr. Who and Prof. X met.", "Then"]),
        # ... and the language decides: German does not end a sentence before a lower-case word
        ("de", "Er sagte ja. und ging.", ["Er sagte ja. und ging."]),
        # Greek: ";" is a question mark in Greek only
        ("el", "Τι; Ναι.", ["Τι;", "Ναι."]),
        ("en", "Wait; then go.", ["Wait; then go."]),
        # Khmer khan without a following space still ends the sentence
        ("km", "សួស្តី។ខ្ញុំសុខសប្បាយ។", ["សួស្តី។", "ខ្ញុំសុខសប្បាយ។"]),
        # Tibetan shad needs the space after it (a shad inside a line of verse is not an end)
        ("bo", "ཀ།ཁ། ག།", ["ཀ།ཁ།", "ག།"]),
        # Thai has no terminators: a line is one sentence, chunked at spaces when too long
        ("th", "สวัสดีครับ วันนี้อากาศดีมาก\nผมไปตลาด", ["สวัสดีครับ วันนี้อากาศดีมาก", "ผมไปตลาด"]),
        # Chinese and Japanese closers stay with their sentence
        ("ja", "『終わり。』】次。", ["『終わり。』】", "次。"]),
        ("zh", "他说：“走吧！”然后走了。", ["他说：“走吧！”", "然后走了。"]),
        # Arabic, Urdu, Hindi, Armenian, Amharic, Burmese terminators in any source language
        ("en", "كيف حالك؟ أنا بخير.", ["كيف حالك؟", "أنا بخير."]),
        ("ur", "یہ ہے۔ وہ ہے۔", ["یہ ہے۔", "وہ ہے۔"]),
        ("hi", "यह है। वह है॥ ठीक", ["यह है।", "वह है॥", "ठीक"]),
        ("hy", "Այո։ Ոչ։", ["Այո։", "Ոչ։"]),
        ("am", "አዎ። አይ።", ["አዎ።", "አይ።"]),
        ("my", "ဟုတ်ကဲ့။ မဟုတ်ဘူး။", ["ဟုတ်ကဲ့။", "မဟုတ်ဘူး။"]),
        # a sentence ending inside brackets (the library skips bracketed text)
        ("de", "(Wirklich?) Ja. [Fertig.] Weiter.", ["(Wirklich?)", "Ja.", "[Fertig.]", "Weiter."]),
        # an unknown language code gets the English rules
        ("xx", "Mr. Smith left. Bye.", ["Mr. Smith left.", "Bye."]),
    ],
)
def test_language_rules(language: str, text: str, expected: list[str]) -> None:
    assert split_text(text, BIG, language).pieces == expected


def test_thai_long_line_is_cut_at_spaces() -> None:
    phrase = "วันนี้อากาศดีมาก"  # 16 characters
    text = " ".join([phrase] * 10)
    seg = split_text(text, 40, "th")
    assert seg.pieces == [f"{phrase} {phrase}"] * 5
    assert join(seg, seg.pieces) == text


def test_long_line_of_short_sentences_is_windowed_without_losing_cuts() -> None:
    # Longer than the library's window: every sentence must still be found, also the ones that
    # straddle a window's end.
    sentences = [f"Satz Nummer {i} ist hier." for i in range(400)]
    text = " ".join(sentences)
    assert split_text(text, BIG, "de").pieces == sentences
    ja = [f"第{i}文です。" for i in range(1500)]
    assert split_text("".join(ja), BIG, "ja").pieces == ja


# --- properties ----------------------------------------------------------------------------------

WHITESPACE = [" ", "  ", "\t", "\n", "\r\n", "\n\n", "\u3000", "\u00a0", "\u2028"]
prop_settings = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def glued(draw: st.DrawFn) -> tuple[str, list[str], str]:
    """A language, some of its sentences in any order, glued with any whitespace (or nothing,
    where the script writes none)."""
    language = draw(st.sampled_from(sorted(SENTENCES)))
    sentences = draw(st.lists(st.sampled_from(SENTENCES[language]), min_size=1, max_size=12))
    gaps = [draw(st.sampled_from(WHITESPACE + ([""] if language in UNSPACED else []))) for _ in sentences[1:]]
    text = sentences[0] + "".join(gap + s for gap, s in zip(gaps, sentences[1:], strict=True))
    return language, sentences, text


@prop_settings
@given(glued())
def test_any_glue_splits_back_into_the_sentences(case: tuple[str, list[str], str]) -> None:
    language, sentences, text = case
    seg = split_text(text, BIG, language)
    assert seg.pieces == sentences
    assert "".join(seg.parts) == text


@prop_settings
@given(glued(), st.integers(1, 60))
def test_layout_and_limits_hold_in_every_language(case: tuple[str, list[str], str], max_chars: int) -> None:
    language, _, text = case
    seg = split_text(text, max_chars, language)
    assert "".join(seg.parts) == text
    assert join(seg, seg.pieces) == text
    for part, is_piece in zip(seg.parts, seg.translatable, strict=True):
        assert part
        if is_piece:
            assert len(part) <= max_chars
            assert not part[0].isspace() and not part[-1].isspace()
        else:
            assert part.isspace()


LANGUAGE_CODES = sorted(SENTENCES) + ["th", "lo", "xx"]
MIXED = st.lists(
    st.sampled_from(
        [s for sentences in SENTENCES.values() for s in sentences]
        + WHITESPACE
        + ["។", "།", "\u037e", ";", "։", "።", "۔", "။", "।", ".", "…", "(", ")", "»", "」", "No.", "z. B.", "M."]
    ),
    max_size=40,
).map("".join)


@prop_settings
@given(MIXED, st.sampled_from(LANGUAGE_CODES), st.integers(1, 120))
def test_mixed_scripts_under_any_language_keep_the_contract(text: str, language: str, max_chars: int) -> None:
    seg = split_text(text, max_chars, language)
    assert "".join(seg.parts) == text
    assert join(seg, [p.upper() for p in seg.pieces]) == text.upper()
    assert all(len(p) <= max_chars and p.strip() == p for p in seg.pieces)
    assert all(len(p.splitlines()) == 1 for p in seg.pieces)


def test_a_lone_surrogate_keeps_the_library_cuts() -> None:
    # Only text decoded with surrogatepass holds one; it cannot be passed to the library as is.
    assert split_text("Hi\ud800. There. Dr. Who.", BIG, "en").pieces == ["Hi\ud800.", "There.", "Dr. Who."]
