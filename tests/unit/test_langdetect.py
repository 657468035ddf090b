"""translator.text.langdetect: the code mapping, the refusals, scripts, short strings, and the
accuracy table of docs/api.md.

The detector is the real one: py3langid's model and fastText's lid.176 (both ship in their
wheels), wordfreq's lists (the table is built once per machine, a few seconds).
`pytest tests/unit/test_langdetect.py -k accuracy -s` prints the accuracy table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES
from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES as NLLB_MODEL_CODES

from fixture.build import load_corpus, sentence_pairs
from translator.contract.language_codes import NLLB, LanguageCodes
from translator.text.langdetect import (
    DETECTOR_LABELS,
    DETECTOR_TO_M2M100,
    MIN_CONFIDENCE,
    LanguageDetector,
    detectable,
    detector_for,
)
from translator.text.scripts import ScriptTable

pytestmark = pytest.mark.pure

M2M100 = frozenset(FAIRSEQ_LANGUAGE_CODES["m2m100"])
DATA = Path(__file__).resolve().parents[2] / "fixture"


@pytest.fixture(scope="module")
def detector() -> LanguageDetector:
    return detector_for(M2M100)


def detector_labels() -> set[str]:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return set(LanguageIdentifier.from_model_file(MODEL_FILE).labels)


# --- the code mapping ----------------------------------------------------------------------------


def test_m2m100_has_its_hundred_codes() -> None:
    assert len(M2M100) == 100
    assert {"ns", "no", "zh", "ff"} <= M2M100 and not {"nso", "nb", "nn", "yue"} & M2M100


def test_mapping_goes_from_detector_labels_to_m2m100_codes() -> None:
    labels = detector_labels()
    assert set(DETECTOR_TO_M2M100) <= labels
    assert set(DETECTOR_TO_M2M100.values()) <= M2M100
    # a mapped label is never also an M2M100 code of its own (it would be detected twice)
    assert not set(DETECTOR_TO_M2M100) & M2M100
    assert DETECTOR_TO_M2M100 == {
        "nso": "ns",
        "nn": "no",
        "yue": "zh",
        "wuu": "zh",
        "fuv": "ff",
        "arz": "ar",
        "ary": "ar",
    }


def test_detectable_is_what_the_model_can_name() -> None:
    labels = detector_labels()
    assert labels == DETECTOR_LABELS  # the constant answers /languages without loading the model
    named = {DETECTOR_TO_M2M100.get(label, label) for label in labels}
    on_m2m100 = detectable(frozenset(M2M100))
    assert named & M2M100 == on_m2m100
    assert len(on_m2m100) == 91
    assert sorted(M2M100 - on_m2m100) == ["ast", "ceb", "ilo", "sd", "ss", "su", "tn", "wo", "yi"]


def test_detectable_on_nllb_is_in_its_listed_codes() -> None:
    listed = frozenset(LanguageCodes(NLLB_MODEL_CODES, NLLB).listed)
    on_nllb = detectable(listed)
    # Norwegian is `nb` there (M2M100's `no`); Esperanto, Latin... are NLLB languages M2M100 lacks.
    assert {"en", "nb", "zh", "eo", "mt", "ace"} <= on_nllb
    assert "no" not in on_nllb and "zh-Hant" not in on_nllb  # the detector cannot tell Chinese scripts
    assert on_nllb <= listed and len(on_nllb) > len(detectable(frozenset(M2M100)))


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Ho Lebowa ke mo go nago le batho ba bantši kudu lefaseng.", "ns"),  # nso
        ("Eg veit ikkje kva eg skal gjere i dag, men det blir nok bra.", "no"),  # nn
        ("Jeg vet ikke hva jeg skal gjøre i dag, men det blir sikkert bra.", "no"),
        ("我哋今日去邊度食飯呀？佢話唔知喎。", "zh"),  # yue
        ("我们今天去哪里吃饭？他说不知道。", "zh"),
    ],
)
@pytest.mark.processes
def test_mapped_languages_come_back_as_m2m100_codes(detector: LanguageDetector, text: str, code: str) -> None:
    assert detector.detect(text).language == code


# --- detection and refusals ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Life is like a box of chocolates.", "en"),
        ("Das Leben ist wie eine Schachtel Pralinen.", "de"),
        ("La vie est comme une boîte de chocolats.", "fr"),
        ("La vida es como una caja de bombones.", "es"),
        ("人生はチョコレートの箱のようなものだ。", "ja"),
        ("人生就像一盒巧克力。", "zh"),
        ("Жизнь похожа на коробку конфет: никогда не знаешь, что тебе попадётся.", "ru"),
        ("الحياة مثل علبة من الشوكولاتة.", "ar"),
        ("जीवन चॉकलेट के डिब्बे की तरह है।", "hi"),
        ("ชีวิตก็เหมือนกล่องช็อกโกแลต", "th"),
        ("Η ζωή είναι σαν ένα κουτί σοκολάτες.", "el"),
        ("인생은 초콜릿 상자와 같다.", "ko"),
    ],
)
def test_sentences_are_detected(detector: LanguageDetector, text: str, code: str) -> None:
    detection = detector.detect(text)
    assert detection.language == code, detection
    assert detection.confidence >= MIN_CONFIDENCE and detection.reason is None


@pytest.mark.parametrize(
    "text",
    ["12345", "3.14", "https://example.com/a/b?c=1", "foo@example.org", "Bonjour", "人生", "😀 👍", "---", "A4 5x"],
)
def test_numbers_urls_and_single_words_are_not_determined(detector: LanguageDetector, text: str) -> None:
    detection = detector.detect(text)
    assert detection.language is None
    assert detection.reason


def test_low_confidence_is_refused_with_the_best_guess(detector: LanguageDetector) -> None:
    detection = detector.detect("iPhone 15 Pro Max")
    assert detection.language is None
    assert "not determined with confidence" in (detection.reason or "")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("La vivo estas bela kaj mi amas ĝin tre multe.", "eo"),
        ("Gallia est omnis divisa in partes tres.", "la"),
        ("Kinyarwanda ni ururimi rwemewe mu Rwanda.", "rw"),
    ],
)
def test_a_language_the_model_lacks_is_named_not_mistaken(detector: LanguageDetector, text: str, label: str) -> None:
    # Restricted to M2M100's languages, Kinyarwanda would come out as Swahili (0.81).
    detection = detector.detect(text)
    assert detection.language is None
    assert f"detected as {label!r}" in (detection.reason or "")


def test_detection_is_restricted_to_the_checkpoints_languages() -> None:
    small = LanguageDetector({"en", "fr"})
    assert small.detect("La vie est comme une boîte de chocolats.").language == "fr"
    german = small.detect("Das Leben ist wie eine Schachtel Pralinen.")
    assert german.language is None and "'de'" in (german.reason or "")


@pytest.mark.processes
def test_importing_the_module_does_not_load_the_detector() -> None:
    code = (
        "import sys, translator.text.langdetect, translator.api.pipeline;"
        "print([m for m in ('py3langid', 'fasttext', 'wordfreq', 'marisa_trie') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- short strings (issue #43) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Notes", "en"),  # was Arabic (a .pptx translated from Arabic)
        ("Hello", "en"),  # was Breton
        ("Protonenstrahl", "de"),  # was Norwegian
        ("Speichern", "de"),
        ("Paramètres", "fr"),
        ("Configuración", "es"),
        ("Obrigado", "pt"),
        ("Impostazioni", "it"),
        ("Dziękuję", "pl"),
        ("Köszönöm", "hu"),
        ("Настройки", "ru"),
        ("Ρυθμίσεις", "el"),
        ("ログイン", "ja"),
        ("설정", "ko"),
        ("Save changes", "en"),
        ("Hello world", "en"),
    ],
)
def test_short_strings_are_guessed_right(detector: LanguageDetector, text: str, code: str) -> None:
    detection = detector.detect(text)
    assert detection.guess == code, detection.ranked[:3]


def test_hi_is_english_or_the_catalan_word_it_also_is(detector: LanguageDetector) -> None:
    # `hi` is among Catalan's most frequent words (wordfreq: 3.4e-3, English's `hi` 1e-4): alone it
    # may be either; beside English records, or with fallbackLang, the request settles it.
    detection = detector.detect("Hi")
    assert detection.guess in ("en", "ca") and "en" in dict(detection.ranked[:2]), detection.ranked[:3]
    assert detection.language is None  # one word: never determined on its own


def test_a_script_with_one_language_decides_alone(detector: LanguageDetector) -> None:
    for text, code in (("Καλημέρα", "el"), ("Բարեւ", "hy"), ("გამარჯობა", "ka"), ("東京の人口", "ja")):
        detection = detector.detect(text)
        assert detection.ranked == ((code, 1.0),), (text, detection.ranked)


def test_a_script_no_language_of_the_checkpoint_is_written_in_has_no_guess(detector: LanguageDetector) -> None:
    detection = detector.detect("ⵜⴰⵎⴰⵣⵉⵖⵜ ⵜⴰⵏⴰⵡⴰⵢⵜ")  # Tifinagh: NLLB has Tamazight, M2M100 nothing
    assert detection.guess is None and detection.language is None
    assert "script" in (detection.reason or "")


def test_latin_names_inside_another_script_do_not_make_it_latin(detector: LanguageDetector) -> None:
    for text, code in (
        ("LogEntry օբյեկտ", "hy"),
        ("redirect хаанаас", "mn"),
        ("boolean(True 또는 False)", "ko"),
        ("iPhone の使い方", "ja"),
    ):
        assert detector.detect(text).guess == code, text


def test_the_cyrillic_and_latin_languages_are_told_apart_by_script() -> None:
    table = ScriptTable(M2M100)
    assert table.scripts["sr"] == {"Cyrl", "Latn"} and table.scripts["ru"] == {"Cyrl"}
    assert table.scripts["ja"] == {"Jpan", "Hani"} and table.scripts["zh"] == {"Hani"}
    assert all(table.scripts[code] for code in M2M100)  # every language has its scripts
    nllb = ScriptTable(LanguageCodes(NLLB_MODEL_CODES, NLLB).accepted)
    # NLLB's codes carry their script: its Serbian is Cyrillic only, `acm` is Arabic, Tamazight Tifinagh
    assert nllb.scripts["sr"] == {"Cyrl"} and nllb.scripts["acm"] == {"Arab"} and nllb.scripts["tzm"] == {"Tfng"}
    assert nllb.scripts["ace"] == {"Latn"} and nllb.scripts["ace-Arab"] == {"Arab"}
    assert nllb.scripts["ko"] == {"Kore"}  # kor_Hang: Hangul, which a Korean text's letters count as
    assert all(nllb.scripts[code] for code in LanguageCodes(NLLB_MODEL_CODES, NLLB).listed)


# Letters of one script each (the Basic Multilingual Plane's), for the property below.
SCRIPTS = (
    "Latn Cyrl Grek Arab Hebr Deva Beng Gujr Guru Taml Knda Mlym Orya Sinh Thai Laoo Khmr Mymr Tibt Geor "
    "Armn Ethi Hang Hira Kana Hani Tfng Cher"
).split()


def _letters(script: str) -> str:
    # Letters to regex's Unicode tables and to Python's both: regex's are newer (U+0558 is an
    # Armenian letter there, unassigned to Python 3.11's str.isalpha, which the detector asks).
    pattern = regex.compile(rf"[\p{{sc={script}}}&&\p{{L}}]", regex.V1)
    return "".join(char for char in map(chr, range(0x20, 0xFFFF)) if pattern.match(char) and char.isalpha())


ALPHABETS = {script: _letters(script) for script in SCRIPTS}


@st.composite
def script_texts(draw: st.DrawFn) -> str:
    """One to four words of one or two scripts' letters, with digits and punctuation around."""
    scripts = draw(st.lists(st.sampled_from(SCRIPTS), min_size=1, max_size=2))
    words = [
        draw(st.text(alphabet=ALPHABETS[draw(st.sampled_from(scripts))], min_size=1, max_size=8))
        for _ in range(draw(st.integers(1, 4)))
    ]
    glue = draw(st.sampled_from([" ", ", ", " 12 ", "-", "; "]))
    return glue.join(words)


NLLB_ACCEPTED = frozenset(LanguageCodes(NLLB_MODEL_CODES, NLLB).accepted)


# The scripts each checkpoint's languages are written in (M2M100's by its languages' CLDR data,
# NLLB's by its own codes: kor_Hang, tzm_Tfng, bod_Tibt): text in them always has a guess.
BOTH = "Latn Cyrl Grek Arab Hebr Deva Beng Gujr Guru Taml Knda Mlym Orya Sinh Thai Laoo Khmr Mymr Geor Armn Ethi"
WRITTEN = {"m2m100": f"{BOTH} Hang Hira Kana Hani".split(), "nllb": f"{BOTH} Hang Hira Kana Hani Tibt Tfng".split()}


@pytest.mark.parametrize(
    ("checkpoint", "script"),
    [(checkpoint, script) for checkpoint, scripts in WRITTEN.items() for script in scripts]
    + [("m2m100", "Tibt"), ("m2m100", "Tfng"), ("m2m100", "Cher"), ("nllb", "Cher")],
)
def test_text_in_a_script_of_the_checkpoint_has_a_guess_in_it(checkpoint: str, script: str) -> None:
    detector = detector_for(M2M100 if checkpoint == "m2m100" else NLLB_ACCEPTED)
    text = " ".join(ALPHABETS[script][i : i + 5] for i in (0, 7, 20))
    detection = detector.detect(text)
    if script not in WRITTEN[checkpoint]:
        assert detection.guess is None and detection.ranked == ()
        return
    assert detection.guess is not None, (script, text)
    assert not detector.scripts.across(detection.guess, text)


@pytest.mark.parametrize("languages", [M2M100, NLLB_ACCEPTED], ids=["m2m100", "nllb"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=script_texts())
def test_never_across_scripts(languages: frozenset[str], text: str) -> None:
    detector = detector_for(languages)
    detection = detector.detect(text)
    table = detector.scripts
    written = table.written_in(table.primary(text))
    if detection.guess is None:
        assert not written  # only a script none of the checkpoint's languages is written in
        return
    assert not table.across(detection.guess, text), (text, detection.guess)
    assert table.primary(text) in table.scripts[detection.guess]
    assert {code for code, _ in detection.ranked} <= written
    if detection.language is not None:
        assert detection.language == detection.guess
    assert abs(sum(share for _, share in detection.ranked) - 1.0) < 1e-6


# --- accuracy (the README's table) ---------------------------------------------------------------


def corpus_sentences() -> list[tuple[str, str]]:
    """Every sentence of the fixture corpus and the evaluation test set, with its language, once."""
    seen = dict.fromkeys((language, sentence) for language, _, sentence, _ in sentence_pairs(load_corpus()))
    for line in (DATA / "eval" / "testset.jsonl").read_text(encoding="utf-8").splitlines():
        pair = json.loads(line)
        seen[(pair["src_lang"], pair["source"])] = None
        seen[(pair["tgt_lang"], pair["reference"])] = None
    return list(seen)


def prefix(language: str, sentence: str, words: int) -> str:
    """The first `words` words; for Japanese and Chinese (no spaces) two characters a word."""
    if language in ("ja", "zh"):
        return sentence[: 2 * words]
    return " ".join(sentence.split()[:words])


def score(detector: LanguageDetector, cases: list[tuple[str, str]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for language, text in cases:
        got = detector.detect(text).language
        counts["total"] += 1
        counts["correct" if got == language else "refused" if got is None else "wrong"] += 1
    return counts


def test_accuracy_on_the_fixture_corpus_and_short_inputs(detector: LanguageDetector) -> None:
    sentences = corpus_sentences()
    rows = []
    for language in sorted({lang for lang, _ in sentences}):
        rows.append((f"sentences, {language}", score(detector, [c for c in sentences if c[0] == language])))
    whole = score(detector, sentences)
    rows.append(("sentences, all", whole))
    short = {n: score(detector, [(lang, prefix(lang, s, n)) for lang, s in sentences]) for n in (1, 2, 3)}
    rows += [(f"first {n} word{'s' if n > 1 else ''}", counts) for n, counts in short.items()]

    print("\n| input | n | correct | refused (400) | wrong |\n|---|--:|--:|--:|--:|")
    for name, c in rows:
        print(f"| {name} | {c['total']} | {c['correct']} | {c['refused']} | {c['wrong']} |")

    # Whole sentences: nearly all detected. Short inputs: refused rather than guessed; single words
    # never answered (the two-word minimum), and a wrong answer stays rare.
    assert whole["correct"] >= 0.98 * whole["total"] and whole["wrong"] <= 1
    assert short[1]["correct"] + short[1]["wrong"] == 0
    for n in (2, 3):
        assert short[n]["wrong"] <= 0.02 * short[n]["total"], short[n]
    assert short[3]["correct"] >= 0.8 * short[3]["total"]


def test_accuracy_of_what_short_records_are_translated_from(detector: LanguageDetector) -> None:
    """What `fromLang: "auto"` translates a short record from now that it never refuses one:
    alone, the detector's best guess; in a request with other records, the language determined
    for most of them when its own is not determined (translator/api/pipeline.py)."""
    sentences = corpus_sentences()
    print("\n| input | n | alone: best guess right | beside sentences of its language: right |")
    print("|---|--:|--:|--:|")
    results = {}
    for n in (1, 2, 3):
        cases = [(lang, prefix(lang, s, n)) for lang, s in sentences]
        alone = sum(detector.detect(text).guess == lang for lang, text in cases)
        # beside others of its language, an undetermined record takes their (determined) language
        beside = sum((detector.detect(text).language or lang) == lang for lang, text in cases)
        results[n] = (alone, beside, len(cases))
        print(f"| first {n} word{'s' if n > 1 else ''} | {len(cases)} | {alone} | {beside} |")
    for n, (_, beside, total) in results.items():
        assert beside >= 0.98 * total, (n, beside)
    assert results[3][0] >= 0.9 * results[3][2] and results[1][0] >= 0.4 * results[1][2], results
