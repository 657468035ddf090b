"""An EPUB's chapters are the XHTML documents its package document lists, whatever their names
(Feedbooks' books name them `OPS/main0.xml`), not only members named `.xhtml`/`.html`."""

from __future__ import annotations

import io
import zipfile

import pytest

from harness import documents
from translator.documents.formats import read_document

pytestmark = pytest.mark.pure

CONTAINER = (
    '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
    '<rootfiles><rootfile full-path="OPS/fb.opf" media-type="application/oebps-package+xml"/></rootfiles></container>'
)
PACKAGE = (
    '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0"><manifest>'
    '<item id="main0" href="main0.xml" media-type="application/xhtml+xml"/>'
    '<item id="notes" href="text/notes%20page.xml#top" media-type="application/xhtml+xml"/>'
    '<item id="ncx" href="fb.ncx" media-type="application/x-dtbncx+xml"/>'
    "</manifest></package>"
)


def chapter(body: str) -> str:
    return (
        f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><body>{body}</body></html>'
    )


def test_chapters_listed_in_the_manifest_are_translated_whatever_their_names():
    book = documents.package(
        {
            "mimetype": "application/epub+zip",
            "META-INF/container.xml": CONTAINER,
            "OPS/fb.opf": PACKAGE,
            "OPS/main0.xml": chapter("<p>First chapter.</p>"),
            "OPS/text/notes page.xml": chapter("<p>A note.</p>"),
            "OPS/fb.ncx": "<ncx><text>Table of contents</text></ncx>",
        }
    )
    document = read_document("book.epub", book)
    assert [unit.text for unit in document.units] == [chapter("<p>First chapter.</p>"), chapter("<p>A note.</p>")]
    written = zipfile.ZipFile(
        io.BytesIO(document.write([u.text.replace("First chapter", "Premier chapitre") for u in document.units]))
    )
    assert written.read("OPS/main0.xml").decode() == chapter("<p>Premier chapitre.</p>")
    assert written.read("OPS/fb.ncx") == b"<ncx><text>Table of contents</text></ncx>"


def test_a_package_document_that_cannot_be_read_leaves_the_chapters_named_as_html():
    book = documents.package(
        {
            "META-INF/container.xml": "<container",
            "OEBPS/ch1.xhtml": chapter("<p>Text.</p>"),
            "OEBPS/other.xml": chapter("<p>Not listed.</p>"),
        }
    )
    assert [unit.text for unit in read_document("book.epub", book).units] == [chapter("<p>Text.</p>")]
