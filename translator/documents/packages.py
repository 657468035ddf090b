"""Zip packages besides Word and PowerPoint: OpenDocument (.odt, .odp, .ods), Excel (.xlsx) and
EPUB. Their text parts are parsed and rewritten where their text changed, only the paragraphs (a
spreadsheet's strings) whose text changed written again (ooxml.Part); every other member keeps its
bytes.

- ODF: content.xml and styles.xml (headers, footers); text:p and text:h paragraphs, spans and links
  kept around their words (translator/documents/mixed.py).
- XLSX: the shared strings (xl/sharedStrings.xml), where Excel keeps cells' text, and the inline
  strings of the worksheets (`<c t="inlineStr"><is>`, which many exporters write instead); rich
  text runs as Word's (translator/documents/runs.py), a line break in a cell's rich text a `<br>`
  of its unit (it is one in the cell, not white space as in HTML). Formulas and numbers are not
  text and stay; so do phonetic runs (`rPh`).
- EPUB: its XHTML chapters through the HTML path (translator/documents/html.py), whole: those its
  package document's manifest lists as XHTML (whatever their names: `main0.xml`), and any `.xhtml`,
  `.html` or `.htm` member.
"""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from typing import Any

from translator.documents.archive import Archive
from translator.documents.mixed import MixedParagraph
from translator.documents.model import NO_OPTIONS, BadDocument, Document, ReadOptions, Unit
from translator.documents.ooxml import Part, parse_xml
from translator.documents.runs import Names, Stretch, stretches
from translator.text.markup import TEXT, html_tokens

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_ODF_WRAPS = frozenset({f"{_TEXT}span", f"{_TEXT}a"})
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
SHARED = Names(f"{_S}si", f"{_S}r", f"{_S}rPr", f"{_S}t")
INLINE = Names(f"{_S}is", f"{_S}r", f"{_S}rPr", f"{_S}t")
_WORKSHEET = re.compile(r"^xl/worksheets/[^/]+\.xml$")

ODF_TYPES = {
    "odt": "application/vnd.oasis.opendocument.text",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
}
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def read_odt(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_odf(data, "odt")


def read_odp(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_odf(data, "odp")


def read_ods(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_odf(data, "ods")


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


def read_xlsx(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    archive = Archive(data, "xlsx")
    if not any(n.startswith("xl/") for n in archive.names()):
        raise BadDocument("file: this zip has no xl/ folder: it is not an .xlsx workbook")
    parts: dict[str, tuple[bytes, Any, Names]] = {}
    for name in archive.names():
        if name == "xl/sharedStrings.xml":
            parts[name] = (archive.read(name), None, SHARED)
        elif _WORKSHEET.match(name):
            original = archive.read(name)
            # A sheet of numbers and shared strings only (most are) is not parsed at all.
            if b"inlineStr" in original:
                parts[name] = (original, None, INLINE)
    # (part, the element written again: a string's <t> or a rich string's <si>/<is>, its stretch)
    strings: list[tuple[str, Any, Stretch | None]] = []
    for name, (original, _, names) in parts.items():
        root = parse_xml(original, name)
        parts[name] = (original, root, names)
        strings += [(name, t, None) for p in root.iter(names.paragraph) for t in p.findall(names.text)]
        strings += [(name, stretch.paragraph, stretch) for stretch in stretches(root, names)]
    strings = [(n, e, s) for n, e, s in strings if s is not None or (e.text or "").strip()]
    units = [Unit(element.text or "") if stretch is None else _cell_unit(stretch) for _, element, stretch in strings]

    def write(translations: list[str]) -> bytes:
        changed = [
            (name, element, stretch, unit, translation)
            for (name, element, stretch), unit, translation in zip(strings, units, translations, strict=True)
            if translation != unit.text
        ]
        if not changed:
            return data
        # Only the strings whose text changed are written again, in the parts that hold them.
        elements: dict[str, list[Any]] = {}
        for name, element, _, _, _ in changed:
            elements.setdefault(name, []).append(element)
        written = {name: Part(parts[name][0], parts[name][1], found) for name, found in elements.items()}
        for _, element, stretch, unit, translation in changed:
            if stretch is None:
                element.text = translation
            else:
                stretch.write(translation.replace("<br>", "\n") if unit.fmt == "html" else translation, unit.fmt)
        return archive.write({name: part.write() for name, part in written.items()})

    return Document(units, write, XLSX_TYPE)


def _cell_unit(stretch: Stretch) -> Unit:
    """A rich string's unit: a line break in it is the cell's, a `<br>` (HTML would read it as a space)."""
    unit = stretch.unit()
    return Unit(unit.text.replace("\n", "<br>"), "html") if unit.fmt == "html" else unit


def read_epub(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    archive = Archive(data, "epub")
    if "META-INF/container.xml" not in archive.names():
        raise BadDocument("file: this zip has no META-INF/container.xml: it is not an EPUB book")
    listed = _manifest_chapters(archive)
    chapters = [n for n in archive.names() if n in listed or n.lower().endswith((".xhtml", ".html", ".htm"))]
    sources: dict[str, str] = {}
    for chapter in chapters:
        try:
            sources[chapter] = archive.read(chapter).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadDocument(f"file: chapter {chapter!r} is not UTF-8 ({exc.reason})") from exc
    # One unit per chapter's text block run, within the per-record limit (html.py's fragments).
    from translator.documents.html import fragments_of

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


_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html"})


def _manifest_chapters(archive: Archive) -> set[str]:
    """The members the package documents (META-INF/container.xml's rootfiles) list as XHTML; none
    where they cannot be read (the chapters are then those named as HTML)."""
    names = set(archive.names())
    chapters: set[str] = set()
    try:
        container = parse_xml(archive.read("META-INF/container.xml"), "META-INF/container.xml")
        for rootfile in container.iter(f"{_CONTAINER}rootfile"):
            package = rootfile.get("full-path") or ""
            if package not in names:
                continue
            base = posixpath.dirname(package)
            for item in parse_xml(archive.read(package), package).iter(f"{_OPF}item"):
                if item.get("media-type") in _CHAPTER_TYPES:
                    href = urllib.parse.unquote((item.get("href") or "").partition("#")[0])
                    chapters.add(posixpath.normpath(posixpath.join(base, href)))
    except BadDocument:
        return set()
    return chapters & names


def _has_text(fragment: str) -> bool:
    return any(t.kind == TEXT and t.text.strip() for t in html_tokens(fragment))
