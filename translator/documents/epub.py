"""EPUB, a zip package: its XHTML chapters through the HTML path (translator/documents/html.py),
whole: those its package document's manifest lists as XHTML (whatever their names: `main0.xml`),
and any `.xhtml`, `.html` or `.htm` member. Only the chapters whose text changed are written again.
"""

from __future__ import annotations

import posixpath
import urllib.parse

from translator.documents.archive import Archive
from translator.documents.model import NO_OPTIONS, BadDocument, Document, ReadOptions, Unit
from translator.documents.ooxml import parse_xml
from translator.text.markup import TEXT, html_tokens


def read_epub(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    archive = Archive(data, "epub")
    if "META-INF/container.xml" not in archive.names():
        raise BadDocument("this zip has no META-INF/container.xml: it is not an EPUB book")
    listed = _manifest_chapters(archive)
    chapters = [n for n in archive.names() if n in listed or n.lower().endswith((".xhtml", ".html", ".htm"))]
    sources: dict[str, str] = {}
    for chapter in chapters:
        try:
            sources[chapter] = archive.read(chapter).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadDocument(f"chapter {chapter!r} is not UTF-8 ({exc.reason})") from exc
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
