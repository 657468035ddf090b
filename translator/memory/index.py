"""A memory's segments as a worker matches them: exact, auto-substituted and fuzzy (#51).

- **Exact** (white space aside): one dictionary lookup by the text's key (translator/memory/
  segments.py). This is the path every request that names a memory takes, so it costs what a dict
  lookup costs, whatever the memory's size (the benchmark measures 1,000,000 segments).
- **Auto-substituted**: a text whose skeleton (numbers, placeholders, inline tags stood in) is a
  stored source's, with variables of the same kinds in the same places: the stored translation with
  the text's variables put where the source's stood. Also a lookup by skeleton.
- **Fuzzy**, only when asked (a threshold below 100): sources that share the text's rarest words
  (and word beginnings, so that `Cancel` finds `Cancelled`) are the candidates, at most
  `CANDIDATES` of them, scored by rapidfuzz's normalised Indel similarity (`fuzz.ratio`, 0-100,
  the Levenshtein-family ratio CAT tools show). Scanning every source is 8-14 ms for 100,000 on
  the machines here; the candidates bring it under the issue's 5 ms (bench/results/memory.md). The
  word index is built on the first fuzzy lookup, not before: a memory used for exact matches only
  never pays for it.

Segments are added in the order they were stored; a later segment of the same source and target
language replaces an earlier one (a correction learnt from a job wins over last year's import).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from translator.memory.model import Segment
from translator.memory.segments import Template, Variables, key, same_kinds, template, variables

# Candidates scored a fuzzy lookup, and the query's words (rarest first) that choose them.
CANDIDATES = 64
QUERY_WORDS = 12
# Sources counted a query at most (but the rarest word's whole list): the search's time bound.
POSTINGS_BUDGET = 6_000
# Quick test before the variables' three patterns: most sentences have none of these characters.
_MAY_VARY = re.compile(r"[\d<%{$@]|www\.|://")
_WORD = re.compile(r"\w+")
# A word beginning indexed beside the word: a stem's length for the languages CAT tools see most.
_PREFIX = 4


def base_language(code: str) -> str:
    """`de-DE`, `DE`, `de_AT` -> `de`: a memory's codes as files write them, compared by language."""
    return re.split(r"[-_@.]", code.strip(), maxsplit=1)[0].lower()


@dataclass(frozen=True)
class Match:
    """`kind`: exact, substituted or fuzzy; `score`: 100 for the first two, the similarity of the
    sources for a fuzzy one; `source`, `target`: the stored segment; `text`: what the record
    becomes (the target, or the target with the request's variables) for exact and substituted."""

    kind: str
    score: float
    source: str
    target: str
    text: str


@dataclass(slots=True)  # a million of them: no __dict__ each
class _Stored:
    source: str
    target: str
    variables: Variables | None
    template: Template | None


class _Language:
    """One target language's segments."""

    def __init__(self) -> None:
        self.by_key: dict[str, _Stored] = {}
        self.by_skeleton: dict[str, dict[str, _Stored]] = {}
        self.fuzzy: _Words | None = None

    def add(self, source: str, target: str) -> None:
        source_key = key(source)
        if not source_key:
            return
        found = variables(source_key) if _MAY_VARY.search(source_key) else None
        shape = template(found, target) if found is not None else None
        stored = _Stored(source, target, found, shape)
        previous = self.by_key.get(source_key)
        if previous is not None and previous.variables is not None:
            self.by_skeleton.get(previous.variables.skeleton, {}).pop(source_key, None)
        self.by_key[source_key] = stored
        if found is not None and shape is not None:
            self.by_skeleton.setdefault(found.skeleton, {})[source_key] = stored
        self.fuzzy = None  # built anew on the next fuzzy lookup


class MemoryIndex:
    def __init__(self, source_lang: str) -> None:
        self.source_lang = base_language(source_lang)
        self._languages: dict[str, _Language] = {}
        self._lock = threading.Lock()  # the fuzzy index is built by one thread at a time
        self.segments = 0

    def add(self, segments: Iterable[Segment]) -> None:
        """Run in a thread while requests look up on the event loop: lookups read dicts only through
        single operations (atomic under the interpreter lock) and copies, and the fuzzy index is built
        under the same lock as additions, never from a dict being changed."""
        with self._lock:
            for segment in segments:
                language = self._languages.setdefault(base_language(segment.target_lang), _Language())
                language.add(segment.source, segment.target)
                self.segments += 1

    def target_languages(self) -> list[str]:
        return sorted(self._languages)

    def lookup(self, text: str, target_lang: str) -> Match | None:
        """The exact or auto-substituted match of `text` into `target_lang`, if any."""
        language = self._languages.get(base_language(target_lang))
        if language is None:
            return None
        text_key = key(text)
        stored = language.by_key.get(text_key)
        if stored is not None:
            return Match("exact", 100.0, stored.source, stored.target, _outer_space(text, stored.target))
        if not language.by_skeleton or not _MAY_VARY.search(text_key):
            return None
        asked = variables(text_key)
        if asked is None:
            return None
        for candidate in list(language.by_skeleton.get(asked.skeleton, {}).values()):
            assert candidate.variables is not None and candidate.template is not None
            if same_kinds(candidate.variables.values, asked.values):
                filled = candidate.template.fill(asked.values)
                return Match("substituted", 100.0, candidate.source, candidate.target, _outer_space(text, filled))
        return None

    def fuzzy(self, text: str, target_lang: str, threshold: float, limit: int = 3) -> list[Match]:
        """Stored segments whose source is at least `threshold` similar to `text`, best first."""
        language = self._languages.get(base_language(target_lang))
        if language is None:
            return []
        words = language.fuzzy
        if words is None:
            with self._lock:
                if language.fuzzy is None:
                    language.fuzzy = _Words(language.by_key)
                words = language.fuzzy
        return words.search(key(text), threshold, limit)


def _outer_space(text: str, target: str) -> str:
    """The stored translation as written, with the record's leading and trailing white space where the
    translation has none of its own (a record `"Hello.\\n"` stays a line)."""
    if target != target.strip():
        return target
    stripped = text.strip()
    if not stripped:
        return target
    start = text.index(stripped[0])
    return text[:start] + target + text[start + len(stripped) :]


class _Words:
    """The word index of one language's sources: each word and word beginning to the sources holding
    it."""

    def __init__(self, by_key: dict[str, _Stored]) -> None:
        items = list(by_key.items())
        self.keys = [source_key for source_key, _ in items]
        self.stored = [stored for _, stored in items]
        postings: dict[str, list[int]] = {}
        for index, source_key in enumerate(self.keys):
            for token in _tokens(source_key):
                postings.setdefault(token, []).append(index)
        self.postings = postings

    def search(self, text_key: str, threshold: float, limit: int) -> list[Match]:
        tokens = [t for t in _tokens(text_key) if t in self.postings]
        if not tokens:
            return []
        tokens.sort(key=lambda token: len(self.postings[token]))
        counts: Counter[int] = Counter()
        counted = 0
        for token in tokens[:QUERY_WORDS]:
            postings = self.postings[token]
            # Rarest first; a frequent word ("the") adds thousands of sources and little evidence:
            # past the budget the words already counted choose the candidates.
            if counted and counted + len(postings) > POSTINGS_BUDGET:
                break
            counts.update(postings)
            counted += len(postings)
        chosen = [index for index, _ in counts.most_common(CANDIDATES)]
        found = process.extract(
            text_key,
            [self.keys[index] for index in chosen],
            scorer=fuzz.ratio,
            score_cutoff=threshold,
            limit=limit,
        )
        out = []
        for _, score, at in found:
            stored = self.stored[chosen[at]]
            out.append(Match("fuzzy", round(float(score), 1), stored.source, stored.target, stored.target))
        return out


def _tokens(text_key: str) -> set[str]:
    words = {word.lower() for word in _WORD.findall(text_key)}
    return words | {word[:_PREFIX] + "…" for word in words if len(word) > _PREFIX}
