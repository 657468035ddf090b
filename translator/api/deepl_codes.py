"""DeepL's language codes and the ISO codes the native API takes (#33, #44).

DeepL writes codes in upper case: a base language (`DE`, `EN`), and for some targets a region or
script (EN-US, EN-GB, PT-BR, PT-PT, ES-419, ZH-HANS, ZH-HANT). The model has one English, one
Portuguese and one Chinese, so every variant maps to its base language; `NB` is Norwegian Bokmål,
`no` to M2M100. Only DeepL's codes are taken: a source is a base language, a target a base language
or one of DeepL's variants, and a glossary's languages are base languages, as DeepL documents them
(`DE-DE` is no DeepL code, whatever a BCP 47 parser makes of it); and the codes this server itself
takes, in any case (an NLLB checkpoint's `ENG_LATN`, the `ZH-HANT` it lists as a source). This is
the only place the API under /deepl turns one into the other.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

from translator.contract.language_codes import resolve

# Target variants DeepL lists, and the base language each is translated into.
TARGET_VARIANTS = {
    "EN-US": "en",
    "EN-GB": "en",
    "PT-BR": "pt",
    "PT-PT": "pt",
    "ES-419": "es",
    "ZH-HANS": "zh",
    "ZH-HANT": "zh",
}
# Targets DeepL keeps for old clients ("unspecified variant for backward compatibility") but lists no
# more: its target list names their variants instead.
UNLISTED_TARGETS = frozenset({"EN", "PT"})
# DeepL codes whose base is not the model's ISO code.
_ALIASES = {"nb": "no"}
_BASE = re.compile(r"[A-Za-z]{2,3}")


def to_iso(code: str, supported: Collection[str], target: bool = False) -> str | None:
    """The model's code for a DeepL code (any case), or None when it is neither one of DeepL's codes
    (for a target, `target`: a variant too) nor one this server takes, or the model lacks it. The one
    resolver (translator/contract/language_codes.py) maps it, so `ZH-HANT` is Traditional Chinese
    where the checkpoint has it (NLLB-200's `zh-Hant`) and `zh` where it has one Chinese (M2M100),
    and `NB` is `nb` or M2M100's `no`."""
    deepls = _BASE.fullmatch(code) or (target and code.upper() in TARGET_VARIANTS)
    if not deepls and _folded(code) not in _spellings(frozenset(supported)):
        return None
    return resolve(code, supported)


def _folded(code: str) -> str:
    return code.strip().lower().replace("_", "-")


@functools.lru_cache(maxsize=8)
def _spellings(supported: frozenset[str]) -> frozenset[str]:
    return frozenset(_folded(code) for code in supported)


def to_deepl(iso: str) -> str:
    """The DeepL code of a model's language, as `detected_source_language` and the lists write it."""
    for alias, model in _ALIASES.items():
        if iso == model:
            return alias.upper()
    return iso.upper()


def target_codes(supported: Collection[str]) -> list[str]:
    """Every target code DeepL lists that this server takes: its regional variants included, the
    base codes it no longer lists (EN, PT) left out, although they are taken."""
    codes = {to_deepl(code) for code in supported} - UNLISTED_TARGETS
    codes |= {variant for variant, base in TARGET_VARIANTS.items() if base in supported}
    return sorted(codes)
