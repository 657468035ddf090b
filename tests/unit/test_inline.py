"""Which catalog strings go down the HTML path (translator/text/inline.py, #49): those holding
markup that read the same as HTML; a bare `&` or a `<` of comparison keeps a string text."""

from __future__ import annotations

import pytest

from translator.documents.formats import read_document
from translator.text.inline import Piece, analyse, unit_format

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('Please confirm that <a href="mailto:%(email)s">%(email)s</a> is yours.', "html"),
        ("<b>'{title}' was locked</b>", "html"),
        ("First line<br/>second line", "html"),
        ("Caf&eacute; <i>ouvert</i>", "html"),
        ('<a href="?a=1&b=2">a link</a>', "html"),
        ("Tom & Jerry <b>now</b>", "text"),
        ("when a < b and <b>bold</b>", "text"),
        ("1 > 0 <br>", "text"),
        ("No markup at all.", "text"),
        ("An email <me@example.org>", "text"),
        ("Usage: %(program)s <filename> [-v]", "text"),
    ],
)
def test_a_string_is_html_only_where_reading_it_as_html_changes_nothing_but_the_tags(text, fmt):
    assert unit_format(text) == fmt


def test_a_readers_values_are_analysed_once_into_pieces_and_folded_back():
    values = [
        "<b>{count, plural, one {# file} other {# files}}</b> left",
        "Tom & Jerry",
        "{n, select, a {x} other {y}}",
    ]
    analysed = analyse(values)
    # An ICU message is its texts (each case's, and the one around its arguments); each piece is
    # HTML or text on its own.
    assert analysed.pieces == [
        Piece("<b>{count}</b> left", "html"),
        Piece("{_} file", "text"),
        Piece("{_} files", "text"),
        Piece("Tom & Jerry", "text"),
        Piece("{n}", "text"),
        Piece("x", "text"),
        Piece("y", "text"),
    ]
    translated = ["<b>{count}</b> restant", "{_} fichier", "{_} fichiers", "Tom et Jerry", "{n}", "X", "Y"]
    assert analysed.fold(translated) == [
        "<b>{count, plural, one {# fichier} other {# fichiers}}</b> restant",
        "Tom et Jerry",
        "{n, select, a {X} other {Y}}",
    ]
    # An argument lost: that value is None, to be kept as it was; the others are placed.
    assert analysed.fold(["<b>restant</b>", *translated[1:]])[:2] == [None, "Tom et Jerry"]
    # A format whose strings are not ICU messages (gettext's in JSON): each value one piece.
    assert analyse(["{n, select, a {x} other {y}}"], messages=False).pieces == [
        Piece("{n, select, a {x} other {y}}", "text")
    ]


PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

#, python-format
msgid "Please confirm that <a href=\\"mailto:%(email)s\\">%(email)s</a> is yours."
msgstr ""

msgid "Tom & Jerry"
msgstr ""
"""


@pytest.mark.parametrize(("name", "data"), [("django.po", PO.encode())])
def test_catalog_strings_with_markup_are_html_units(name, data):
    document = read_document(name, data, "fr")
    assert [(unit.text, unit.fmt) for unit in document.units] == [
        ('Please confirm that <a href="mailto:%(email)s">%(email)s</a> is yours.', "html"),
        ("Tom & Jerry", "text"),
    ]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("en.json", b'{"locked": "<b>\'{title}\' was locked</b>", "plain": "Saved"}'),
        ("en.yml", b"en:\n  locked: \"<b>'{title}' was locked</b>\"\n  plain: Saved\n"),
    ],
)
def test_json_and_yaml_values_with_markup_are_html_units(name, data):
    assert [unit.fmt for unit in read_document(name, data, "fr").units] == ["html", "text"]
