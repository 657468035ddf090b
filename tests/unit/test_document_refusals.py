"""A reader's refusal as the document routes answer it: the readers say what is wrong with the
file or with the encoding its client named; translator/api/documents.py names the upload's field
(`file: `, `encoding: `) in one place, with the bodies clients have always read."""

from __future__ import annotations

import pytest

from harness import documents
from translator.api.documents import read_file
from translator.api.endpoints import DEEPL, NATIVE
from translator.contract.errors import TranslationError
from translator.documents import model

pytestmark = pytest.mark.pure


def refusal(name: str, data: bytes, encoding: str | None = None) -> TranslationError:
    with pytest.raises(TranslationError) as refused:
        read_file(name, data, "fr", encoding)
    return refused.value


def test_a_file_that_cannot_be_read_is_named_as_the_file_without_a_field():
    refused = refusal("a.docx", b"not a zip")
    assert refused.status == 400 and isinstance(refused, model.BadDocument)
    assert refused.body() == {
        "error": "file: a docx file must be a zip archive, and this one cannot be read (File is not a zip file)"
    }
    # As every other file that cannot be read: an .xhtml page that is not well-formed gave `field` alone.
    assert refusal("a.xhtml", b"<html><p>unclosed</html>").body() == {
        "error": "file: this .xhtml page is not well-formed XML (Opening and ending tag mismatch: p line 1 and html, "
        "line 1, column 25 (<string>, line 1))"
    }


def test_a_format_not_taken_is_a_415_on_the_file():
    refused = refusal("a.pdf", b"%PDF-1.7")
    assert refused.status == 415 and isinstance(refused, model.UnsupportedDocument)
    assert refused.body() == {
        "error": "file: PDF is not translated (out of scope): convert it to .docx or .txt first",
        "field": "file",
    }
    assert refusal("a.bin", b"x").body()["error"].startswith("file: .bin is not a supported format; supported: ")
    # DeepL's upload rewords it as a file it does not take: the field's name stays in its message.
    assert DEEPL.body(refused.body()) == {"message": refused.message, "error": refused.message}


@pytest.mark.parametrize(
    ("name", "data", "encoding", "message"),
    [
        ("a.txt", b"Hello.\n", "klingon-8", "encoding: 'klingon-8' is not a text encoding (examples: "),
        ("a.txt", "caf\xe9 cr\xe8me\n".encode("cp1252"), "utf-8", "encoding: the text file is not utf-8 text ("),
        ("a.json", b"{}", "latin-1", "encoding: a .json file is read in the encoding it declares itself; the field"),
    ],
)
def test_an_encoding_the_client_named_is_refused_on_its_field(name, data, encoding, message):
    refused = refusal(name, data, encoding)
    assert refused.status == 400 and refused.message.startswith(message)
    assert NATIVE.body(refused.body()) == {"error": refused.message, "field": "encoding"}


def test_a_file_past_a_bound_is_a_413_naming_the_file(monkeypatch):
    monkeypatch.setattr(model, "MAX_UNITS", 1)
    monkeypatch.setattr("translator.documents.jobs.MAX_UNITS", 1)
    refused = refusal("a.txt", b"One.\n\nTwo.\n")
    assert refused.status == 413
    assert refused.body() == {"error": "file: text units exceeds the limit of 1 (got 2)", "limit": 1}
    monkeypatch.setattr("translator.documents.archive.MAX_UNCOMPRESSED_BYTES", 100_000)
    bomb = documents.bomb(documents.docx([[("Hello.", False)]]), "word/document.xml", 1_000_000)
    assert refusal("a.docx", bomb).body() == {
        "error": "file: uncompressed bytes exceeds the limit of 100000",
        "limit": 100_000,
    }
