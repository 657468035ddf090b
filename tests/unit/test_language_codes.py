"""The one table between clients' codes and the checkpoint's (translator/contract/language_codes.py),
on NLLB-200's real list of 202 codes and on M2M100's."""

from __future__ import annotations

import pytest
from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

from translator.contract.language_codes import M2M100, NLLB, LanguageCodes, base_language, codes_of

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
