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
    """Every document of the fixture corpus in both directions, in corpus order."""
    from fixture.build import load_corpus

    out = []
    for doc in load_corpus():
        sources, targets = tuple(doc["source"]), tuple(doc["target"])
        out.append(DocumentPair(doc["src_lang"], doc["tgt_lang"], sources, targets))
        out.append(DocumentPair(doc["tgt_lang"], doc["src_lang"], targets, sources))
    return out


def corpus_sentences() -> list[tuple[str, str, str, str]]:
    """(source language, target language, sentence, its translation), each source sentence once per
    target language, in corpus order: the pairs the fixture model is trained on."""
    from fixture.build import load_corpus, sentence_pairs

    return sentence_pairs(load_corpus())
