"""One table between the codes clients send and the codes a checkpoint knows.

M2M100 checkpoints name their languages with ISO 639-1 codes (`en`, `zh`): what clients send, so
the table is the identity. NLLB-200 checkpoints name them with ISO 639-3 and a script
(`eng_Latn`, `zho_Hant`); clients keep sending ISO 639-1 / BCP-47 codes, so each NLLB code gets
the aliases a locale library derives for it (langcodes, from CLDR; no hand list):

- `lang-Script` always (`zh-Hant` for `zho_Hant`, `en-Latn` for `eng_Latn`);
- the bare language (`en`, `zh`) where the script is that language's usual one (`zh` is written
  in Hans by default, so `zh` is `zho_Hans`, never `zho_Hant`);
- macrolanguages as CLDR replaces them (`arb` -> `ar`, `zsm` -> `ms`), only where no code of the
  checkpoint already claims the alias directly (`aka_Latn` keeps `ak`; `twi_Latn` gets `tw`).

The API workers validate with `accepted`, list `listed` (one code per model language, the short
one), and the engine resolves with `to_model`. Imports no runtime code: both sides use it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable
from typing import Any

M2M100 = "m2m100"
NLLB = "nllb"
FAMILIES = (M2M100, NLLB)

# An NLLB-style code: ISO 639-3 language, underscore, ISO 15924 script (`eng_Latn`).
NLLB_CODE = re.compile(r"^[a-z]{2,3}_[A-Z][a-z]{3}$")


class LanguageCodes:
    """The codes a loaded checkpoint accepts, lists and resolves, from its own language codes."""

    def __init__(self, model_codes: Iterable[str], family: str = M2M100) -> None:
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(FAMILIES)}, not {family!r}")
        self.family = family
        self.model_codes = tuple(sorted(set(model_codes)))
        self._to_model: dict[str, str] = {code: code for code in self.model_codes}
        self._short: dict[str, str] = {}  # model code -> the code listed for it
        if family == NLLB:
            self._add_nllb_aliases()

    def _add_nllb_aliases(self) -> None:
        import langcodes

        parsed = [(code, *code.split("_", 1)) for code in self.model_codes if NLLB_CODE.match(code)]
        # A language the checkpoint writes in one script only gets its bare code whatever CLDR's
        # usual script (Korean's is `Kore`, the checkpoint's `kor_Hang`): `ko` is then unambiguous.
        scripts: dict[str, int] = {}
        for _, language, _ in parsed:
            scripts[language] = scripts.get(language, 0) + 1
        # Direct codes first (`eng` is `en`), then macrolanguage replacements for what is left.
        for macro in (False, True):
            for code, language, script in parsed:
                tag = langcodes.standardize_tag(language, macro=macro)
                self._to_model.setdefault(f"{tag}-{script}", code)
                usual = langcodes.Language.get(tag).maximize().script
                if usual == script or scripts[language] == 1:
                    if self._to_model.setdefault(tag, code) == code:
                        self._short[code] = min(self._short.get(code, tag), tag, key=len)
        for code, language, script in parsed:
            if code not in self._short:
                tag = f"{langcodes.standardize_tag(language, macro=True)}-{script}"
                self._short[code] = tag if self._to_model.get(tag) == code else code

    def to_model(self, code: str) -> str | None:
        """The checkpoint's code for what a client sent, or None where it has no such language."""
        return self._to_model.get(code)

    @property
    def accepted(self) -> frozenset[str]:
        """Every code a request may name: the listed ones, the model's own, and their aliases."""
        return frozenset(self._to_model)

    @property
    def listed(self) -> list[str]:
        """One code per language of the checkpoint, the shortest a client would send."""
        return sorted(self._short.get(code, code) for code in self.model_codes)

    def listed_code(self, code: str) -> str:
        """The listed code of any accepted code (`eng_Latn` and `en-Latn` are `en`), so two spellings
        of one language compare equal (a glossary's pair against a request's); others unchanged."""
        model = self._to_model.get(code)
        return code if model is None else self._short.get(model, model)

    def listed_to_model(self) -> dict[str, str]:
        return {self._short.get(code, code): code for code in self.model_codes}


# Codes clients send for a language under another code: LibreTranslate's own (`zt`, `pb`), retired
# ISO 639-1 codes (`iw`, `in`, `ji`, `jw`), and Norwegian's and Tagalog's other names. Each maps
# to what M2M100 or NLLB-200 may list, tried in order (`zt` is `zh-Hant` where the checkpoint has
# it, else `zh`).
ALIASES: dict[str, tuple[str, ...]] = {
    "zt": ("zh-hant", "zh"),
    "pb": ("pt",),
    "iw": ("he",),
    "in": ("id",),
    "ji": ("yi",),
    "jw": ("jv",),
    "nb": ("no",),
    "nn": ("no",),
    "no": ("nb",),
    "nso": ("ns",),
    "fil": ("tl",),
    "tgl": ("tl",),
    "tl": ("fil",),
}


def resolve(code: str, accepted: Collection[str]) -> str | None:
    """The accepted code a client means by `code`, for the APIs that take codes loosely
    (LibreTranslate's, DeepL's, the document endpoints), or None. In order: the code as sent;
    the same in any case and with `_` or `-` (`ZH-HANT` -> `zh-Hant`, `ENG_LATN` -> `eng_Latn`);
    its aliases; its language and likely script (`zh-TW` -> `zh-Hant`, `pt-BR` -> `pt-Latn`);
    the bare language (`pt-BR` -> `pt`, `zh-Hant` -> `zh` on M2M100) and its aliases. A region or
    script the checkpoint lacks thus falls back to its language, never to another language."""
    raw = code.strip()
    if raw in accepted:
        return raw
    folded = _folded(frozenset(accepted))
    value = raw.lower().replace("_", "-")
    base = value.split("-")[0]
    candidates = [value, *ALIASES.get(value, ()), *_likely(value), base, *ALIASES.get(base, ())]
    for candidate in candidates:
        if candidate in folded:
            return folded[candidate]
    return None


@functools.lru_cache(maxsize=8)
def _folded(accepted: frozenset[str]) -> dict[str, str]:
    return {code.lower().replace("_", "-"): code for code in sorted(accepted)}


@functools.lru_cache(maxsize=1024)
def _likely(value: str) -> tuple[str, ...]:
    """`lang-Script` of a tag with a region or script (CLDR's likely subtags), lower-cased."""
    if "-" not in value or len(value) > 35:
        return ()
    import langcodes

    try:
        language = langcodes.Language.get(value).maximize()
    except (ValueError, LookupError):  # not a tag langcodes can read: the other candidates decide
        return ()
    if not language.language or not language.script:
        return ()
    return (f"{language.language}-{language.script}".lower(),)


def base_language(code: str) -> str:
    """The bare language of any accepted code, for the text rules that go by language (sentence
    ends, languages written without spaces): `zh-Hant` and `zho_Hant` are `zh`, `en` is `en`."""
    if NLLB_CODE.match(code):
        import langcodes

        return str(langcodes.standardize_tag(code.split("_", 1)[0], macro=True))
    return code.split("-", 1)[0]


def family_of(metadata: dict[str, Any]) -> str:
    """A store entry's family: entries made before NLLB support hold M2M100 checkpoints."""
    family = metadata.get("family", M2M100)
    return str(family)


def codes_of(metadata: dict[str, Any]) -> LanguageCodes:
    """The table for a store entry (save_model.py records the model's codes and family)."""
    codes = metadata.get("model_languages") or metadata.get("languages") or []
    return LanguageCodes([str(code) for code in codes], family_of(metadata))
