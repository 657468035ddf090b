"""The one table between clients' codes and the checkpoint's (translator/contract/language_codes.py),
on NLLB-200's real list of 202 codes and on M2M100's."""

from __future__ import annotations

import pytest
from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

from translator.contract.language_codes import M2M100, NLLB, LanguageCodes, base_language, codes_of, resolve

pytestmark = pytest.mark.pure

NLLB_TABLE = LanguageCodes(FAIRSEQ_LANGUAGE_CODES, NLLB)


@pytest.mark.parametrize(
    ("sent", "model"),
    [
        ("en", "eng_Latn"),
        ("eng_Latn", "eng_Latn"),
        ("en-Latn", "eng_Latn"),
        ("zh", "zho_Hans"),
        ("zh-Hans", "zho_Hans"),
        ("zh-Hant", "zho_Hant"),
        ("ja", "jpn_Jpan"),
        ("ar", "arb_Arab"),  # CLDR's macrolanguage replacement, not acm/ars/...
        ("ms", "zsm_Latn"),
        ("fa", "pes_Arab"),
        ("ak", "aka_Latn"),  # a direct code wins over a macrolanguage replacement (twi -> ak)
        ("tw", "twi_Latn"),
        ("sr", "srp_Cyrl"),
        ("yue", "yue_Hant"),
    ],
)
def test_nllb_aliases(sent, model):
    assert NLLB_TABLE.to_model(sent) == model


@pytest.mark.parametrize("sent", ["xx", "eng_Latx", "zh-Latn", "", "EN", "en_Latn"])
def test_unknown_codes_resolve_to_nothing(sent):
    assert NLLB_TABLE.to_model(sent) is None
    assert sent not in NLLB_TABLE.accepted


def test_listed_is_one_code_per_model_language_and_resolves_back():
    listed = NLLB_TABLE.listed
    assert len(listed) == len(set(listed)) == len(FAIRSEQ_LANGUAGE_CODES)
    assert {"en", "zh", "zh-Hant", "ar", "ja"} <= set(listed)
    assert all(NLLB_TABLE.to_model(code) == model for code, model in NLLB_TABLE.listed_to_model().items())


def test_m2m100_is_the_identity():
    table = LanguageCodes(["en", "zh", "ja"], M2M100)
    assert table.listed == ["en", "ja", "zh"]
    assert table.accepted == {"en", "zh", "ja"}
    assert table.to_model("zh-Hant") is None


def test_store_entries_before_families_are_m2m100():
    assert codes_of({"languages": ["en", "fr"]}).family == M2M100
    nllb = codes_of({"family": NLLB, "languages": ["en"], "model_languages": ["eng_Latn"]})
    assert nllb.to_model("en") == "eng_Latn"


def test_bad_family_is_refused():
    with pytest.raises(ValueError, match="family must be one of m2m100, nllb"):
        LanguageCodes(["en"], "marian")


@pytest.mark.parametrize(("code", "base"), [("zho_Hant", "zh"), ("zh-Hant", "zh"), ("en", "en"), ("arb_Arab", "ar")])
def test_base_language_for_the_text_rules(code, base):
    assert base_language(code) == base


M2M100_TABLE = LanguageCodes(["en", "de", "fr", "zh", "pt", "no", "tl", "he", "ko"], M2M100)


@pytest.mark.parametrize(
    ("sent", "nllb", "m2m100"),
    [
        ("zh-Hant", "zh-Hant", "zh"),  # Traditional where the checkpoint has it, else the language
        ("ZH-HANT", "zh-Hant", "zh"),  # DeepL's spelling
        ("zh-TW", "zh-Hant", "zh"),  # the region's likely script
        ("zt", "zh-Hant", "zh"),  # LibreTranslate's own code
        ("zh_CN", "zh-Hans", "zh"),
        ("ENG_LATN", "eng_Latn", None),
        ("EN-US", "en-Latn", "en"),
        ("pt-BR", "pt-Latn", "pt"),
        ("pb", "pt", "pt"),
        ("NB", "nb", "no"),
        ("no", "nb", "no"),
        ("iw", "he", "he"),
        ("xx", None, None),
        ("", None, None),
    ],
)
def test_the_one_resolver_of_the_loose_apis(sent, nllb, m2m100):
    assert resolve(sent, NLLB_TABLE.accepted) == nllb
    assert resolve(sent, M2M100_TABLE.accepted) == m2m100
    if nllb is not None:  # whatever spelling it picks names the right language of the checkpoint
        assert NLLB_TABLE.to_model(nllb) is not None


@pytest.mark.parametrize(("sent", "model"), [("ko", "kor_Hang"), ("no", None), ("nb", "nob_Latn"), ("fil", "tgl_Latn")])
def test_a_language_of_one_script_takes_its_bare_code(sent, model):
    # Korean's usual script in CLDR is Kore, NLLB's code kor_Hang: still the only Korean there is.
    assert NLLB_TABLE.to_model(sent) == model


def test_detection_answers_the_checkpoints_codes_on_nllb():
    from translator.text.langdetect import detector_for

    detector = detector_for(NLLB_TABLE.accepted)
    korean = "안녕하세요, 오늘 날씨가 정말 좋네요. 산책하러 갈까요?"
    norwegian = "Jeg heter Ola og jeg bor i Oslo sammen med familien min."
    assert [detector.detect(text).language for text in (korean, norwegian)] == ["ko", "nb"]
