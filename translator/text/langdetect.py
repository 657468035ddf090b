"""Which language a record is in, for `"fromLang": "auto"`.

The detector is py3langid 0.4 (a naive Bayes model over byte n-grams, 142 labels; the model ships
inside its 4.6 MB wheel, nothing is downloaded). It is loaded on the first detection, not at
import: an API worker that never sees `auto` never pays for it (about 1.2 s and 75 MiB).

A text's language is *determined* in three steps, each of which may decline:

1. fewer than two words (numbers, URLs, a single word) cannot be told apart reliably;
2. over all of the detector's labels (mapped to M2M100 codes, see `DETECTOR_TO_M2M100`), a label
   that is not a language of the loaded checkpoint (Esperanto, Latin, Kinyarwanda, ...) with at
   least `MIN_UNSUPPORTED` of the probability is reported as such, rather than silently
   translated from its nearest supported relative;
3. restricted to the checkpoint's languages (probabilities renormalised), the best must have at
   least `MIN_CONFIDENCE`.

A text that is not determined still has a *guess*, the best of the checkpoint's languages, for a
caller that must translate it anyway (translator/api/pipeline.py: a greeting in a request of
German records is German; alone, it is the detector's guess). Only text without letters has none.

The thresholds were chosen on the fixture corpus and its 1-3 word prefixes (docs/detection.md,
and tests/unit/test_langdetect.py, which prints the table).
"""

from __future__ import annotations

import functools
import re
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from translator.contract.language_codes import resolve
from translator.text.segment import has_letters

AUTO = "auto"
# Answered as `detectedLang` for a record without letters, and for one whose language was not
# determined and which was translated from `fallbackLang`: BCP 47's code for "undetermined".
UNDETERMINED = "und"

# Detector labels whose M2M100 code differs. M2M100 writes Northern Sotho `ns` (ISO 639-3 `nso`),
# has one Norwegian `no` (the detector also knows Nynorsk `nn`) and one Chinese `zh` (Cantonese
# `yue` and Wu `wuu` are written with the same characters), Fula `ff` (the detector knows Nigerian
# Fulfulde `fuv`), and one Arabic `ar` (Egyptian `arz` and Moroccan `ary` are Arabic dialects).
# Not mapped: Serbian in Latin script folds into `sr` inside the detector already; Southern Uzbek
# `uzs` (Arabic script) is not M2M100's Latin-script `uz`; Nigerian Pidgin `pcm` is not English.
DETECTOR_TO_M2M100: dict[str, str] = {
    "nso": "ns",
    "nn": "no",
    "yue": "zh",
    "wuu": "zh",
    "fuv": "ff",
    "arz": "ar",
    "ary": "ar",
}
# py3langid's labels (tests/unit/test_langdetect.py checks them against its model), here so that
# which of a checkpoint's languages `auto` can name is known without loading the detector.
DETECTOR_LABELS: frozenset[str] = frozenset(
    "ace af am an ar ary arz as az ba bcl be bg bn br bs ca crh cs cy da de dz el en eo es et eu ext fa "
    "fi fo fr fuv fy ga gcf gcr gd gl gom grc gu gug guw ha hbo he hi hr ht hu hy id ig is it ja jv ka "
    "kab kik kk km kn ko ku ky la lb lg lij ln lo lt ltg lv mg mk ml mn mr ms mt my ne nl nn no nso oc "
    "om or pa pcm pl ps pt qu ro ru rw sa sdh se si sk sl sn so sq sr st sv sw ta te tg th tk tl tr tt "
    "ug uk ur uz uzs vec vi vo wa wuu xh yo yue zh zu zxx".split()
)
# The detector's label for text without language (digits, symbols, code).
_NO_LANGUAGE = "zxx"

MIN_WORDS = 2
MIN_CONFIDENCE = 0.35
MIN_UNSUPPORTED = 0.5
# A record's language shows in its beginning; scoring costs ~0.25 ms per 1,000 characters
# (a pure-Python walk over the bytes), so a 20,000-character record is not read whole.
DETECT_CHARS = 1000

# Letters of scripts written without spaces between words: a run of them holds several words,
# counted as one per two characters, rounded up ("人生" is one word, "大家好" two).
_UNSPACED_LETTER = re.compile(
    "[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0003134f]"
)


def checkpoint_code(label: str, languages: frozenset[str]) -> str:
    """The checkpoint's code for a detector label: M2M100's spelling where it has it, else the one
    resolver's (NLLB-200 writes Norwegian Bokmål `nb` where M2M100 has `no`); the label itself where
    the checkpoint lacks the language (so the detection says which it was)."""
    mapped = DETECTOR_TO_M2M100.get(label, label)
    if mapped not in languages:
        mapped = resolve(label, languages) or resolve(mapped, languages) or mapped
    return mapped


@functools.cache
def detectable(languages: frozenset[str]) -> frozenset[str]:
    """Which of `languages` (a checkpoint's codes) `auto` can name: 91 of M2M100's 100; the other
    nine (ast, ceb, ilo, sd, ss, su, tn, wo, yi) need an explicit `fromLang`."""
    return frozenset(checkpoint_code(label, languages) for label in DETECTOR_LABELS) & languages


@dataclass(frozen=True)
class Detection:
    """The M2M100 code of a text's language, or `None` with the reason it was not determined."""

    language: str | None
    confidence: float
    reason: str | None = None
    # The checkpoint's most likely language and its share of their probability, also when
    # `language` is None; None only for text without letters.
    guess: str | None = None
    guess_confidence: float = 0.0
    # Every checkpoint language's share of the probability, best first (the guess is the first).
    ranked: tuple[tuple[str, float], ...] = ()

    def share(self, language: str) -> float:
        """`language`'s share of the checkpoint languages' probability for this text."""
        return dict(self.ranked).get(language, 0.0)


class LanguageDetector:
    """Detects languages among `languages` (the loaded checkpoint's codes). Thread-safe."""

    def __init__(self, languages: Iterable[str]) -> None:
        self.languages = frozenset(languages)
        self._identifier = _identifier()
        self._codes: dict[str, str] = {}  # detector label -> the checkpoint's code for it

    def _code(self, label: str) -> str:
        code = self._codes.get(label)
        if code is None:
            code = self._codes.setdefault(label, checkpoint_code(label, self.languages))
        return code

    def detect(self, text: str) -> Detection:
        sample = _sample(text)
        if not has_letters(sample):
            return Detection(None, 0.0, "no letters in it")
        scores = self._scores(sample)
        ranked = tuple(self._supported(scores))
        guess, guess_confidence = ranked[0] if ranked else (None, 0.0)

        def undetermined(confidence: float, reason: str) -> Detection:
            return Detection(None, confidence, reason, guess, guess_confidence, ranked)

        if _word_count(sample) < MIN_WORDS:
            return undetermined(0.0, "too short to tell its language (fewer than 2 words)")
        overall = max(scores, key=scores.__getitem__)
        if overall not in self.languages and scores[overall] >= MIN_UNSUPPORTED:
            if overall == _NO_LANGUAGE:
                return undetermined(scores[overall], "no language found in it")
            return undetermined(scores[overall], f"detected as {overall!r}, which the loaded model does not translate")
        if guess is None:
            return undetermined(0.0, "none of the loaded model's languages can be detected")
        if guess_confidence < MIN_CONFIDENCE:
            return undetermined(
                guess_confidence,
                f"language not determined with confidence (best guess {guess!r} at {guess_confidence:.2f}, "
                f"below {MIN_CONFIDENCE})",
            )
        return Detection(guess, guess_confidence, None, guess, guess_confidence, ranked)

    def rank(self, text: str) -> list[tuple[str, float]]:
        """The checkpoint's languages by probability for `text` (renormalised over them), best
        first; empty for text without letters."""
        sample = _sample(text)
        if not has_letters(sample):
            return []
        return self._supported(self._scores(sample))

    def _scores(self, sample: str) -> dict[str, float]:
        scores: dict[str, float] = defaultdict(float)
        for label, probability in self._identifier.rank(sample):
            scores[self._code(label)] += probability
        return scores

    def _supported(self, scores: dict[str, float]) -> list[tuple[str, float]]:
        supported = {code: p for code, p in scores.items() if code in self.languages}
        total = sum(supported.values())
        if total <= 0.0:
            return []
        return sorted(((code, p / total) for code, p in supported.items()), key=lambda item: -item[1])


_LOCK = threading.Lock()
_IDENTIFIER: Any = None


def _identifier() -> Any:
    """py3langid's identifier with probabilities, loaded once per process on first use."""
    global _IDENTIFIER
    with _LOCK:
        if _IDENTIFIER is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _IDENTIFIER


_DETECTORS: dict[frozenset[str], LanguageDetector] = {}


def detector_for(languages: Iterable[str]) -> LanguageDetector:
    """The detector for one set of languages (a worker serves one checkpoint: one detector)."""
    key = frozenset(languages)
    detector = _DETECTORS.get(key)
    if detector is None:
        detector = _DETECTORS.setdefault(key, LanguageDetector(key))
    return detector


def _sample(text: str) -> str:
    """What is scored: DETECT_CHARS from the first letter (a record may open with a table of numbers)."""
    first = next((i for i, char in enumerate(text) if char.isalpha()), len(text))
    return text[first : first + DETECT_CHARS]


def _word_count(text: str) -> int:
    words = 0
    for token in text.split():
        unspaced = len(_UNSPACED_LETTER.findall(token))
        if unspaced:
            words += (unspaced + 1) // 2
        elif any(char.isalpha() for char in token):
            words += 1
    return words
