"""Which writing systems a language is written in, and which one a text is written in.

Language detection's first step (translator/text/langdetect.py): a text is only ever said to be in
a language written in the text's own script, so Latin letters are never Arabic and Cyrillic never
Greek, however short the text.

A language's scripts come from the codes and from CLDR, never from a list of ours:
- a code that names its script (NLLB's `ace_Arab`, a client's `zh-Hant`) is written in that one;
- a bare code on a checkpoint that also lists it with a script (NLLB lists `zh`, `zh-Hans` and
  `zh-Hant`) is written in the script the resolver gave it: the likely one (CLDR's likely subtags,
  `zh` is `Hans`) where that variant is listed, else its only listed variant (`acm-Arab`);
- otherwise, CLDR's languageData (language_data's supplementalData.xml): the scripts a language is
  written in where it is official or common (`sr`: Cyrillic and Latin; `pa`: Gurmukhi and Arabic);
  secondary scripts are not counted.

Scripts are compared as writing systems: simplified and traditional Chinese are both Han; Japanese
(`Jpan`) is Han, Hiragana and Katakana, Korean (`Kore`) Hangul and Han. A text's letters are
grouped likewise (Han letters beside kana are Japanese), and its *primary* script is the one with
the most letters, where a Han, kana or Hangul character counts as three letters (one is a syllable
or a word) and a Latin letter as a quarter: non-Latin text quotes Latin names and code
(`LogEntry օբյեկտ`, `ឈ្មោះ python model class`) far more often than Latin text quotes other scripts.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable
from importlib.resources import files
from typing import Any

HAN = "Hani"
# Writing systems made of several Unicode scripts, and the scripts they are written with.
COMPOSITE: dict[str, tuple[str, ...]] = {"Jpan": ("Hira", "Kana"), "Kore": ("Hang",)}
# Script codes that name Han as a whole or one of its forms (Bopomofo annotates Han).
_HAN_FORMS = frozenset({"Hani", "Hans", "Hant", "Hanb", "Bopo"})
# A character of these is a syllable or a word, worth several Latin letters.
_DENSE = frozenset({"Hani", "Hira", "Kana", "Hang", "Bopo"})
DENSE_WEIGHT = 3.0
LATIN_WEIGHT = 0.25
# What a letter of no script of the table is counted as (it rules out every language).
OTHER = "Zzzz"
# M2M100's own spelling for a language whose ISO 639 code is another (Northern Sotho is `nso`).
ISO_CODE = {"ns": "nso"}
_SCRIPT_SUBTAG = re.compile(r"^[A-Z][a-z]{3}$")


@functools.cache
def cldr_scripts() -> dict[str, tuple[str, ...]]:
    """CLDR's primary scripts per language (supplementalData.xml's languageData, as shipped by
    language_data, which langcodes already reads)."""
    path = files("language_data") / "data" / "supplementalData.xml"
    out: dict[str, tuple[str, ...]] = {}
    with path.open("rb") as stream:
        for element in ElementTree.parse(stream).iter("language"):
            scripts = element.get("scripts")
            if scripts and element.get("alt") != "secondary":
                out[str(element.get("type"))] = tuple(scripts.split())
    return out


def _groups(script: str) -> frozenset[str]:
    """The writing-system groups a (CLDR) script code is compared as."""
    if script in _HAN_FORMS:
        return frozenset({HAN})
    if script in COMPOSITE:
        return frozenset({script, HAN})  # Japanese and Korean text may be Han letters only
    for system, parts in COMPOSITE.items():
        if script in parts:  # NLLB's `kor_Hang`: Korean in Hangul, a text counted as Korean
            return frozenset({system})
    return frozenset({script})


def _parse(code: str) -> Any:
    import langcodes

    try:
        return langcodes.Language.get(code.replace("_", "-"))
    except (ValueError, LookupError):  # not a tag langcodes reads: no script known from it
        return None


def code_scripts(code: str, languages: Iterable[str] = ()) -> frozenset[str]:
    """The writing systems `code` is written in, among `languages` (the checkpoint's accepted codes);
    empty where none is known."""
    tag = _parse(code)
    if tag is not None and tag.script:
        return _groups(tag.script)
    listed = {other.split("-", 1)[1] for other in languages if other.startswith(f"{code}-")}
    listed = {script for script in listed if _SCRIPT_SUBTAG.match(script)}
    if listed:
        likely = _parse(code).maximize().script if tag is not None else None
        if likely in listed:
            return _groups(likely)
        if len(listed) == 1:
            return _groups(listed.pop())
    iso = ISO_CODE.get(code, tag.language if tag is not None else code)
    scripts = cldr_scripts().get(iso)
    if not scripts and tag is not None:
        likely = _parse(iso).maximize().script
        scripts = (likely,) if likely else ()
    return frozenset().union(*(_groups(script) for script in scripts)) if scripts else frozenset()


class ScriptTable:
    """The scripts of one checkpoint's languages, and the languages a text may be in by its script."""

    def __init__(self, languages: Iterable[str]) -> None:
        accepted = frozenset(languages)
        self.scripts: dict[str, frozenset[str]] = {code: code_scripts(code, accepted) for code in accepted}
        known = set().union(*self.scripts.values()) - set(COMPOSITE) | {HAN, "Hira", "Kana", "Hang"}
        # Named groups in a fixed order: the first script that matches a letter names it.
        order = sorted(known, key=lambda script: (script != "Latn", script))
        self._pattern = _script_pattern(tuple(order))
        self._written: dict[str, frozenset[str]] = {}

    def letters(self, text: str) -> dict[str, float]:
        """The weight of `text`'s letters per writing system (see the module docstring)."""
        import regex

        counts: dict[str, float] = {}
        pattern: regex.Pattern[str] = self._pattern
        for match in pattern.finditer(text):
            script = str(match.lastgroup)
            script = HAN if script == "Bopo" else script
            weight = DENSE_WEIGHT if script in _DENSE else 1.0
            counts[script] = counts.get(script, 0.0) + weight * (match.end() - match.start())
        for system, parts in COMPOSITE.items():
            if any(counts.get(part) for part in parts):
                counts[system] = sum(counts.pop(part, 0.0) for part in parts) + counts.pop(HAN, 0.0)
        for part in ("Hira", "Kana", "Hang"):  # only ever counted inside their writing system
            counts.pop(part, None)
        return counts

    def primary(self, text: str) -> str | None:
        """The script most of `text`'s letters are in (Latin letters discounted); None without letters."""
        counts = self.letters(text)
        if not counts:
            return None
        return max(counts, key=lambda script: counts[script] * (LATIN_WEIGHT if script == "Latn" else 1.0))

    def written_in(self, script: str | None) -> frozenset[str]:
        """The languages of the table written in `script`."""
        if script is None:
            return frozenset()
        found = self._written.get(script)
        if found is None:
            found = self._written.setdefault(
                script, frozenset(code for code, scripts in self.scripts.items() if script in scripts)
            )
        return found

    def across(self, code: str, text: str) -> bool:
        """Whether saying `text` is in `code` would cross scripts: none of the text's letters is in a
        script the language is written in."""
        return not set(self.letters(text)) & self.scripts.get(code, frozenset())


@functools.cache
def _script_pattern(order: tuple[str, ...]) -> Any:
    import regex

    groups = [rf"(?P<{script}>\p{{sc={script}}}+)" for script in order]
    # A letter of no listed script, one at a time (a run would swallow the known letters after it).
    return regex.compile("|".join([*groups, rf"(?P<{OTHER}>\p{{L}})"]))


@functools.cache
def table_for(languages: frozenset[str]) -> ScriptTable:
    return ScriptTable(languages)
