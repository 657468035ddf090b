"""A document through its reader and writer as the service would put it, with the model replaced by
the corpus: each corpus sentence (en->fr) becomes its translation, everything else stays; and the
changed lines between two texts, to say exactly what a writer touched."""

from __future__ import annotations

import difflib
import io
import zipfile

from harness.corpus import corpus_sentences
from translator.documents.formats import read_document

PAIRS = [(text, translation) for src, tgt, text, translation in corpus_sentences() if (src, tgt) == ("en", "fr")]


(A, TA), (B, TB), (C, TC), *_ = PAIRS


def translate(name: str, data: bytes, target: str = "fr") -> bytes:
    """The file as the service would write it if the model translated each corpus sentence exactly."""
    document = read_document(name, data, target)
    out = []
    for unit in document.units:
        text = unit.text
        for source, translation in PAIRS:
            text = text.replace(source, translation)
        out.append(text)
    return document.write(out)


def identity(name: str, data: bytes) -> bytes:
    document = read_document(name, data, "fr")
    return document.write([unit.text for unit in document.units])


def members(data: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return {name: archive.read(name) for name in archive.namelist()}


def hunks(before: str, after: str) -> list[tuple[list[str], list[str]]]:
    old, new = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [(old[i1:i2], new[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
