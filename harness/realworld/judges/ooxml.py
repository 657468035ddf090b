"""Word, PowerPoint and Excel (OOXML): the zip package judged part by part (judges/zipped.py), then
read by python-docx, python-pptx and openpyxl as they read the original; a Word paragraph with
words that came back as it went is one a reader did not see."""

from __future__ import annotations

import io
import zipfile
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import xml_root
from harness.realworld.judges.zipped import XmlText, judge_package, package_texts

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"

DOCX = XmlText(
    ("word/document.xml", "word/header*.xml", "word/footer*.xml", "word/footnotes.xml", "word/endnotes.xml"),
    frozenset({_W + "p"}),
    frozenset({_W + "r"}),
    frozenset({_W + "rPr"}),
    frozenset({_W + "t", _W + "proofErr", _W + "lastRenderedPageBreak"}),
)
PPTX = XmlText(
    ("ppt/slides/slide*.xml", "ppt/notesSlides/notesSlide*.xml"),
    frozenset({_A + "p"}),
    frozenset({_A + "r"}),
    frozenset({_A + "rPr"}),
    frozenset({_A + "t"}),
)
XLSX = XmlText(
    ("xl/sharedStrings.xml", "xl/worksheets/sheet*.xml"),
    frozenset({_S + "si", _S + "is"}),
    frozenset({_S + "r"}),
    frozenset({_S + "rPr"}),
    frozenset({_S + "t"}),
)
_WORD_NAMESPACES = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",
)


def _word_paragraphs(root: Any) -> list[str]:
    """The visible text of each Word paragraph (its w:t, Transitional or Strict), as lxml reads it."""
    out = []
    for paragraph in root.iter(*(f"{{{ns}}}p" for ns in _WORD_NAMESPACES)):
        out.append("".join(t.text or "" for t in paragraph.iter(*(f"{{{ns}}}t" for ns in _WORD_NAMESPACES))))
    return out


def _untranslated_paragraphs(a: zipfile.ZipFile, b: zipfile.ZipFile) -> list[str]:
    """Paragraphs with words that came back exactly as they went: a reader that did not see them
    (#49: runs holding a line break or a tab beside their text, a Strict document), while the job
    said done. A translation of words is never the same words here: the fixture answers text it
    does not know with a sentence of its corpus."""
    problems = []
    for name in a.namelist():
        if not DOCX.holds_text(name):
            continue
        try:
            before, after = _word_paragraphs(xml_root(a.read(name))), _word_paragraphs(xml_root(b.read(name)))
        except Exception:  # noqa: BLE001 - a part that is no XML is another judge's finding
            continue
        same = [x for x, y in zip(before, after, strict=False) if x == y and sum(ch.isalpha() for ch in x) >= 2]
        if same:
            problems.append(f"lxml: {name}: {len(same)} paragraphs with words came back untranslated: {same[:3]!r}")
    return problems


def _docx_outline(data: bytes) -> list[Any]:
    """python-docx"""
    import docx

    document = docx.Document(io.BytesIO(data))
    out: list[Any] = [("paragraph", p.style.name if p.style is not None else None) for p in document.paragraphs]
    out += [("hyperlink", h.address, h.fragment) for p in document.paragraphs for h in p.hyperlinks]
    out += [("table", len(t.rows), len(t.columns)) for t in document.tables]
    out += [("inline shapes", len(document.inline_shapes))]
    for section in document.sections:
        for part in (section.header, section.footer):
            out.append(("header/footer", part.is_linked_to_previous, len(part.paragraphs)))
    return out


def _pptx_outline(data: bytes) -> list[Any]:
    """python-pptx"""
    from pptx import Presentation

    presentation = Presentation(io.BytesIO(data))
    out: list[Any] = []
    for number, slide in enumerate(presentation.slides, 1):
        out.append(("slide", number, slide.slide_layout.name, slide.has_notes_slide))
        for shape in slide.shapes:
            paragraphs = len(shape.text_frame.paragraphs) if shape.has_text_frame else None
            out.append(("shape", shape.shape_id, shape.name, str(shape.shape_type), paragraphs))
    return out


def _xlsx_outline(data: bytes) -> list[Any]:
    """openpyxl"""
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data))
    out: list[Any] = [("sheets", book.sheetnames)]
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                if cell.value is None:
                    continue
                value = bool(cell.value) if cell.data_type == "s" else cell.value
                out.append((sheet.title, cell.coordinate, cell.data_type, value))
    return out


def judge_docx(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    return judge_package(original, answer, DOCX, _docx_outline, _untranslated_paragraphs)


def judge_pptx(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    return judge_package(original, answer, PPTX, _pptx_outline)


def judge_xlsx(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    return judge_package(original, answer, XLSX, _xlsx_outline)


texts_docx, texts_pptx, texts_xlsx = package_texts(DOCX), package_texts(PPTX), package_texts(XLSX)
