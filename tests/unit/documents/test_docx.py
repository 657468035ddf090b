"""Word documents translated whole (#49): a run holding a line break, a tab, a no-break hyphen, a
drawing or a footnote reference beside its text has that text translated and the rest kept where
it stood; Word's rendering hints inside a run do not cut its sentence; a Strict OOXML document is
read as a Transitional one is. (The published files these come from are in the real-world tier:
PyDocX's shift_enter, include_tabs and no_break_hyphen, mammoth's strict-format.)"""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from harness import documents
from translator.documents.formats import read_document

pytestmark = pytest.mark.pure

STRICT = "http://purl.oclc.org/ooxml/wordprocessingml/main"


def translated(data: bytes) -> tuple[list[str], str]:
    """The units the reader found, and the body written back with each unit's text in capitals."""
    document = read_document("a.docx", data, "fr")
    out = document.write([unit.text.upper() for unit in document.units])
    body = zipfile.ZipFile(io.BytesIO(out)).read("word/document.xml").decode()
    return [unit.text for unit in document.units], body[body.index("<w:body>") : body.index("<w:sectPr")]


@pytest.mark.parametrize(
    ("inside", "kept"),
    [
        ("<w:br/>", "<w:br/>"),
        ('<w:br w:type="page"/>', '<w:br w:type="page"/>'),
        ("<w:tab/>", "<w:tab/>"),
        ("<w:noBreakHyphen/>", "<w:noBreakHyphen/>"),
        ('<w:footnoteReference w:id="1"/>', '<w:footnoteReference w:id="1"/>'),
        ("<w:drawing><wp:inline xmlns:wp='urn:x'/></w:drawing>", "<w:drawing>"),
    ],
    ids=["line break", "page break", "tab", "no-break hyphen", "footnote reference", "drawing"],
)
def test_text_beside_something_else_in_a_run_is_translated_and_the_rest_kept_between(inside, kept):
    run = f'<w:rPr><w:i/></w:rPr><w:t>first part</w:t>{inside}<w:t xml:space="preserve"> second</w:t>'
    data = documents.docx_body(f"<w:p><w:r>{run}</w:r></w:p>")
    units, body = translated(data)
    assert units == ["first part", " second"]
    # Each piece a run of the same properties, in the order they stood.
    runs = re.findall(r"<w:r>(.*?)</w:r>", body)
    assert len(runs) == 3 and all(run.startswith("<w:rPr><w:i/></w:rPr>") for run in runs), body
    assert "FIRST PART" in runs[0] and kept in runs[1] and " SECOND" in runs[2]


def test_a_run_of_text_runs_and_breaks_keeps_consecutive_text_together():
    data = documents.docx_body(
        "<w:p><w:r><w:t>a b</w:t><w:t xml:space='preserve'> c</w:t><w:br/><w:t>d</w:t></w:r></w:p>"
    )
    units, body = translated(data)
    assert units == ["a b c", "d"]
    assert body.count("<w:br/>") == 1 and body.index("A B C") < body.index("<w:br/>") < body.index(">D<")


def test_a_rendering_hint_inside_a_run_does_not_cut_its_sentence():
    data = documents.docx_body(
        "<w:p><w:r><w:t>Page break here</w:t><w:lastRenderedPageBreak/><w:t> and more.</w:t></w:r></w:p>"
    )
    units, body = translated(data)
    assert units == ["Page break here and more."]
    assert "lastRenderedPageBreak" not in body


def test_a_run_without_text_is_left_whole():
    data = documents.docx_body("<w:p><w:r><w:t>Words</w:t></w:r><w:r><w:tab/><w:br/></w:r></w:p>")
    units, body = translated(data)
    assert units == ["Words"] and "<w:r><w:tab/><w:br/></w:r>" in body


def test_a_paragraph_nobody_translated_keeps_its_bytes():
    # Splitting happens as the file is read; a paragraph whose text did not change is not written.
    untouched = "<w:p><w:r><w:t>same</w:t><w:br/><w:t>words</w:t></w:r></w:p>"
    data = documents.docx_body(untouched)
    document = read_document("a.docx", data, "fr")
    out = document.write([unit.text for unit in document.units])
    assert zipfile.ZipFile(io.BytesIO(out)).read("word/document.xml") == zipfile.ZipFile(io.BytesIO(data)).read(
        "word/document.xml"
    )


def test_a_strict_document_is_read_as_a_transitional_one():
    units, body = translated(documents.docx_body("<w:p><w:r><w:t>Test</w:t></w:r></w:p>", STRICT))
    assert units == ["Test"] and "<w:t>TEST</w:t>" in body
