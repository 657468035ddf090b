"""The XML parts of Office and ODF files where their text is translated (#39): only the content of
the paragraphs whose text changed is written again; every other byte of the part (attribute
quotes, `&apos;` and character references, namespace declarations, line breaks, paragraphs nobody
translated) comes back as it was, where lxml re-serialized the whole part."""

from __future__ import annotations

import pytest

from harness import documents
from tests.unit.helpers.round_trip import TA, TB, TC, A, B, C, members, translate

pytestmark = pytest.mark.pure

W = (
    "xmlns:mc='http://schemas.openxmlformats.org/markup-compatibility/2006' "
    "xmlns:w='http://schemas.openxmlformats.org/wordprocessingml/2006/main' mc:Ignorable='w14'"
)
UNTOUCHED_W = "<w:p w:rsidR='00A1'><w:r><w:t>Caf&#233; d&apos;Anne &amp; Cie</w:t></w:r></w:p>\r\n"
DOCX = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\r\n"
    f"<w:document {W}><w:body>\r\n{UNTOUCHED_W}"
    f"<w:p w:rsidR='00A2'><w:pPr><w:jc w:val='center'/></w:pPr><w:r><w:t>{A} </w:t></w:r>"
    f"<w:r><w:rPr><w:b/></w:rPr><w:t>{B}</w:t></w:r><w:bookmarkStart w:id='0' w:name='x'/></w:p>\r\n"
    f"{UNTOUCHED_W}<w:sectPr w:rsidR='00A1'><w:pgSz w:w='12240' w:h='15840'/></w:sectPr></w:body></w:document>"
)
ODF = (
    "xmlns:office='urn:oasis:names:tc:opendocument:xmlns:office:1.0' "
    "xmlns:text='urn:oasis:names:tc:opendocument:xmlns:text:1.0' office:version='1.3'"
)
UNTOUCHED_ODF = "<text:p text:style-name='P1'>L&apos;&#233;t&#233; &amp; co</text:p>\n"
ODT = (
    f"<?xml version='1.0' encoding='UTF-8'?>\n<office:document-content {ODF}><office:body><office:text>\n"
    f"{UNTOUCHED_ODF}<text:p text:style-name='P2'>{A} <text:span text:style-name='T1'>{B}</text:span></text:p>\n"
    f"{UNTOUCHED_ODF}</office:text></office:body></office:document-content>\n"
)
SST = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\r\n"
    "<sst xmlns='http://schemas.openxmlformats.org/spreadsheetml/2006/main' count='4' uniqueCount='4'>"
    f"<si><t>{A}</t></si><si><t>Caf&#233; d&apos;Anne</t></si>"
    f"<si><r><rPr><b/></rPr><t>{B}</t></r><r><t xml:space='preserve'> {C}</t></r></si>"
    "<si><r><rPr><b/></rPr><t>Gras</t></r><r><t xml:space='preserve'> d&apos;&#233;t&#233;</t></r></si></sst>"
)


def _around(before: str, after: str, opening: str, closing: str) -> str:
    """`after`, having checked that it is `before` but for the content between `opening` (the
    translated paragraph's start tag) and the `closing` after it."""
    start = before.index(opening) + len(opening)
    end = before.index(closing, start)
    assert after.startswith(before[:start]), "the part up to the paragraph changed"
    tail = before[end:]
    assert after.endswith(tail), "the part after the paragraph changed"
    return after[start : len(after) - len(tail)]


def test_word_only_the_translated_paragraph_changes():
    source = documents.package({"word/document.xml": DOCX})
    out = members(translate("a.docx", source))["word/document.xml"].decode()
    content = _around(DOCX, out, "<w:p w:rsidR='00A2'>", "</w:p>")
    # The translated paragraph's own content is written again, its properties and marks kept.
    assert content == (
        f'<w:pPr><w:jc w:val="center"/></w:pPr><w:r><w:t xml:space="preserve">{TA} </w:t></w:r>'
        f'<w:r><w:rPr><w:b/></w:rPr><w:t>{TB}</w:t></w:r><w:bookmarkStart w:id="0" w:name="x"/>'
    )
    assert out.count(UNTOUCHED_W) == 2


def test_odf_only_the_translated_paragraph_changes():
    source = documents.package({"mimetype": "application/vnd.oasis.opendocument.text", "content.xml": ODT})
    out = members(translate("a.odt", source))["content.xml"].decode()
    content = _around(ODT, out, "<text:p text:style-name='P2'>", "</text:p>")
    assert content == f'{TA} <text:span text:style-name="T1">{TB}</text:span>'
    assert out.count(UNTOUCHED_ODF) == 2


def test_excel_only_the_translated_strings_change():
    source = documents.package({"xl/sharedStrings.xml": SST})
    out = members(translate("a.xlsx", source))["xl/sharedStrings.xml"].decode()
    expected = SST.replace(f"<t>{A}</t>", f"<t>{TA}</t>").replace(
        f"<si><r><rPr><b/></rPr><t>{B}</t></r><r><t xml:space='preserve'> {C}</t></r></si>",
        f'<si><r><rPr><b/></rPr><t>{TB}</t></r><r><t xml:space="preserve"> {TC}</t></r></si>',
    )
    assert out == expected


def test_odf_a_paragraph_in_a_frame_in_a_paragraph_keeps_its_translation():
    draw = "xmlns:draw='urn:oasis:names:tc:opendocument:xmlns:drawing:1.0'"
    inner = f"<draw:frame draw:name='f'><draw:text-box><text:p>{B}</text:p></draw:text-box></draw:frame>"
    content = f"<office:document-content {ODF} {draw}><office:body><office:text><text:p>{A} {inner}</text:p>"
    content += "</office:text></office:body></office:document-content>"
    source = documents.package({"mimetype": "application/vnd.oasis.opendocument.text", "content.xml": content})
    out = members(translate("a.odt", source))["content.xml"].decode()
    assert f'<text:p>{TA} <draw:frame draw:name="f"><draw:text-box><text:p>{TB}</text:p>' in out
