"""translator.api.libretranslate without a server: codes as clients send them, names, settings.
The routes themselves are tested on a running server (tests/e2e/test_libretranslate.py)."""

from __future__ import annotations

import pytest
from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

from translator.api.libretranslate import (
    language_name,
    languages_body,
    normalize_code,
    normalized_path,
    settings_body,
)
from translator.contract import limits

pytestmark = pytest.mark.pure

M2M100 = frozenset(FAIRSEQ_LANGUAGE_CODES["m2m100"])


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        ("en", "en"),
        ("EN", "en"),
        ("en_US", "en"),
        ("en-gb", "en"),
        ("zh-Hans", "zh"),
        ("zh-Hant", "zh"),
        ("zt", "zh"),
        ("ZH_TW", "zh"),
        ("pt-BR", "pt"),
        ("pb", "pt"),
        ("iw", "he"),
        ("nb", "no"),
        ("nn-NO", "no"),
        ("fil", "tl"),
        ("nso", "ns"),
        (" de ", "de"),
        ("zz", None),
        ("auto", None),
        ("", None),
        ("e", None),
    ],
)
def test_codes_as_clients_send_them(sent, expected):
    assert normalize_code(sent, M2M100) == expected


@pytest.mark.parametrize(
    ("path", "normalized"),
    [
        ("/libretranslate/translate", "/libretranslate/translate"),
        ("/libretranslate//translate", "/libretranslate/translate"),
        ("//libretranslate/translate/", "/libretranslate/translate"),
        ("/libretranslate/frontend//settings", "/libretranslate/frontend/settings"),
        ("/libretranslate", None),
        ("/libretranslate/", None),
        ("/translation", None),
        ("//translation", None),
    ],
)
def test_paths_joined_naively_reach_the_api(path, normalized):
    assert normalized_path(path) == normalized


def test_the_formats_are_the_payloads():
    from typing import get_args

    from translator.contract.schemas import Payload
    from translator.text.plan import FORMATS

    assert get_args(Payload.model_fields["format"].annotation) == FORMATS


def test_a_code_the_loaded_model_lacks_is_not_taken():
    assert normalize_code("pt-BR", {"en", "fr"}) is None


def test_every_m2m100_language_has_an_english_name_from_cldr():
    names = {code: language_name(code) for code in M2M100}
    assert not [code for code, name in names.items() if "Unknown" in name or name == code], names
    assert (names["de"], names["ns"], names["zh"], names["ilo"]) == ("German", "Northern Sotho", "Chinese", "Iloko")


def test_languages_and_settings_bodies():
    body = languages_body({"fr", "en"})
    assert body == [
        {"code": "en", "name": "English", "targets": ["fr"]},
        {"code": "fr", "name": "French", "targets": ["en"]},
    ]
    settings = settings_body({"fr", "en"})
    assert settings["charLimit"] == limits.MAX_CHARS_PER_RECORD  # per text, as LibreTranslate's
    assert settings["language"]["target"] == {"code": "en", "name": "English"}
    assert settings["keyRequired"] is False
