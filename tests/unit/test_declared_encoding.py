"""The `encoding` field of a document upload (#42): a text file read in the encoding the client
names, where detection cannot tell (a line or two; text that reads as cleanly in two encodings),
and written back in it; a name that is no text encoding, bytes it does not read, or the field on
a format that declares its own encoding, a 400 on `encoding` naming the problem."""

from __future__ import annotations

import codecs

import pytest

from harness import documents
from translator.contract.errors import InvalidRequest
from translator.documents.formats import read_document
from translator.documents.model import BadDocument, named_encoding

pytestmark = pytest.mark.pure

# Too short for detection to tell (tests/e2e/test_hostile_files.py's refusal): a name and two words.
SHORT = "Caf\xe9 cr\xe8me, s'il vous pla\xeet.\n"
POLISH = "Zażółć gęślą jaźń.\n"


def test_a_short_file_detection_refuses_is_read_in_the_encoding_named():
    data = SHORT.encode("cp1252")
    with pytest.raises(BadDocument, match="no other encoding explains it with confidence"):
        read_document("notes.txt", data, "de")
    document = read_document("notes.txt", data, "de", encoding="Windows-1252")
    assert [unit.text for unit in document.units] == [SHORT.strip()]
    assert document.write(["Caf\xe9 cr\xe8me, bitte."]) == "Caf\xe9 cr\xe8me, bitte.\n".encode("cp1252")
    assert document.content_type == "text/plain; charset=windows-1252"


@pytest.mark.parametrize(
    ("label", "codec", "charset"),
    [
        ("ISO-8859-2", "iso8859_2", "iso-8859-2"),
        ("latin2", "iso8859_2", "iso-8859-2"),
        ("cp1250", "cp1250", "windows-1250"),
        ("latin-1", "iso8859_1", "iso-8859-1"),
        ("sjis", "shift_jis", "shift_jis"),
        ("euc-jp", "euc_jp", "euc-jp"),
        ("mac-roman", "mac_roman", "mac-roman"),
        ("Shift_JIS", "shift_jis", "shift_jis"),
        ("utf-16", "utf_16_le", "utf-16le"),
        ("UTF-16BE", "utf_16_be", "utf-16be"),
        ("utf-8-sig", "utf_8", "utf-8"),
    ],
)
def test_any_label_of_a_text_encoding_is_taken(label, codec, charset):
    assert named_encoding(label)[:2] == (codec, charset)


@pytest.mark.parametrize(
    ("label", "problem"),
    [("klingon-8", "'klingon-8' is not a text encoding"), ("rot13", "'rot13' is not a text encoding"), ("zlib", "")],
)
def test_a_name_that_is_no_text_encoding_is_refused_on_the_field(label, problem):
    with pytest.raises(InvalidRequest, match=f"encoding: {problem}") as refused:
        read_document("notes.txt", b"Hello.\n", "de", encoding=label)
    assert refused.value.detail == {"field": "encoding"}


def test_polish_in_iso_8859_2_is_read_as_named_and_written_back_in_it():
    data = POLISH.encode("iso8859_2")
    document = read_document("a.srt", b"1\n00:00:01,000 --> 00:00:02,000\n" + data, "de", encoding="iso-8859-2")
    assert [unit.text for unit in document.units] == [POLISH.strip()]
    assert document.write([POLISH.strip()]).endswith(data)
    assert document.content_type == "application/x-subrip; charset=iso-8859-2"


def test_bytes_the_named_encoding_does_not_read_are_a_400_naming_the_byte():
    with pytest.raises(InvalidRequest, match=r"^encoding: the text file is not utf-8 text \(invalid .* at byte 3\)"):
        read_document("notes.txt", SHORT.encode("cp1252"), "de", encoding="utf-8")
    with pytest.raises(InvalidRequest, match=r"read as koi8-r, the Markdown file has a control character"):
        read_document("a.md", b"Hello\x01 there.\n", "de", encoding="koi8-r")


def test_utf16_named_without_a_byte_order_mark_is_little_endian_and_stays_so():
    data = "Hello there.\n".encode("utf-16-le")
    document = read_document("notes.txt", data, "de", encoding="utf-16")
    assert [unit.text for unit in document.units] == ["Hello there."]
    assert document.write(["Hallo."]) == "Hallo.\n".encode("utf-16-le")


def test_a_byte_order_mark_is_taken_before_the_field_as_browsers_take_it():
    data = codecs.BOM_UTF8 + "Caf\xe9.\n".encode()
    document = read_document("notes.txt", data, "de", encoding="windows-1252")
    assert [unit.text for unit in document.units] == ["Caf\xe9."]
    assert document.write(["Kaff\xe9e."]) == codecs.BOM_UTF8 + "Kaff\xe9e.\n".encode()


def test_the_field_is_taken_before_an_html_meta_charset():
    data = '<meta charset="iso-8859-1"><p>Za\u017c\xf3\u0142\u0107.</p>'.encode("iso8859_2")
    document = read_document("a.html", data, "de", encoding="iso-8859-2")
    assert document.units[0].text.endswith("Za\u017c\xf3\u0142\u0107.</p>")


@pytest.mark.parametrize(
    ("name", "data"),
    [("a.docx", documents.docx([[("Hello.", False)]])), ("a.po", b'msgid ""\nmsgstr ""\n'), ("a.json", b"{}")],
)
def test_the_field_on_a_format_that_declares_its_own_encoding_is_refused(name, data):
    with pytest.raises(InvalidRequest, match=r"^encoding: a \.\w+ file is read in the encoding it declares") as refused:
        read_document(name, data, "de", encoding="windows-1252")
    assert ".txt, .srt, .vtt, .html, .htm, .md" in refused.value.message
    assert refused.value.detail == {"field": "encoding"}
