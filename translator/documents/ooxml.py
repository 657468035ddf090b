"""Office Open XML: Word (.docx) and PowerPoint (.pptx), read directly from their XML parts.

Only the parts holding text are parsed and rewritten (the body, headers, footers, notes; the
slides and their notes); every other zip member, and a part whose text the translation left as it
was, comes back with the same bytes; in a part that changed, only the paragraphs whose text
changed are written again (Part). python-docx and python-pptx were not used: they reach text
through their object model and save the whole package again, where this needs only the runs
(translator/documents/runs.py).
"""

from __future__ import annotations

import codecs
import re
from typing import Any

from translator.documents import xmltext
from translator.documents.archive import Archive
from translator.documents.model import NO_OPTIONS, BadDocument, Document, ReadOptions
from translator.documents.runs import Names, stretches

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"


def _word(w: str) -> Names:
    return Names(
        f"{w}p",
        f"{w}r",
        f"{w}rPr",
        f"{w}t",
        frozenset({f"{w}proofErr"}),
        f"{w}hyperlink",
        frozenset({f"{w}lastRenderedPageBreak"}),
    )


WORD = _word(_W)
# Strict Office Open XML (ISO/IEC 29500 Strict, Word's "Strict Open XML Document"): the same
# vocabulary in other namespaces. Read as Transitional was, it held no paragraph (#49: mammoth's
# strict-format.docx said "nothing to translate").
WORD_STRICT = _word("{http://purl.oclc.org/ooxml/wordprocessingml/main}")
_AS = "{http://purl.oclc.org/ooxml/drawingml/main}"
DRAWING = Names(f"{_A}p", f"{_A}r", f"{_A}rPr", f"{_A}t")
DRAWING_STRICT = Names(f"{_AS}p", f"{_AS}r", f"{_AS}rPr", f"{_AS}t")
_STRICT = {WORD: WORD_STRICT, DRAWING: DRAWING_STRICT}

_WORD_PARTS = re.compile(r"^word/(document|header\d*|footer\d*|footnotes|endnotes)\.xml$")
_SLIDE_PARTS = re.compile(r"^ppt/(slides/slide\d+|notesSlides/notesSlide\d+)\.xml$")

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX_TYPE = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


def parse_xml(data: bytes, name: str) -> Any:
    from lxml import etree

    # No entities resolved, no network, no huge trees: the file is untrusted input. CDATA sections
    # stay CDATA where nothing is written (XLIFF tools use them).
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, huge_tree=False, remove_blank_text=False, strip_cdata=False
    )
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise BadDocument(f"part {name!r} is not well-formed XML ({exc})") from exc


# A declaration (and the white space after it) that the UTF-8 body written below agrees with.
_DECLARATION = re.compile(rb"(?:\xef\xbb\xbf)?<\?xml\s[^>]*?\?>\s*")
_OTHER_ENCODING = re.compile(rb"encoding\s*=\s*[\"'](?!utf-?8[\"'])", re.IGNORECASE)


def serialize_xml(root: Any, original: bytes) -> bytes:
    from lxml import etree

    # With the white space the file ends with (lxml drops what follows the root element).
    body = etree.tostring(root, encoding="UTF-8") + original[len(original.rstrip()) :]
    declared = _DECLARATION.match(original)
    if declared is None:
        return body  # UTF-8, as a part without a declaration is read
    if _OTHER_ENCODING.search(declared.group()):
        return _office_declaration(original) + body
    # As it stood, line ending included: a reviewer's diff of the part shows its text only.
    return declared.group() + body


def _office_declaration(original: bytes) -> bytes:
    # The declaration as Office writes it (lxml would quote it with single quotes).
    standalone = ' standalone="yes"' if b'standalone="yes"' in original[:200] else ""
    return f'<?xml version="1.0" encoding="UTF-8"{standalone}?>\r\n'.encode()


class Part:
    """An XML part whose given elements (the paragraphs whose text changed) get their content
    written again from the tree, before any of them is changed: every other byte of the part comes
    back as it was (attribute quotes, references, namespace declarations, the paragraphs nobody
    translated), where a serialization of the whole tree rewrote them. A part in another encoding
    than UTF-8 (Office and ODF write UTF-8) is serialized whole, as it was before."""

    def __init__(self, original: bytes, root: Any, elements: list[Any]) -> None:
        self.original, self.root = original, root
        self.where: dict[Any, xmltext.Span] | None = None
        try:
            text, codec = xmltext.decode(original, root)
            if codecs.lookup(codec).name == "utf-8":
                self.text, self.where = text, xmltext.spans(text, root, elements)
        except BadDocument:
            pass  # serialized whole: the scanner did not find what lxml read

    def write(self) -> bytes:
        from lxml import etree

        if self.where is None or any(span.empty for span in self.where.values()):
            return serialize_xml(self.root, self.original)
        edits, last = [], -1
        for element, span in sorted(self.where.items(), key=lambda found: found[1].start):
            if span.start < last:
                continue  # inside an element written whole (a frame's paragraph in a paragraph)
            serialized = etree.tostring(element, encoding="unicode", with_tail=False)
            start_tag = xmltext.start_tag(serialized)
            content = "" if start_tag.endswith("/>") else serialized[len(start_tag) : serialized.rindex("</")]
            edits.append((span.open_end, span.close, content))
            last = span.end
        return xmltext.splice(self.text, edits).encode("utf-8")


def read_package(data: bytes, kind: str, parts: re.Pattern[str], names: Names, content_type: str) -> Document:
    archive = Archive(data, kind)
    wanted = [name for name in archive.names() if parts.match(name)]
    if kind == "docx" and "word/document.xml" not in wanted:
        raise BadDocument("this zip has no word/document.xml: it is not a .docx document")
    if kind == "pptx" and not any(name.startswith("ppt/") for name in archive.names()):
        raise BadDocument("this zip has no ppt/ folder: it is not a .pptx presentation")
    originals = {name: archive.read(name) for name in wanted}
    roots = {name: parse_xml(original, name) for name, original in originals.items()}
    found = [(name, stretch) for name, root in roots.items() for stretch in stretches(root, _vocabulary(root, names))]
    units = [stretch.unit() for _, stretch in found]

    def write(translations: list[str]) -> bytes:
        # A part whose text did not change keeps its bytes (a reviewer's diff shows translations only).
        todo = [(*where, unit, text) for where, unit, text in zip(found, units, translations, strict=True)]
        todo = [(name, stretch, unit, text) for name, stretch, unit, text in todo if text != unit.text]
        paragraphs: dict[str, list[Any]] = {}
        for name, stretch, _, _ in todo:
            paragraphs.setdefault(name, []).append(stretch.paragraph)
        parts = {name: Part(originals[name], roots[name], elements) for name, elements in paragraphs.items()}
        for _, stretch, unit, translation in todo:
            stretch.write(translation, unit.fmt)
        return archive.write({name: part.write() for name, part in parts.items()})

    return Document(units, write, content_type)


def _vocabulary(root: Any, names: Names) -> Names:
    """`names`, or their Strict counterparts where the part is written in Strict's namespaces."""
    strict = _STRICT[names]
    if root.find(f".//{strict.paragraph}") is not None or root.tag.startswith("{http://purl.oclc.org/ooxml/"):
        return strict
    return names


def read_docx(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_package(data, "docx", _WORD_PARTS, WORD, DOCX_TYPE)


def read_pptx(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    return read_package(data, "pptx", _SLIDE_PARTS, DRAWING, PPTX_TYPE)
