"""The fixture corpus as language pairs and documents, for loads whose every answer is known."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DocumentPair:
    """One fixture-corpus document in one direction: aligned sentence lists."""

    source_lang: str
    target_lang: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]

    @property
    def pair(self) -> tuple[str, str]:
        return self.source_lang, self.target_lang


def corpus_documents() -> list[DocumentPair]:
    """Every document of the fixture corpus in both directions, in corpus order (the one place the
    corpus is expanded into pairs)."""
    from fixture.build import load_corpus

    out = []
    for doc in load_corpus():
        sources, targets = tuple(doc["source"]), tuple(doc["target"])
        out.append(DocumentPair(doc["src_lang"], doc["tgt_lang"], sources, targets))
        out.append(DocumentPair(doc["tgt_lang"], doc["src_lang"], targets, sources))
    return out


def corpus_sentences() -> list[tuple[str, str, str, str]]:
    """(source language, target language, sentence, its translation), each source sentence once per
    target language, in corpus order."""
    out: dict[tuple[str, str, str], str] = {}
    for doc in corpus_documents():
        for source, target in zip(doc.sources, doc.targets, strict=True):
            out.setdefault((doc.source_lang, doc.target_lang, source), target)
    return [(*key, target) for key, target in out.items()]
