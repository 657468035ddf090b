"""XHTML pages (.xhtml), accepted as XHTML (#49: refused with 415): read as XML declares them (the
declaration's encoding, a byte-order mark; a page that is not well-formed a 400 saying so) and
translated as HTML is, only text changing: the declaration, the doctype, self-closed elements and
what is not to be translated come back as they were."""

from __future__ import annotations

import pytest

from tests.unit.helpers.round_trip import TA, TB, A, B
from translator.documents.formats import read_document, supported
from translator.documents.model import BadDocument

pytestmark = pytest.mark.pure

PAGE = (
    '<?xml version="1.0" encoding="{encoding}"?>\n<!DOCTYPE html>\n'
    '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>T</title></head>'
    "<body><p>{a}<br/>{b}</p><div/><p><code>x = 1<br/>y = 2</code></p></body></html>\n"
)


def translated(data: bytes) -> bytes:
    document = read_document("page.xhtml", data, "fr")
    return document.write([unit.text.replace(A, TA).replace(B, TB) for unit in document.units])


def test_xhtml_is_a_supported_format():
    assert ".xhtml" in supported()


@pytest.mark.parametrize("encoding", ["UTF-8", "ISO-8859-1"])
def test_only_the_text_changes_in_the_pages_declared_encoding(encoding):
    source = PAGE.format(encoding=encoding, a=A, b=B).encode(encoding)
    document = read_document("page.xhtml", source, "fr")
    assert document.content_type.startswith("application/xhtml+xml")
    assert all(unit.fmt == "html" for unit in document.units)
    expected = PAGE.format(encoding=encoding, a=TA, b=TB)
    assert translated(source) == expected.encode(encoding, errors="xmlcharrefreplace")


def test_a_page_that_is_not_well_formed_is_a_400_naming_it():
    with pytest.raises(BadDocument, match=r"this \.xhtml page is not well-formed XML") as refused:
        read_document("page.xhtml", b"<html><p>unclosed</html>", "fr")
    assert refused.value.status == 400
