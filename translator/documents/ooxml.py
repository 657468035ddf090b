"""Office Open XML: Word (.docx) and PowerPoint (.pptx), read directly from their XML parts.

Only the parts holding text are parsed and rewritten (the body, headers, footers, notes; the
slides and their notes); every other zip member, and a part whose text the translation left as it
was, comes back with the same bytes. python-docx and python-pptx were not used: they reach text
through their object model and save the whole package again, where this needs only the runs
(translator/documents/runs.py).
"""

from __future__ import annotations

import re
from typing import Any

from translator.documents.archive import Archive
from translator.documents.model import BadDocument, Document
from translator.documents.runs import Names, stretches

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
WORD = Names(f"{_W}p", f"{_W}r", f"{_W}rPr", f"{_W}t", frozenset({f"{_W}proofErr"}), f"{_W}hyperlink")
DRAWING = Names(f"{_A}p", f"{_A}r", f"{_A}rPr", f"{_A}t")

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
        raise BadDocument(f"file: part {name!r} is not well-formed XML ({exc})") from exc


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


def read_package(data: bytes, kind: str, parts: re.Pattern[str], names: Names, content_type: str) -> Document:
    archive = Archive(data, kind)
    wanted = [name for name in archive.names() if parts.match(name)]
    if kind == "docx" and "word/document.xml" not in wanted:
        raise BadDocument("file: this zip has no word/document.xml: it is not a .docx document")
    if kind == "pptx" and not any(name.startswith("ppt/") for name in archive.names()):
        raise BadDocument("file: this zip has no ppt/ folder: it is not a .pptx presentation")
    originals = {name: archive.read(name) for name in wanted}
    roots = {name: parse_xml(original, name) for name, original in originals.items()}
    found = [(name, stretch) for name, root in roots.items() for stretch in stretches(root, names)]
    units = [stretch.unit() for _, stretch in found]

    def write(translations: list[str]) -> bytes:
        # A part whose text did not change keeps its bytes (a reviewer's diff shows translations only).
        changed = set()
        for (name, stretch), unit, translation in zip(found, units, translations, strict=True):
            if translation != unit.text:
                stretch.write(translation, unit.fmt)
                changed.add(name)
        return archive.write({name: serialize_xml(roots[name], originals[name]) for name in changed})

    return Document(units, write, content_type)


def read_docx(data: bytes) -> Document:
    return read_package(data, "docx", _WORD_PARTS, WORD, DOCX_TYPE)


def read_pptx(data: bytes) -> Document:
    return read_package(data, "pptx", _SLIDE_PARTS, DRAWING, PPTX_TYPE)
