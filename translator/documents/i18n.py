"""What the JSON and YAML localization files share (json_catalogs.py, yaml_catalogs.py; gettext's
PO/POT: po.py; XLIFF: xliff.py): which string values are codes for the software, not words.

A string that names a locale is a code for the software, not a word (i18n-iso-countries'
`"locale": "en"`), and is never translated: a language tag (BCP 47, `_` taken for `-`, as langcodes
validates it) that is the value of a key naming a locale or a language (`locale`, `lang`,
`language`, `lng`, `hreflang`, and keys ending so: `defaultLocale`, `fallback_lng`, `languageCode`,
`lang_id`), or of a `code`/`id`/`iso`/`tag` key inside one (`"languages": [{"code": "en"}]`), or
any value that is a tag with a script or a region written as tags are (`pt-BR`, `zh_Hant`,
`sr-Latn`, `es-419`). A bare language code elsewhere (`"no"`, `"it"`, `"is"`) is a word, and is
translated.
"""

from __future__ import annotations

import re

# The words of a key: `defaultLocale`, `fallback_lng`, `LANGUAGE_CODE`.
_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_LOCALE_WORDS = frozenset("locale locales lang langs language languages lng lngs hreflang".split())
_CODE_WORDS = frozenset("code codes id ids iso tag tags".split())
# What a language tag is made of (bounded, so that langcodes only sees plausible ones), and a tag
# with a script or a region as tags are written: known for one anywhere.
_TAG_CHARACTERS = re.compile(r"[A-Za-z0-9_-]{2,35}")
_REGIONAL_TAG = re.compile(r"[a-z]{2,3}(?:[-_][A-Z][a-z]{3})?(?:[-_](?:[A-Z]{2}|[0-9]{3}))?")


def _words(key: str | None) -> list[str]:
    return [word.lower() for word in _KEY_WORDS.findall(key or "")]


def _names_locale(words: list[str]) -> bool:
    """Whether a key of these words names a locale or a language (`lng`, `defaultLocale`, `lang_code`)."""
    if not words:
        return False
    return words[-1] in _LOCALE_WORDS or (len(words) > 1 and words[-1] in _CODE_WORDS and words[-2] in _LOCALE_WORDS)


def is_locale(value: str, key: str | None = None, parent: str | None = None) -> bool:
    """Whether a string `value`, the value of `key` inside `parent` (the key of what holds it),
    names a locale (module docstring): a code for the software, never translated."""
    import langcodes

    tag = value.strip()
    if not _TAG_CHARACTERS.fullmatch(tag):
        return False
    words = _words(key)
    regional = ("-" in tag or "_" in tag) and _REGIONAL_TAG.fullmatch(tag) is not None
    under_locale = _names_locale(words) or (bool(words) and words[-1] in _CODE_WORDS and _names_locale(_words(parent)))
    return (regional or under_locale) and bool(langcodes.tag_is_valid(tag.replace("_", "-")))
