"""Zip packages besides Word and PowerPoint: OpenDocument (.odt, .odp, .ods), Excel (.xlsx) and
EPUB. Their text parts are parsed and rewritten where their text changed, only the paragraphs (a
spreadsheet's strings) whose text changed written again (ooxml.Part); every other member keeps its
bytes.

- ODF: content.xml and styles.xml (headers, footers); text:p and text:h paragraphs, spans and links
  kept around their words (translator/documents/mixed.py).
- XLSX: the shared strings (xl/sharedStrings.xml), where Excel keeps cells' text; rich text runs
  as Word's (translator/documents/runs.py). Formulas and numbers are not text and stay.
- EPUB: its XHTML chapters through the HTML path (translator/documents/web.py), whole.
"""

from __future__ import annotations

from typing import Any

from translator.documents.archive import Archive
from translator.documents.mixed import MixedParagraph
from translator.documents.model import BadDocument, Document, Unit
from translator.documents.ooxml import Part, parse_xml
from translator.documents.runs import Names, Stretch, stretches
from translator.text.markup import TEXT, html_tokens

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_ODF_WRAPS = frozenset({f"{_TEXT}span", f"{_TEXT}a"})
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
SHARED = Names(f"{_S}si", f"{_S}r", f"{_S}rPr", f"{_S}t")

ODF_TYPES = {
    "odt": "application/vnd.oasis.opendocument.text",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
}
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def read_odf(data: bytes, kind: str) -> Document:
    archive = Archive(data, kind)
    if "content.xml" not in archive.names():
        raise BadDocument(f"file: this zip has no content.xml: it is not an .{kind} document")
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


def read_xlsx(data: bytes) -> Document:
    archive = Archive(data, "xlsx")
    name = "xl/sharedStrings.xml"
    if not any(n.startswith("xl/") for n in archive.names()):
        raise BadDocument("file: this zip has no xl/ folder: it is not an .xlsx workbook")
    if name not in archive.names():
        return Document([], lambda _: data, XLSX_TYPE)
    original = archive.read(name)
    root = parse_xml(original, name)
    plain = [t for si in root.iter(f"{_S}si") for t in si.findall(f"{_S}t") if (t.text or "").strip()]
    rich = stretches(root, SHARED)
    units = [Unit(t.text or "") for t in plain] + [s.unit() for s in rich]

    def write(translations: list[str]) -> bytes:
        if translations == [unit.text for unit in units]:
            return data
        # A string's <t>, a rich string's <si>: only those whose text changed are written again.
        strings: list[tuple[Any, Stretch | None]] = [(t, None) for t in plain] + [(s.paragraph, s) for s in rich]
        changed = [
            (element, stretch, unit, translation)
            for (element, stretch), unit, translation in zip(strings, units, translations, strict=True)
            if translation != unit.text
        ]
        part = Part(original, root, [element for element, _, _, _ in changed])
        for element, stretch, unit, translation in changed:
            if stretch is None:
                element.text = translation
            else:
                stretch.write(translation, unit.fmt)
        return archive.write({name: part.write()})

    return Document(units, write, XLSX_TYPE)


def read_epub(data: bytes) -> Document:
    archive = Archive(data, "epub")
    if "META-INF/container.xml" not in archive.names():
        raise BadDocument("file: this zip has no META-INF/container.xml: it is not an EPUB book")
    chapters = [n for n in archive.names() if n.lower().endswith((".xhtml", ".html", ".htm"))]
    sources: dict[str, str] = {}
    for chapter in chapters:
        try:
            sources[chapter] = archive.read(chapter).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadDocument(f"file: chapter {chapter!r} is not UTF-8 ({exc.reason})") from exc
    # One unit per chapter's text block run, within the per-record limit (web.py's fragments).
    from translator.documents.web import fragments_of

    pieces = {chapter: fragments_of(source) for chapter, source in sources.items()}
    slots = [(c, i) for c, fragments in pieces.items() for i, f in enumerate(fragments) if _has_text(f)]
    units = [Unit(pieces[c][i], "html") for c, i in slots]

    def write(translations: list[str]) -> bytes:
        out = {c: list(f) for c, f in pieces.items()}
        changed: set[str] = set()
        for (chapter, index), translation in zip(slots, translations, strict=True):
            if translation != out[chapter][index]:
                out[chapter][index] = translation
                changed.add(chapter)
        return archive.write({c: "".join(out[c]).encode("utf-8") for c in changed})

    return Document(units, write, "application/epub+zip")


def _has_text(fragment: str) -> bool:
    return any(t.kind == TEXT and t.text.strip() for t in html_tokens(fragment))
