"""OpenDocument (.odt, .odp, .ods), a zip package: content.xml and styles.xml (headers, footers);
text:p and text:h paragraphs, spans and links kept around their words
(translator/documents/mixed.py). Only the paragraphs whose text changed are written again
(ooxml.Part); every other member keeps its bytes.
"""

from __future__ import annotations

from typing import Any

from translator.documents.archive import Archive
from translator.documents.mixed import MixedParagraph
from translator.documents.model import NO_OPTIONS, BadDocument, Document, ReadOptions
from translator.documents.ooxml import Part, parse_xml

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_ODF_WRAPS = frozenset({f"{_TEXT}span", f"{_TEXT}a"})

ODF_TYPES = {
    "odt": "application/vnd.oasis.opendocument.text",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
}


def read_odt(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_odf(data, "odt")


def read_odp(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_odf(data, "odp")


def read_ods(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_odf(data, "ods")


def read_odf(data: bytes, kind: str) -> Document:
    archive = Archive(data, kind)
    if "content.xml" not in archive.names():
        raise BadDocument(f"this zip has no content.xml: it is not an .{kind} document")
    originals: dict[str, bytes] = {n: archive.read(n) for n in ("content.xml", "styles.xml") if n in archive.names()}
    roots = {n: (parse_xml(original, n), original) for n, original in originals.items()}
    paragraphs = []
    for name, (root, _) in roots.items():
        for element in root.iter(f"{_TEXT}p", f"{_TEXT}h"):
            paragraph = MixedParagraph(element, _ODF_WRAPS)
            if paragraph.has_text():
                paragraphs.append((name, paragraph))
    units = [p.unit() for _, p in paragraphs]

    def write(translations: list[str]) -> bytes:
        # Only the paragraphs whose text changed are written again; every other byte of a part, and
        # every other part, as it was (a reviewer's diff shows translations only).
        todo = [(n, p, t) for (n, p), u, t in zip(paragraphs, units, translations, strict=True) if t != u.text]
        changed: dict[str, list[Any]] = {}
        for name, paragraph, _ in todo:
            changed.setdefault(name, []).append(paragraph.element)
        parts = {name: Part(roots[name][1], roots[name][0], elements) for name, elements in changed.items()}
        # Innermost first: a paragraph rebuilds the elements it holds (a frame's paragraphs) from
        # their originals, so that those must hold their translations already.
        for _, paragraph, translation in reversed(todo):
            paragraph.write(translation)
        return archive.write({name: part.write() for name, part in parts.items()})

    return Document(units, write, ODF_TYPES[kind])
