"""Worksheets' inline strings (`<c t="inlineStr"><is>`), which exporters (pandas' openpyxl-less
writers, SheetJS, report generators) write instead of shared strings: translated as shared strings
are, plain or rich; and a workbook with no text says so in its job."""

from __future__ import annotations

import io
import zipfile

import pytest

from harness import documents
from translator.config import Documents
from translator.documents import jobs
from translator.documents.formats import read_document

pytestmark = pytest.mark.pure

NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'


def sheet(cells: str) -> str:
    return f"{DECLARATION}<worksheet {NS}><sheetData><row r='1'>{cells}</row></sheetData></worksheet>"


def workbook(sheets: dict[str, str], shared: str | None = None) -> bytes:
    members = {"[Content_Types].xml": "<Types/>", "xl/workbook.xml": "<w/>"}
    if shared is not None:
        members["xl/sharedStrings.xml"] = f"{DECLARATION}<sst {NS}>{shared}</sst>"
    members.update({f"xl/worksheets/{name}.xml": xml for name, xml in sheets.items()})
    return documents.package(members)


def members(data: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return {name: archive.read(name) for name in archive.namelist()}


def test_inline_strings_plain_and_rich_are_translated_where_they_stand():
    cells = (
        "<c r='A1' t='inlineStr'><is><t>Hello world</t></is></c>"
        "<c r='B1'><v>42</v></c>"
        "<c r='C1' t='inlineStr'><is><r><t>Bold </t></r><r><rPr><b/></rPr><t>words</t></r></is></c>"
        "<c r='D1' t='str'><f>A1&amp;\"!\"</f><v>Hello world!</v></c>"
    )
    data = workbook({"sheet1": sheet(cells), "sheet2": sheet("<c r='A1'><v>1</v></c>")})
    document = read_document("a.xlsx", data)
    assert [unit.text for unit in document.units] == ["Hello world", 'Bold <span data-r="1">words</span>']
    out = members(document.write(["Bonjour le monde", 'Gras <span data-r="1">mots</span>']))
    assert out["xl/worksheets/sheet1.xml"].decode() == sheet(
        "<c r='A1' t='inlineStr'><is><t>Bonjour le monde</t></is></c>"
        "<c r='B1'><v>42</v></c>"
        "<c r='C1' t='inlineStr'><is>"
        '<r><t xml:space="preserve">Gras </t></r><r><rPr><b/></rPr><t>mots</t></r>'
        "</is></c>"
        "<c r='D1' t='str'><f>A1&amp;\"!\"</f><v>Hello world!</v></c>"
    )
    # A sheet without inline strings, and every other member, byte for byte.
    assert {name: body for name, body in out.items() if name != "xl/worksheets/sheet1.xml"} == {
        name: body for name, body in members(data).items() if name != "xl/worksheets/sheet1.xml"
    }


def test_shared_and_inline_strings_together_and_phonetic_runs_left_alone():
    shared = "<si><t>Shared text</t><rPh sb='0' eb='1'><t>フリガナ</t></rPh></si>"
    cells = "<c r='A1' t='s'><v>0</v></c><c r='B1' t='inlineStr'><is><t>Inline text</t></is></c>"
    document = read_document("a.xlsx", workbook({"sheet1": sheet(cells)}, shared))
    assert [unit.text for unit in document.units] == ["Shared text", "Inline text"]
    out = members(document.write(["Texte partagé", "Texte en ligne"]))
    assert (
        "<si><t>Texte partagé</t><rPh sb='0' eb='1'><t>フリガナ</t></rPh></si>" in out["xl/sharedStrings.xml"].decode()
    )
    assert "<is><t>Texte en ligne</t></is>" in out["xl/worksheets/sheet1.xml"].decode()


def test_a_line_break_in_rich_text_stays_a_line_break():
    cells = "<c r='A1' t='inlineStr'><is><r><t>First line\nsecond </t></r><r><rPr><i/></rPr><t>line</t></r></is></c>"
    document = read_document("a.xlsx", workbook({"sheet1": sheet(cells)}))
    assert [unit.text for unit in document.units] == ['First line<br>second <span data-r="1">line</span>']
    out = members(document.write(['Première ligne<br>deuxième <span data-r="1">ligne</span>']))
    assert '<t xml:space="preserve">Première ligne\ndeuxième </t>' in out["xl/worksheets/sheet1.xml"].decode()


def test_a_workbook_without_text_comes_back_as_it_was_and_its_job_says_why(tmp_path):
    data = workbook({"sheet1": sheet("<c r='A1'><v>3.14</v></c>")})
    document = read_document("numbers.xlsx", data)
    assert document.units == [] and document.write([]) == data
    store = jobs.JobStore(Documents(folder=str(tmp_path)))
    empty = store.create("numbers.xlsx", "en", "fr", 0)
    assert jobs.public(empty)["warning"] == "nothing to translate was found in this file: it comes back as it was"
    assert "warning" not in jobs.public(store.create("words.xlsx", "en", "fr", 3))
