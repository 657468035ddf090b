"""DeepL's language codes and the ISO codes the native API takes (#33).

DeepL writes codes in upper case, with a region or script for some targets (EN-US, EN-GB, PT-BR,
PT-PT, ZH-HANS, ZH-HANT). The model has one English, one Portuguese and one Chinese, so every
variant maps to its base language; `NB` is Norwegian Bokmål, `no` to M2M100. This is the only
place the API under /deepl turns one into the other.
"""

from __future__ import annotations

from collections.abc import Collection

from translator.contract.language_codes import resolve

# Target variants DeepL lists, and the base language each is translated into.
TARGET_VARIANTS = {"EN-US": "en", "EN-GB": "en", "PT-BR": "pt", "PT-PT": "pt", "ZH-HANS": "zh", "ZH-HANT": "zh"}
# DeepL codes whose base is not the model's ISO code.
_ALIASES = {"nb": "no"}


def to_iso(code: str, supported: Collection[str]) -> str | None:
    """The model's code for a DeepL code (any case), or None when the model lacks it: the one
    resolver (translator/contract/language_codes.py), so `ZH-HANT` is Traditional Chinese where the
    checkpoint has it (NLLB-200's `zh-Hant`) and `zh` where it has one Chinese (M2M100), and `NB` is
    `nb` or M2M100's `no`."""
    return resolve(code, supported)


def to_deepl(iso: str) -> str:
    """The DeepL code of a model's language, as `detected_source_language` and the lists write it."""
    for alias, model in _ALIASES.items():
        if iso == model:
            return alias.upper()
    return iso.upper()


def target_codes(supported: Collection[str]) -> list[str]:
    """Every target code this server takes, DeepL's regional variants included."""
    codes = {to_deepl(code) for code in supported}
    codes |= {variant for variant, base in TARGET_VARIANTS.items() if base in supported}
    return sorted(codes)
